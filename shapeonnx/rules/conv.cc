// Convolutions: Conv, DeformConv, ConvTranspose, Col2Im.
#include <limits>
#include <string>

#include "shapeonnx/rules/rules.h"
#include "shapeonnx/rules/util.h"

namespace shapeonnx {
namespace {

using common::Dims;
using common::Result;
using common::Status;

// Shared checks of Conv and ConvTranspose: X is [N, C, spatial...] and W has the same rank.
Status check_conv_ranks(const InferContext& ctx, const Dims& x, const Dims& w) {
  if (x.size() < 3) return ctx.error("input must have rank >= 3 ([N, C, spatial...])");
  if (w.size() != x.size()) {
    return ctx.error("weight rank " + std::to_string(w.size()) + " differs from input rank " +
                     std::to_string(x.size()));
  }
  if (ctx.node().attr_int("group", 1) < 1) return ctx.error("group must be positive");
  return {};
}

}  // namespace

// Conv(X [N, C, D...], W [M, C / group, k...]) -> [N, M, out...], out per window_output.
Result<Dims> conv_output_dims(const InferContext& ctx, const Dims& x, const Dims& w) {
  RETURN_IF_ERROR(check_conv_ranks(ctx, x, w));
  const int64_t group = ctx.node().attr_int("group", 1);
  if (x[1] != w[1] * group) {
    return ctx.error("input channels " + std::to_string(x[1]) + " != weight channels " +
                     std::to_string(w[1]) + " * group " + std::to_string(group));
  }
  const size_t spatial = x.size() - 2;
  ASSIGN_OR_RETURN(Window win, read_window(ctx, spatial, Dims(w.begin() + 2, w.end())));
  Dims out = {x[0], w[0]};
  for (size_t i = 0; i < spatial; ++i) {
    ASSIGN_OR_RETURN(int64_t d, window_output(ctx, win, i, x[i + 2]));
    out.push_back(d);
  }
  return out;
}

namespace {

Status conv_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(Dims out, conv_output_dims(ctx, ctx.shape(0), ctx.shape(1)));
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// One spatial dim of ConvTranspose without output_shape:
// out = stride * (in - 1) + output_padding + ((k - 1) * dilation + 1) - pad_begin - pad_end;
// SAME_UPPER / SAME_LOWER: out = in * stride (the padding absorbs the rest, as the spec says).
// Computed in 128 bits: a result past int64 is reported as -1 (no valid dim).
int64_t conv_transpose_dim(const Window& w, const std::vector<int64_t>& output_padding, size_t i,
                           int64_t in) {
  using Wide = __int128;
  Wide out = Wide{in} * w.strides[i];
  if (!w.same()) {
    const Wide pads = w.valid() ? 0 : Wide{w.pad_begin[i]} + w.pad_end[i];
    const Wide effective = Wide{w.kernel[i] - 1} * w.dilations[i] + 1;
    out = Wide{w.strides[i]} * (Wide{in} - 1) + output_padding[i] + effective - pads;
  }
  return out > std::numeric_limits<int64_t>::max() ? -1 : static_cast<int64_t>(out);
}

// ConvTranspose(X [N, C, D...], W [C, M / group, k...]) -> [N, M, out...]; `output_shape` (the
// spatial dims, possibly preceded by N and C) wins over the formula.
Status conv_transpose_rule(InferContext& ctx) {
  const Dims& x = ctx.shape(0);
  const Dims& w = ctx.shape(1);
  RETURN_IF_ERROR(check_conv_ranks(ctx, x, w));
  const common::Node& node = ctx.node();
  const int64_t group = node.attr_int("group", 1);
  if (x[1] != w[0]) {
    return ctx.error("input channels " + std::to_string(x[1]) + " != weight dim 0 " +
                     std::to_string(w[0]));
  }
  const size_t spatial = x.size() - 2;
  ASSIGN_OR_RETURN(Window win, read_window(ctx, spatial, Dims(w.begin() + 2, w.end())));
  std::vector<int64_t> output_padding =
      node.attr_ints("output_padding", std::vector<int64_t>(spatial, 0));
  std::vector<int64_t> output_shape = node.attr_ints("output_shape");
  if (output_padding.size() != spatial) return ctx.error("output_padding length != spatial dims");
  if (!output_shape.empty() && output_shape.size() < spatial) {
    return ctx.error("output_shape has fewer values than spatial dims");
  }
  ASSIGN_OR_RETURN(int64_t channels, checked_mul(ctx, w[1], group));
  Dims out = {x[0], channels};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t d = output_shape.empty() ? conv_transpose_dim(win, output_padding, i, x[i + 2])
                                     : output_shape[output_shape.size() - spatial + i];
    if (d < 0)
      return ctx.error("ConvTranspose output dim " + std::to_string(i) +
                       " is negative or past int64");
    out.push_back(d);
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// Col2Im(input [N, C * prod(block), L], image_shape, block_shape) -> [N, C, image_shape...],
// where L must be the number of blocks the window fits in the padded image.
Status col2im_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(std::vector<int64_t> image, known_ints(ctx, 1, "Col2Im image_shape"));
  ASSIGN_OR_RETURN(std::vector<int64_t> block, known_ints(ctx, 2, "Col2Im block_shape"));
  const Dims& x = ctx.shape(0);
  if (image.size() != block.size() || image.empty() || x.size() != 3) {
    return ctx.error(
        "Col2Im needs input [N, C * prod(block), L] and image and block shapes "
        "of one length");
  }
  ASSIGN_OR_RETURN(Window win, read_window(ctx, image.size(), block));
  int64_t blocks = 1, kernel = 1;
  for (size_t i = 0; i < image.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t d, window_output(ctx, win, i, image[i]));
    ASSIGN_OR_RETURN(blocks, checked_mul(ctx, blocks, d));
    ASSIGN_OR_RETURN(kernel, checked_mul(ctx, kernel, block[i]));
  }
  if (kernel <= 0 || x[1] % kernel != 0 || x[2] != blocks) {
    return ctx.error("Col2Im input " + std::to_string(x[1]) + " x " + std::to_string(x[2]) +
                     " does not hold C * " + std::to_string(kernel) + " x " +
                     std::to_string(blocks) + " blocks");
  }
  Dims out = {x[0], x[1] / kernel};
  out.insert(out.end(), image.begin(), image.end());
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

}  // namespace

void register_conv_rules(ShapeRegistry& table) {
  table.add("Conv", &conv_rule);
  table.add("DeformConv", &conv_rule);
  table.add("Col2Im", &col2im_rule);  // offset and mask do not change the output shape
  table.add("ConvTranspose", &conv_transpose_rule);
}

}  // namespace shapeonnx

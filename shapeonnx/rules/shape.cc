// Shape ops: Reshape, Flatten, Transpose, Concat, Split, Squeeze, Unsqueeze, Expand, Tile,
// DepthToSpace, SpaceToDepth, Identity, Dropout. Indexing ops (Slice, Gather, Pad, ...) are in
// index.cc.
#include <algorithm>
#include <string>
#include <string_view>

#include "common/eval/eval.h"
#include "common/op_params.h"
#include "shapeonnx/rules/rules.h"
#include "shapeonnx/rules/util.h"

namespace shapeonnx {
namespace {

using common::Dims;
using common::DType;
using common::Result;
using common::Status;

// Reshape(data, shape): 0 copies the input dim (unless allowzero=1), one -1 takes what is left.
Result<Dims> reshape_dims(const InferContext& ctx, const Dims& in,
                          const std::vector<int64_t>& target, bool allowzero) {
  Dims out(target.size());
  int64_t infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allowzero) {
      if (i >= in.size())
        return ctx.error("shape has 0 at axis " + std::to_string(i) + " beyond the input rank");
      d = in[i];
    }
    if (d == -1) {
      if (infer_at >= 0) return ctx.error("shape has more than one -1");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (d < 0) return ctx.error("shape has invalid dim " + std::to_string(d));
    out[i] = d;
    ASSIGN_OR_RETURN(known, checked_mul(ctx, known, d));
  }
  ASSIGN_OR_RETURN(int64_t total, checked_product(ctx, in, 0, in.size()));
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      return ctx.error("cannot reshape " + std::to_string(total) + " elements with a -1 dim");
    }
    out[infer_at] = total / known;
    return out;
  }
  if (known != total) {
    return ctx.error("cannot reshape " + std::to_string(total) + " elements into " +
                     std::to_string(known));
  }
  return out;
}

Status reshape_rule(InferContext& ctx) {
  std::vector<int64_t> target;
  if (ctx.has_input(1)) {
    ASSIGN_OR_RETURN(target, known_ints(ctx, 1, "Reshape target shape"));
  } else if (ctx.node().has_attr("shape")) {  // opsets 1-4
    target = ctx.node().attr_ints("shape");
  } else {
    return ctx.error("Reshape has no target shape");
  }
  const bool allowzero = ctx.node().attr_int("allowzero", 0) != 0;
  ASSIGN_OR_RETURN(Dims out, reshape_dims(ctx, ctx.shape(0), target, allowzero));
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// Flatten: [prod(dims[:axis]), prod(dims[axis:])], axis in [-r, r].
Status flatten_rule(InferContext& ctx) {
  const Dims& in = ctx.shape(0);
  const int64_t r = ctx.rank(0);
  auto normalized = common::normalize_flatten_axis(ctx.node().attr_int("axis", 1), r);
  if (!normalized.ok()) return ctx.error(normalized.error().message);
  const int64_t axis = *normalized;
  ASSIGN_OR_RETURN(int64_t outer, checked_product(ctx, in, 0, axis));
  ASSIGN_OR_RETURN(int64_t inner, checked_product(ctx, in, axis, in.size()));
  ctx.set_output(0, ctx.dtype(0), {outer, inner});
  return {};
}

Status transpose_rule(InferContext& ctx) {
  const Dims& in = ctx.shape(0);
  const size_t r = in.size();
  std::vector<int64_t> perm = ctx.node().attr_ints("perm");
  if (!ctx.node().has_attr("perm")) {
    for (size_t i = 0; i < r; ++i) perm.push_back(static_cast<int64_t>(r - 1 - i));
  }
  if (perm.size() != r) return ctx.error("perm length does not match input rank");
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, normalize_axes(ctx, perm, static_cast<int64_t>(r)));
  Dims out(r);
  for (size_t i = 0; i < r; ++i) out[i] = in[axes[i]];
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// Concat: equal dims except along axis, where they add up.
Status concat_rule(InferContext& ctx) {
  if (!ctx.node().has_attr("axis")) return ctx.error("Concat needs an 'axis'");
  std::optional<Dims> out;
  int64_t axis = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const Dims& d = ctx.shape(i);
    if (!out) {
      ASSIGN_OR_RETURN(axis, ctx.axis(ctx.node().attr_int("axis", 0), ctx.rank(i)));
      out = d;
      continue;
    }
    if (d.size() != out->size()) return ctx.error("Concat inputs differ in rank");
    for (size_t k = 0; k < d.size(); ++k) {
      if (static_cast<int64_t>(k) != axis && d[k] != (*out)[k]) {
        return ctx.error("Concat inputs differ at axis " + std::to_string(k));
      }
    }
    if (__builtin_add_overflow((*out)[axis], d[axis], &(*out)[axis]))
      return ctx.error("Concat output dim " + std::to_string(axis) + " overflows int64");
  }
  if (!out) return ctx.error("Concat has no inputs");
  ctx.set_output(0, ctx.dtype(0), std::move(*out));
  return {};
}

// Squeeze: removes the listed axes (each of size 1), or every size-1 axis when none are listed.
Status squeeze_rule(InferContext& ctx) {
  const Dims& in = ctx.shape(0);
  ASSIGN_OR_RETURN(auto listed, ints_from_input_or_attr(ctx, 1, "axes", "Squeeze axes"));
  std::vector<bool> drop(in.size(), false);
  if (!listed) {
    for (size_t i = 0; i < in.size(); ++i) drop[i] = in[i] == 1;
  } else {
    ASSIGN_OR_RETURN(std::vector<int64_t> axes, normalize_axes(ctx, *listed, ctx.rank(0)));
    for (int64_t a : axes) {
      if (in[a] != 1)
        return ctx.error("cannot squeeze axis " + std::to_string(a) + " of size " +
                         std::to_string(in[a]));
      drop[a] = true;
    }
  }
  Dims out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!drop[i]) out.push_back(in[i]);
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// Unsqueeze: inserts size-1 axes; axes refer to the output rank.
Status unsqueeze_rule(InferContext& ctx) {
  const Dims& in = ctx.shape(0);
  ASSIGN_OR_RETURN(auto listed, ints_from_input_or_attr(ctx, 1, "axes", "Unsqueeze axes"));
  if (!listed) return ctx.error("Unsqueeze needs axes");
  const int64_t out_rank = ctx.rank(0) + static_cast<int64_t>(listed->size());
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, normalize_axes(ctx, *listed, out_rank));
  std::vector<bool> inserted(out_rank, false);
  for (int64_t a : axes) inserted[a] = true;
  Dims out;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(inserted[i] ? 1 : in[next++]);
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// Expand(X, shape): bidirectional broadcast of X's shape and the shape value.
Status expand_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(std::vector<int64_t> target, known_ints(ctx, 1, "Expand shape"));
  std::optional<Dims> out = common::broadcast_shapes(ctx.shape(0), target);
  if (!out) return ctx.error("Expand shape does not broadcast with the input shape");
  ctx.set_output(0, ctx.dtype(0), std::move(*out));
  return {};
}

// Tile: out[i] = in[i] * repeats[i].
Status tile_rule(InferContext& ctx) {
  const Dims& in = ctx.shape(0);
  ASSIGN_OR_RETURN(std::vector<int64_t> repeats, known_ints(ctx, 1, "Tile repeats"));
  if (repeats.size() != in.size()) return ctx.error("Tile repeats length differs from rank");
  Dims out(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (repeats[i] < 0) return ctx.error("negative Tile repeat");
    ASSIGN_OR_RETURN(out[i], checked_mul(ctx, in[i], repeats[i]));
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// DepthToSpace: [N, C, H, W] -> [N, C / b^2, H * b, W * b].
Status depth_to_space_rule(InferContext& ctx) {
  const Dims& in = ctx.shape(0);
  const int64_t b = ctx.node().attr_int("blocksize", 0);
  if (in.size() != 4) return ctx.error("DepthToSpace needs a rank-4 input");
  if (b <= 0 || b > in[1] || in[1] % (b * b) != 0) {  // (b <= C keeps b * b from overflowing)
    return ctx.error("channels not divisible by blocksize^2");
  }
  ASSIGN_OR_RETURN(int64_t h, checked_mul(ctx, in[2], b));
  ASSIGN_OR_RETURN(int64_t w, checked_mul(ctx, in[3], b));
  ctx.set_output(0, ctx.dtype(0), {in[0], in[1] / (b * b), h, w});
  return {};
}

// SpaceToDepth: [N, C, H, W] -> [N, C * b^2, H / b, W / b].
Status space_to_depth_rule(InferContext& ctx) {
  const Dims& in = ctx.shape(0);
  const int64_t b = ctx.node().attr_int("blocksize", 0);
  if (in.size() != 4) return ctx.error("SpaceToDepth needs a rank-4 input");
  if (b <= 0 || in[2] % b != 0 || in[3] % b != 0) {
    return ctx.error("spatial dims not divisible by blocksize");
  }
  ASSIGN_OR_RETURN(int64_t b2, checked_mul(ctx, b, b));
  ASSIGN_OR_RETURN(int64_t c, checked_mul(ctx, in[1], b2));
  ctx.set_output(0, ctx.dtype(0), {in[0], c, in[2] / b, in[3] / b});
  return {};
}

// Split sizes: from the `split` input (opset >= 13) or attribute, else `num_outputs` (opset 18,
// the last chunk may be smaller), else equal parts, one per output.
Result<std::vector<int64_t>> split_sizes(const InferContext& ctx, int64_t dim) {
  ASSIGN_OR_RETURN(auto listed, ints_from_input_or_attr(ctx, 1, "split", "Split sizes"));
  const int64_t n = static_cast<int64_t>(ctx.num_outputs());
  if (listed && !listed->empty()) {
    int64_t sum = 0;
    for (int64_t s : *listed) sum += s;
    if (static_cast<int64_t>(listed->size()) != n || sum != dim) {
      return ctx.error("Split sizes do not match the outputs or the dim " + std::to_string(dim));
    }
    return *listed;
  }
  if (ctx.node().has_attr("num_outputs")) {
    if (ctx.node().attr_int("num_outputs", 0) != n) {
      return ctx.error("Split num_outputs differs from the number of outputs");
    }
    const int64_t chunk = ceil_div(dim, n);
    std::vector<int64_t> sizes(n, chunk);
    sizes.back() = dim - chunk * (n - 1);
    if (sizes.back() < 0)
      return ctx.error("Split of " + std::to_string(dim) + " into " + std::to_string(n) +
                       " leaves an empty tail");
    return sizes;
  }
  if (n == 0 || dim % n != 0) {
    return ctx.error("dim " + std::to_string(dim) + " does not split into " + std::to_string(n) +
                     " equal parts");
  }
  return std::vector<int64_t>(n, dim / n);
}

Status split_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, ctx.axis(ctx.node().attr_int("axis", 0), ctx.rank(0)));
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes, split_sizes(ctx, ctx.shape(0)[axis]));
  for (size_t i = 0; i < sizes.size(); ++i) {
    Dims out = ctx.shape(0);
    out[axis] = sizes[i];
    ctx.set_output(i, ctx.dtype(0), std::move(out));
  }
  return {};
}

// Dropout: output 0 like X; optional output 1 is the boolean mask of the same shape.
Status dropout_rule(InferContext& ctx) {
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
  if (ctx.num_outputs() > 1 && !ctx.node().outputs[1].empty()) {
    // Opsets 1-9 give the mask the input's type; from opset 10 it is boolean.
    ctx.set_output(1, ctx.opset() >= 10 ? DType::kBool : ctx.dtype(0), ctx.shape(0));
  }
  return {};
}

// Identity: X's shape and dtype.
Status identity_rule(InferContext& ctx) { return same_as_input(ctx); }

}  // namespace

void register_shape_rules(ShapeRegistry& table) {
  table.add("Reshape", &reshape_rule);
  table.add("Flatten", &flatten_rule);
  table.add("Transpose", &transpose_rule);
  table.add("Concat", &concat_rule);
  table.add("Squeeze", &squeeze_rule);
  table.add("Unsqueeze", &unsqueeze_rule);
  table.add("Expand", &expand_rule);
  table.add("Tile", &tile_rule);
  table.add("DepthToSpace", &depth_to_space_rule);
  table.add("SpaceToDepth", &space_to_depth_rule);
  table.add("Split", &split_rule);
  table.add("Identity", &identity_rule);
  table.add("Dropout", &dropout_rule);
}

}  // namespace shapeonnx

// Ops on convolution columns: Col2Im (columns added back into an image) and DeformConv (columns
// sampled at offset positions, then multiplied by the weights).
#include <algorithm>
#include <string>
#include <vector>

#include "common/op_params.h"
#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::Status;
using common::Tensor;

// Col2Im: the columns added into a flat image with index_add through a constant table of each
// column element's image offset (common::col2im_offsets); elements in the padding go to one
// extra slot, dropped after.
Status col2im(Context& ctx) {
  ASSIGN_OR_RETURN(std::vector<int64_t> image, ints_from(ctx, 1, ""));
  ASSIGN_OR_RETURN(std::vector<int64_t> block, ints_from(ctx, 2, ""));
  common::Result<common::Window> w = common::read_window(ctx.node(), image.size(), block);
  if (!w.ok()) return ctx.error(w.error().message);
  int64_t blocks = 0;
  common::Result<std::vector<int64_t>> offsets = common::col2im_offsets(*w, image, &blocks);
  if (!offsets.ok()) return ctx.error(offsets.error().message);
  const common::Dims& x = ctx.shape(0);
  const auto size = static_cast<int64_t>(offsets->size());
  const int64_t kernel = size / std::max<int64_t>(blocks, 1);
  if (x.size() != 3 || kernel == 0 || x[1] % kernel != 0 || x[2] != blocks) {
    return ctx.error("input must be [N, C * prod(block_shape), number of blocks]");
  }
  const int64_t channels = x[1] / kernel, plane = common::num_elements(image);
  std::vector<int64_t> table = *offsets;
  std::replace(table.begin(), table.end(), int64_t{-1}, plane);
  const std::string index = ctx.buffer(Tensor::from_int64(table, {size}), "col2im_index");
  const bool batched = ctx.batched(0);
  const std::string in = ctx.in(0);
  const std::string n = batched ? in + ".shape[0]" : std::to_string(x[0]);
  const std::string c = std::to_string(channels);
  std::vector<int64_t> dims = {x[0], channels};
  dims.insert(dims.end(), image.begin(), image.end());
  const std::string expr = in + ".new_zeros(" + n + ", " + c + ", " + std::to_string(plane + 1) +
                           ").index_add(2, " + index + ", " + in + ".reshape(" + n + ", " + c +
                           ", " + std::to_string(size) + "))[:, :, :" + std::to_string(plane) +
                           "].reshape(" + shape_args(dims, batched) + ")";
  return ctx.emit(py::Expr::raw(expr, {}), "image", batched);
}

// Per kernel position k (row-major over kH, kW) and output row (or column), the input row (or
// column) its window reads before the offsets: o * stride - pad + k * dilation.
Tensor window_positions(const ConvGeometry& g, size_t d, int64_t out, common::DType dtype) {
  const int64_t k_h = g.kernel[0], k_w = g.kernel[1], kernel = k_h * k_w;
  std::vector<double> v;
  for (int64_t k = 0; k < kernel; ++k) {
    const int64_t along = d == 0 ? k / k_w : k % k_w;
    for (int64_t o = 0; o < out; ++o) {
      v.push_back(static_cast<double>(o * g.strides[d] - g.begin[d] + along * g.dilations[d]));
    }
  }
  return Tensor::from_double(
      v, d == 0 ? common::Dims{kernel, out, 1} : common::Dims{kernel, 1, out}, dtype);
}

// DeformConv (2-D): each kernel position's samples are read with F.grid_sample (bilinear, zero
// outside the input, as ONNX's reference) at the window position plus the offset, scaled by
// the mask; the columns [N, group, C / group * kH * kW, oH * oW] are then multiplied by the
// weights. Pixel p maps to the grid coordinate (2p + 1) / size - 1 (align_corners=False), which
// grid_sample maps back to p; in float64, so that a sample exactly on a pixel (or a whole pixel
// outside) reads no neighbour through the rounding of that round trip (float32 left 1e-6).
Status deform_conv(Context& ctx) {
  const common::Dims& x = ctx.shape(0);
  const common::Dims& wt = ctx.shape(1);
  const common::Dims& out = ctx.out_shape();
  if (x.size() != 4 || wt.size() != 4) return ctx.error("only 2-D DeformConv is supported");
  if (!common::is_floating(ctx.dtype(0))) return ctx.error("DeformConv needs a float input");
  ASSIGN_OR_RETURN(ConvGeometry g, conv_geometry(ctx, {wt[2], wt[3]}, {x[2], x[3]}, false));
  const int64_t og = ctx.node().attr_int("offset_group", 1), channels = x[1];
  if (og < 1 || channels % og != 0 || g.group < 1 || channels % g.group != 0) {
    return ctx.error("offset_group and group must divide the input channels");
  }
  const int64_t kernel = wt[2] * wt[3], o_h = out[2], o_w = out[3], cells = o_h * o_w;
  if (!ctx.has_input(2)) return ctx.error("offset is required");
  // The window position tables hold kernel * oH and kernel * oW values: past 2^24 the shapes are
  // a damaged model's.
  if (static_cast<double>(kernel) * static_cast<double>(std::max(o_h, o_w)) > (1 << 24)) {
    return ctx.error("more than 2^24 window positions");
  }
  const std::string k = std::to_string(kernel), n_og = std::to_string(og);
  const common::DType f64 = common::DType::kDouble;
  const std::string rows = ctx.buffer(window_positions(g, 0, o_h, f64), "deform_rows");
  const std::string cols = ctx.buffer(window_positions(g, 1, o_w, f64), "deform_cols");
  ASSIGN_OR_RETURN(const std::string dtype, torch_dtype(ctx.dtype(0)));
  // offset [N, og * K * 2, oH, oW] holds (row, column) offsets per group and kernel position.
  const std::string off =
      ctx.local(py::Expr::raw(ctx.in(2) + ".double().reshape(-1, " + n_og + ", " + k + ", 2, " +
                                  std::to_string(o_h) + ", " + std::to_string(o_w) + ")",
                              {}),
                "offset");
  auto coord = [&](const std::string& at, const std::string& base, int64_t size) {
    return "((" + off + "[:, :, :, " + at + "] + " + base + ") * 2 + 1) / " + std::to_string(size) +
           " - 1";
  };
  const std::string grid = ctx.local(
      py::Expr::raw("torch.stack((" + coord("1", cols, x[3]) + ", " + coord("0", rows, x[2]) +
                        "), -1).reshape(-1, " + std::to_string(kernel * o_h) + ", " +
                        std::to_string(o_w) + ", 2)",
                    {py::Ns::kTorch}),
      "grid");
  const std::string per_og = std::to_string(channels / og), l = std::to_string(cells);
  std::string sampled = "F.grid_sample(" + ctx.in(0) + ".double().reshape(-1, " + per_og + ", " +
                        std::to_string(x[2]) + ", " + std::to_string(x[3]) + "), " + grid +
                        ", mode=\"bilinear\", padding_mode=\"zeros\", align_corners=False)" +
                        ".to(" + dtype + ")";
  if (ctx.has_input(4)) {  // [N * og, C / og, K * oH, oW] times mask [N, og * K, oH, oW]
    sampled = "(" + sampled + ".reshape(-1, " + n_og + ", " + per_og + ", " + k + ", " + l +
              ") * " + ctx.in(4) + ".reshape(-1, " + n_og + ", 1, " + k + ", " + l + "))";
  }
  const std::string group = std::to_string(g.group);
  const std::string columns =
      ctx.local(py::Expr::raw(sampled + ".reshape(-1, " + group + ", " +
                                  std::to_string(channels / g.group * kernel) + ", " + l + ")",
                              {py::Ns::kTorch, py::Ns::kF}),
                "columns");
  std::string expr = "torch.matmul(" + ctx.in(1) + ".reshape(" + group + ", " +
                     std::to_string(wt[0] / g.group) + ", -1), " + columns + ").reshape(-1, " +
                     std::to_string(wt[0]) + ", " + std::to_string(o_h) + ", " +
                     std::to_string(o_w) + ")";
  if (ctx.has_input(3)) expr += " + " + ctx.in(3) + ".reshape(-1, 1, 1)";
  return ctx.emit(py::Expr::raw(expr, {py::Ns::kTorch}), "deform_conv", ctx.batched(0));
}

}  // namespace

void register_conv_columns(HandlerRegistry& t) {
  t.add("Col2Im", col2im);
  t.add("DeformConv", deform_conv);
}

}  // namespace torchonnx

// Sampling ops of the resize family: GridSample as F.grid_sample and AffineGrid as F.affine_grid
// (ONNX adopted PyTorch's definitions), RoiAlign with constant boxes as two interpolation
// matrices per box.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::DType;
using common::Status;
using common::Tensor;

// The grid moved onto the pixel centres that ONNX's nearest mode picks, rounding halves to even
// (as torch's 2-D kernel does; its 3-D kernel rounds them away from zero before torch 2.1):
// pixel coordinates a * g + b are rounded, mapped back, and then lie on whole pixels. The
// padding modes see the rounded coordinates, as in ONNX's reference.
std::string round_grid(Context& ctx, const std::string& grid, bool align) {
  const common::Dims& x = ctx.shape(0);
  std::vector<double> a, b;  // grid's last dim is (x, y, z): W, H, D
  for (size_t d = x.size(); d-- > 2;) {
    const double size = static_cast<double>(x[d]);
    const double scale = align ? (size - 1) / 2 : size / 2;
    a.push_back(scale > 0 ? scale : 1.0);  // a size-1 axis with align_corners reads pixel 0
    b.push_back((size - 1) / 2);
  }
  const DType dtype = ctx.dtype(0);
  const std::string sa = ctx.buffer(Tensor::from_double(a, {3}, dtype), "grid_scale");
  const std::string sb = ctx.buffer(Tensor::from_double(b, {3}, dtype), "grid_offset");
  return "((torch.round(" + grid + " * " + sa + " + " + sb + ") - " + sb + ") / " + sa + ")";
}

// GridSample-16 modes bilinear/nearest/bicubic; GridSample-20 names them linear/nearest/cubic
// and allows volumetric inputs (linear and nearest only in PyTorch).
Status grid_sample(Context& ctx) {
  const common::Node& n = ctx.node();
  std::string mode = n.attr_string("mode", ctx.opset() >= 20 ? "linear" : "bilinear");
  if (mode == "linear") mode = "bilinear";
  if (mode == "cubic") mode = "bicubic";
  const std::string padding = n.attr_string("padding_mode", "zeros");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") {
    return ctx.error("mode " + mode + " is not supported");
  }
  if (padding != "zeros" && padding != "border" && padding != "reflection") {
    return ctx.error("padding_mode " + padding + " is not supported");
  }
  const int64_t rank = ctx.rank(0);
  if (rank != 4 && !(rank == 5 && mode != "bicubic")) {
    return ctx.error("F.grid_sample samples 2-D inputs, and 3-D ones without cubic mode");
  }
  std::string grid = ctx.in(1);
  // F.grid_sample; torch.<dtype> for a cast grid, torch.round for a rounded one.
  py::Namespaces uses{py::Ns::kF};
  if (ctx.dtype(1) != ctx.dtype(0)) {
    uses.add(py::Ns::kTorch);
    ASSIGN_OR_RETURN(std::string dtype, torch_dtype(ctx.dtype(0)));
    grid += ".to(" + dtype + ")";
  }
  const bool align = n.attr_int("align_corners", 0) != 0;
  if (rank == 5 && mode == "nearest") {
    grid = round_grid(ctx, grid, align);
    uses.add(py::Ns::kTorch);
  }
  const std::string expr = "F.grid_sample(" + ctx.in(0) + ", " + grid + ", mode=\"" + mode +
                           "\", padding_mode=\"" + padding +
                           "\", align_corners=" + (align ? "True" : "False") + ")";
  return ctx.emit(py::Expr::raw(expr, uses), "sampled", ctx.batched(0));
}

// AffineGrid: F.affine_grid, whose definition ONNX adopted; the batch size is theta's.
Status affine_grid(Context& ctx) {
  ASSIGN_OR_RETURN(std::vector<int64_t> size, ints_from(ctx, 1, ""));
  if (size.size() != 4 && size.size() != 5) return ctx.error("size must have 4 or 5 elements");
  if (!common::is_floating(ctx.dtype(0))) return ctx.error("theta must be a float tensor");
  const std::string theta = ctx.in(0);
  std::vector<std::string> dims{ctx.batched(0) ? theta + ".shape[0]" : std::to_string(size[0])};
  for (size_t d = 1; d < size.size(); ++d) dims.push_back(std::to_string(size[d]));
  const bool align = ctx.node().attr_int("align_corners", 0) != 0;
  return ctx.emit(py::Expr::raw("F.affine_grid(" + theta + ", (" + join(dims) +
                                    "), align_corners=" + (align ? "True" : "False") + ")",
                                {py::Ns::kF}),
                  "grid", ctx.batched(0));
}

// One axis of RoiAlign's average: row p of `m` ([bins, size]) weighs the input positions that
// the bilinear samples of output bin p read, divided by the samples per bin on this axis
// (ONNX Runtime's sampling rule; samples more than one pixel outside the input count as zero).
void roi_axis(double start, double extent, int64_t bins, int64_t samples, int64_t size, double* m) {
  const double bin = extent / bins;
  for (int64_t p = 0; p < bins; ++p) {
    for (int64_t s = 0; s < samples; ++s) {
      double y = start + p * bin + (s + 0.5) * bin / samples;
      if (y < -1.0 || y > size) continue;
      y = std::max(y, 0.0);
      int64_t low = static_cast<int64_t>(y), high = low + 1;
      if (low >= size - 1) {
        low = high = size - 1;
        y = static_cast<double>(low);
      }
      const double frac = y - low;
      m[p * size + low] += (1 - frac) / samples;
      m[p * size + high] += frac / samples;
    }
  }
}

// avg RoiAlign with constant rois: each box's sampling is separable, so
// Y[r] = rows[r] @ X[batch_indices[r]] @ cols[r] with [out_h, H] and [W, out_w] matrices.
Status roi_align(Context& ctx) {
  const common::Node& n = ctx.node();
  if (n.attr_string("mode", "avg") != "avg") {
    return ctx.error("mode max (a maximum of weighted samples) is not supported");
  }
  const Tensor* rois = ctx.constant(1);
  if (!rois) return ctx.error("rois must be a constant");
  const common::Dims& x = ctx.shape(0);
  if (x.size() != 4 || rois->dims.size() != 2 || rois->dims[1] != 4) {
    return ctx.error("expected X [N, C, H, W] and rois [R, 4]");
  }
  const int64_t out_h = n.attr_int("output_height", 1), out_w = n.attr_int("output_width", 1);
  const int64_t ratio = n.attr_int("sampling_ratio", 0);
  const double scale = n.attr_float("spatial_scale", 1.0f);
  const bool half_pixel = ctx.opset() >= 16 && n.attr_string("coordinate_transformation_mode",
                                                             "half_pixel") == "half_pixel";
  const int64_t count = rois->dims[0], height = x[2], width = x[3];
  std::vector<double> rows(count * out_h * height, 0.0), cols(count * out_w * width, 0.0);
  const std::vector<double> box = rois->to_double();
  std::vector<double> row_t(out_h * height), col_t(out_w * width);
  for (int64_t r = 0; r < count; ++r) {
    const double offset = half_pixel ? 0.5 : 0.0;
    const double x0 = box[r * 4] * scale - offset, y0 = box[r * 4 + 1] * scale - offset;
    double w = box[r * 4 + 2] * scale - offset - x0, h = box[r * 4 + 3] * scale - offset - y0;
    if (!half_pixel) w = std::max(w, 1.0), h = std::max(h, 1.0);
    const int64_t samples_h = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(h / out_h));
    const int64_t samples_w = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(w / out_w));
    std::fill(row_t.begin(), row_t.end(), 0.0);
    std::fill(col_t.begin(), col_t.end(), 0.0);
    if (samples_h > 0) roi_axis(y0, h, out_h, samples_h, height, row_t.data());
    if (samples_w > 0) roi_axis(x0, w, out_w, samples_w, width, col_t.data());
    std::copy(row_t.begin(), row_t.end(), rows.begin() + r * out_h * height);
    for (int64_t p = 0; p < out_w; ++p) {  // transposed: [W, out_w]
      for (int64_t j = 0; j < width; ++j) cols[(r * width + j) * out_w + p] = col_t[p * width + j];
    }
  }
  const DType dtype = ctx.dtype(0);
  const std::string a =
      ctx.buffer(Tensor::from_double(rows, {count, 1, out_h, height}, dtype), "roi_rows");
  const std::string b =
      ctx.buffer(Tensor::from_double(cols, {count, 1, width, out_w}, dtype), "roi_cols");
  return ctx.emit(py::Expr::raw(a + " @ " + ctx.in(0) + "[" + ctx.in(2) + "] @ " + b, {}), "roi",
                  false);
}

}  // namespace

void register_resize_sampling(HandlerRegistry& t) {
  t.add("GridSample", grid_sample);
  t.add("AffineGrid", affine_grid);
  t.add("RoiAlign", roi_align);
}

}  // namespace torchonnx

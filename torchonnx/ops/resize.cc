// Resize and Upsample. F.interpolate where PyTorch's rule is ONNX's rule; otherwise constant
// index tables (nearest) or interpolation matrices (linear, cubic), computed here per axis, and
// for tf_crop_and_resize a constant mask of the outputs that take the extrapolation value.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "common/resize_filter.h"
#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::Dims;
using common::DType;
using common::Status;
using common::Tensor;

struct ResizeSpec {
  std::string mode, transform, nearest_mode;
  std::vector<double> scales;  // per axis, ONNX's coordinate scale
  bool scales_given = false;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;  // linear and cubic: the filter stretched by 1 / scale when < 1
  // tf_crop_and_resize: per axis, the crop box as fractions of in - 1; positions outside the
  // input take `extrapolation`.
  std::vector<double> roi_start, roi_end;
  double extrapolation = 0.0;
};

// The crop box of tf_crop_and_resize from the roi input ([starts..., ends...] over `axes`).
common::Status read_roi(Context& ctx, ResizeSpec& s) {
  const size_t rank = ctx.shape(0).size();
  s.roi_start.assign(rank, 0.0);
  s.roi_end.assign(rank, 1.0);
  s.extrapolation = ctx.node().attr_float("extrapolation_value", 0.0f);
  const Tensor* roi = ctx.has_input(1) ? ctx.constant(1) : nullptr;
  if (!roi) return ctx.error("tf_crop_and_resize needs a constant roi");
  std::vector<int64_t> axes = ctx.node().attr_ints("axes");
  if (axes.empty()) {
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  const std::vector<double> box = roi->to_double();
  if (box.size() != 2 * axes.size()) return ctx.error("roi must hold a start and end per axis");
  for (size_t j = 0; j < axes.size(); ++j) {
    ASSIGN_OR_RETURN(const int64_t d, axis_at(ctx, axes[j], static_cast<int64_t>(rank)));
    s.roi_start[d] = box[j];
    s.roi_end[d] = box[j + axes.size()];
  }
  return {};
}

common::Result<ResizeSpec> resize_spec(Context& ctx) {
  const common::Node& n = ctx.node();
  ResizeSpec s;
  const bool upsample = n.op_type == "Upsample";
  const bool legacy = upsample || ctx.opset() < 11;
  s.mode = n.attr_string("mode", "nearest");
  if (s.mode == "bilinear" || s.mode == "trilinear") s.mode = "linear";
  s.transform =
      legacy ? "asymmetric" : n.attr_string("coordinate_transformation_mode", "half_pixel");
  s.nearest_mode = legacy ? "floor" : n.attr_string("nearest_mode", "round_prefer_floor");
  s.cubic_a = n.attr_float("cubic_coeff_a", -0.75f);
  s.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
  s.antialias = !legacy && n.attr_int("antialias", 0) != 0;
  std::vector<double> given;
  if (upsample && n.has_attr("scales")) {
    for (float f : n.attr_floats("scales")) given.push_back(f);
  } else {
    const size_t idx = upsample || ctx.opset() < 11 ? 1 : 2;
    if (ctx.has_input(idx)) {
      const Tensor* t = ctx.constant(idx);
      if (!t) return ctx.error("scales must be a constant");
      given = t->to_double();
    }
  }
  const Dims& in = ctx.shape(0);
  const Dims& out = ctx.out_shape();
  s.scales_given = given.size() == in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    s.scales.push_back(s.scales_given ? given[d] : static_cast<double>(out[d]) / in[d]);
  }
  if (s.transform == "tf_crop_and_resize") RETURN_IF_ERROR(read_roi(ctx, s));
  if (s.mode != "nearest" && s.mode != "linear" && s.mode != "cubic") return ctx.error("mode");
  return s;
}

double source_coord(const ResizeSpec& s, int64_t i, int64_t axis, int64_t in, int64_t out,
                    double scale) {
  const std::string& t = s.transform;
  if (t == "tf_crop_and_resize") {
    // In float32 and in onnxruntime's order of operations, so that positions that are exactly
    // halfway (or whole) in float32 round the way onnxruntime rounds them.
    const float start = static_cast<float>(s.roi_start[axis]);
    const float end = static_cast<float>(s.roi_end[axis]);
    const float span = static_cast<float>(in - 1);
    const float length = static_cast<float>(s.scales_given ? in * scale : static_cast<double>(out));
    if (length == 1.0f) return static_cast<float>(0.5 * (start + end) * span);
    const float offset = static_cast<float>(i) * (end - start) * span / (length - 1.0f);
    return static_cast<float>(start * span + offset);
  }
  if (t == "half_pixel") return (i + 0.5) / scale - 0.5;
  if (t == "half_pixel_symmetric") {  // the centre of in * scale maps to the centre of out
    const double adjust = static_cast<double>(out) / (scale * static_cast<double>(in));
    return in / 2.0 * (1 - adjust) + (i + 0.5) / scale - 0.5;
  }
  if (t == "pytorch_half_pixel") return out > 1 ? (i + 0.5) / scale - 0.5 : 0.0;
  // ONNX divides by the unrounded resized length in * scale.
  if (t == "align_corners") {
    const double length = in * scale;
    return length <= 1.0 ? 0.0 : i * double(in - 1) / (length - 1.0);
  }
  if (t == "tf_half_pixel_for_nn") return (i + 0.5) / scale;
  return i / scale;  // asymmetric
}

int64_t nearest_index(const std::string& mode, double x) {
  if (mode == "floor") return static_cast<int64_t>(std::floor(x));
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (mode == "round_prefer_ceil") return static_cast<int64_t>(std::floor(x + 0.5));
  return static_cast<int64_t>(std::ceil(x - 0.5));  // round_prefer_floor
}

double cubic_weight(double s, double a) {
  s = std::fabs(s);
  if (s <= 1) return ((a + 2) * s - (a + 3)) * s * s + 1;
  if (s < 2) return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
  return 0;
}

// Row i of the [out, in] interpolation matrix for one axis.
void matrix_row(const ResizeSpec& s, int64_t i, int64_t axis, int64_t in, int64_t out, double scale,
                std::vector<double>& m) {
  double x = source_coord(s, i, axis, in, out, scale);
  double* row = &m[i * in];
  if (s.antialias) {
    for (const common::ResizeTap& t :
         common::antialias_taps(s.mode == "cubic", x, in, scale, s.cubic_a, s.exclude_outside)) {
      row[t.index] += t.weight;
    }
    return;
  }
  if (s.mode == "linear") {
    x = std::clamp(x, 0.0, static_cast<double>(in - 1));
    const int64_t x0 = static_cast<int64_t>(x);
    const int64_t x1 = std::min(x0 + 1, in - 1);
    row[x0] += 1.0 - (x - x0);
    row[x1] += x - x0;
    return;
  }
  const int64_t x0 = static_cast<int64_t>(std::floor(x));
  const double t = x - x0;
  double w[4], total = 0;
  for (int k = 0; k < 4; ++k) {
    const int64_t src = x0 - 1 + k;
    w[k] = cubic_weight(t - (k - 1), s.cubic_a);
    if (s.exclude_outside && (src < 0 || src >= in)) w[k] = 0;
    total += w[k];
  }
  for (int k = 0; k < 4; ++k) {
    const int64_t src = std::clamp<int64_t>(x0 - 1 + k, 0, in - 1);
    row[src] += s.exclude_outside ? w[k] / total : w[k];
  }
}

// Resizes along one axis of `x` (an expression of rank `rank`).
py::Expr resize_axis(Context& ctx, const ResizeSpec& s, const py::Expr& x, int64_t axis,
                     int64_t rank, DType dtype) {
  const int64_t in = ctx.shape(0)[axis], out = ctx.out_shape()[axis];
  const double scale = s.scales[axis];
  if (s.mode == "nearest") {
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < out; ++i) {
      const int64_t j = nearest_index(s.nearest_mode, source_coord(s, i, axis, in, out, scale));
      idx.push_back(std::clamp<int64_t>(j, 0, in - 1));
    }
    const py::Expr buf = py::Expr::name(ctx.buffer(Tensor::from_int64(idx, {out}), "resize_index"));
    return x.method("index_select", {py::lit(axis), buf});
  }
  std::vector<double> m(out * in, 0.0);
  for (int64_t i = 0; i < out; ++i) matrix_row(s, i, axis, in, out, scale, m);
  if (axis == rank - 1) {
    std::vector<double> mt(in * out);
    for (int64_t i = 0; i < out; ++i) {
      for (int64_t j = 0; j < in; ++j) mt[j * out + i] = m[i * in + j];
    }
    const py::Expr mat =
        py::Expr::name(ctx.buffer(Tensor::from_double(mt, {in, out}, dtype), "resize_matrix"));
    return py::call(py::torch("matmul"), {x, mat});
  }
  const py::Expr mat =
      py::Expr::name(ctx.buffer(Tensor::from_double(m, {out, in}, dtype), "resize_matrix"));
  if (axis == rank - 2) return py::call(py::torch("matmul"), {mat, x});
  const py::Expr a = py::lit(axis);
  return py::call(py::torch("matmul"), {mat, x.method("movedim", {a, py::lit(-2)})})
      .method("movedim", {py::lit(-2), a});
}

// F.interpolate when PyTorch computes the same sample positions as ONNX.
bool try_interpolate(Context& ctx, const ResizeSpec& s, py::Expr* expr) {
  const Dims& in = ctx.shape(0);
  const Dims& out = ctx.out_shape();
  const size_t rank = in.size();
  if (rank < 3 || rank > 5 || in[0] != out[0] || in[1] != out[1]) return false;
  std::vector<py::Expr> sizes, factors;
  bool integer_scales = true;
  for (size_t d = 2; d < rank; ++d) {
    sizes.push_back(py::lit(out[d]));
    factors.push_back(py::lit(py_float(s.scales[d], false)));
    const int64_t ratio = out[d] / in[d];
    integer_scales = integer_scales && out[d] % in[d] == 0 && s.scales[d] == double(ratio);
  }
  const py::Expr x = py::Expr::name(ctx.in(0));
  if (s.mode == "nearest" && s.transform == "asymmetric" && s.nearest_mode == "floor" &&
      integer_scales) {
    *expr = py::call(py::fn("interpolate"), {x},
                     {{"scale_factor", py::tuple(factors)}, {"mode", py::str_lit("nearest")}});
    return true;
  }
  if (s.mode != "linear" || s.antialias) return false;
  const std::string mode = rank == 3 ? "linear" : rank == 4 ? "bilinear" : "trilinear";
  bool exact_ratio = true;
  for (size_t d = 2; d < rank; ++d) exact_ratio = exact_ratio && s.scales[d] * in[d] == out[d];
  bool half = s.transform == "half_pixel" || s.transform == "pytorch_half_pixel";
  for (size_t d = 2; d < rank && s.transform == "pytorch_half_pixel"; ++d)
    half = half && out[d] > 1;
  if (exact_ratio && (half || s.transform == "align_corners")) {
    *expr = py::call(py::fn("interpolate"), {x},
                     {{"size", py::tuple(sizes)},
                      {"mode", py::str_lit(mode)},
                      {"align_corners", py::lit(half ? "False" : "True")}});
    return true;
  }
  return false;
}

// Whether resizing leaves `axis` as it is.
bool identity_axis(const ResizeSpec& s, int64_t axis, int64_t in, int64_t out) {
  if (in != out || s.scales[axis] != 1.0) return false;
  if (s.transform != "tf_crop_and_resize") return true;
  return in == 1 || (s.roi_start[axis] == 0.0 && s.roi_end[axis] == 1.0);
}

// tf_crop_and_resize: outputs whose source position lies outside the input on some resized axis
// take the extrapolation value (through a constant mask); `expr` unchanged when there are none.
std::optional<py::Expr> extrapolate(Context& ctx, const ResizeSpec& s,
                                    const std::vector<bool>& resized, const py::Expr& expr) {
  const Dims& in = ctx.shape(0);
  const Dims& out = ctx.out_shape();
  Dims dims;
  std::vector<int64_t> inside{1};
  for (size_t d = 0; d < in.size(); ++d) {
    dims.push_back(resized[d] ? out[d] : 1);
    std::vector<int64_t> next;
    for (int64_t v : inside) {
      for (int64_t i = 0; i < dims.back(); ++i) {
        const double x = resized[d] ? source_coord(s, i, d, in[d], out[d], s.scales[d]) : 0.0;
        next.push_back(v && x >= 0.0 && x <= in[d] - 1);
      }
    }
    inside = std::move(next);
  }
  if (std::all_of(inside.begin(), inside.end(), [](int64_t v) { return v != 0; })) {
    return std::nullopt;
  }
  const std::string mask =
      ctx.buffer(Tensor::from_int64(inside, dims, DType::kBool), "resize_inside");
  const std::string value = common::is_floating(ctx.dtype(0))
                                ? py_float(s.extrapolation)
                                : std::to_string(static_cast<int64_t>(s.extrapolation));
  return py::call(py::torch("where"), {py::Expr::name(mask), expr, py::lit(value)});
}

Status resize(Context& ctx) {
  ASSIGN_OR_RETURN(ResizeSpec s, resize_spec(ctx));
  const Dims& in = ctx.shape(0);
  const Dims& out = ctx.out_shape();
  py::Expr expr;
  if (try_interpolate(ctx, s, &expr)) return ctx.emit(expr, "resize", ctx.batched(0));
  const DType dtype = ctx.dtype(0);
  if (s.mode != "nearest" && dtype != DType::kFloat && dtype != DType::kDouble) {
    return ctx.error("linear and cubic resize need a float input");
  }
  expr = py::Expr::name(ctx.in(0));
  bool changed = false;
  bool batched = ctx.batched(0);
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> resized(rank, false);
  for (int64_t d = 0; d < rank; ++d) {
    if (identity_axis(s, d, in[d], out[d])) continue;
    expr = resize_axis(ctx, s, expr, d, rank, dtype);
    resized[d] = changed = true;
    batched = batched && d != 0;
  }
  if (s.transform == "tf_crop_and_resize") {
    if (std::optional<py::Expr> masked = extrapolate(ctx, s, resized, expr)) {
      expr = *masked;
      changed = true;
    }
  }
  if (!changed) {
    ctx.alias(0, Operand{ctx.in(0), batched});
    return {};
  }
  return ctx.emit(expr, "resize", batched);
}

}  // namespace

void register_resize_sampling(HandlerRegistry& t);  // GridSample, AffineGrid, RoiAlign

void register_resize(HandlerRegistry& t) {
  t.add("Resize", resize);
  t.add("Upsample", resize);
  register_resize_sampling(t);
}

}  // namespace torchonnx

#include "torchonnx/ops/util.h"

#include <algorithm>

#include "common/op_params.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

bool broadcast_batched(const Context& ctx) {
  const common::Dims& out = ctx.out_shape();
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const common::Dims& in = ctx.shape(i);
    if (ctx.batched(i) && in.size() == out.size() && !in.empty() && in[0] == out[0]) return true;
  }
  return false;
}

int broadcast_batch_axis(const Context& ctx) {
  const common::Dims& out = ctx.out_shape();
  const int rank = static_cast<int>(out.size());
  int axis = -1;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const int a = ctx.batch_axis(i);
    if (a < 0) continue;
    const common::Dims& in = ctx.shape(i);
    const int aligned = a + rank - static_cast<int>(in.size());
    if (in[a] != out[aligned] || (axis >= 0 && axis != aligned)) return -1;
    axis = aligned;
  }
  // An operand without the batch must not span the batch dim (it broadcasts there with size 1).
  for (size_t i = 0; i < ctx.num_inputs() && axis >= 0; ++i) {
    if (!ctx.has_input(i) || ctx.batch_axis(i) >= 0) continue;
    const common::Dims& in = ctx.shape(i);
    const int d = axis - (rank - static_cast<int>(in.size()));
    if (d >= 0 && in[d] != 1) return -1;
  }
  return axis;
}

common::Result<std::vector<int64_t>> ints_from(Context& ctx, size_t i, std::string_view attr,
                                               bool* present) {
  const common::Tensor* value = ctx.has_input(i) ? ctx.constant(i) : nullptr;
  auto ints = common::ints_input_or_attr(ctx.node(), i, value, attr, attr);
  if (!ints.ok()) return ctx.error(ints.error().message);
  if (present) *present = ints->has_value();
  return ints->value_or(std::vector<int64_t>{});
}

common::Result<int64_t> axis_at(const Context& ctx, int64_t axis, int64_t rank) {
  common::Result<int64_t> a = common::normalize_axis(axis, rank);
  if (!a.ok()) return ctx.error(a.error().message);
  return a;
}

common::Result<std::vector<int64_t>> axes_at(const Context& ctx, std::vector<int64_t> axes,
                                             int64_t rank) {
  auto a = common::normalize_axes(std::move(axes), rank);
  if (!a.ok()) return ctx.error(a.error().message);
  return a;
}

std::string cast_to_output(const Context& ctx, std::string expr, common::DType from, size_t i) {
  if (from == ctx.out_dtype(i)) return expr;
  auto dtype = torch_dtype(ctx.out_dtype(i));
  return dtype.ok() ? "(" + expr + ").to(" + *dtype + ")" : expr;
}

py::Expr cast_to_output(const Context& ctx, py::Expr expr, common::DType from, size_t i) {
  if (from == ctx.out_dtype(i)) return expr;
  auto dtype = dtype_expr(ctx.out_dtype(i));
  return dtype.ok() ? py::paren(std::move(expr)).method("to", {*dtype}) : expr;
}

std::string index_suffix(std::vector<std::string> parts) {
  while (!parts.empty() && parts.back() == ":") parts.pop_back();
  if (parts.empty()) return "";
  return "[" + join(parts) + "]";
}

namespace {

// The base dim behind the view's dim `axis`, or null past the view's rank (callers pass axes
// that shape inference checked).
View::Range* kept_range(View& view, int64_t axis) {
  for (View::Range& r : view.ranges) {
    if (!r.selected && axis-- == 0) return &r;
  }
  return nullptr;
}

}  // namespace

void view_slice(View& view, int64_t axis, int64_t start, int64_t step, int64_t len) {
  if (View::Range* r = kept_range(view, axis)) {
    r->start += start * r->step;
    r->step *= step;
    r->len = len;
  }
}

void view_select(View& view, int64_t axis, int64_t index) {
  if (View::Range* r = kept_range(view, axis)) {
    r->start += index * r->step;
    r->selected = true;
  }
}

namespace {

// Per dim of the view's base, the index text that keeps the view's elements.
std::vector<std::string> view_parts(const View& view) {
  std::vector<std::string> parts;
  for (size_t d = 0; d < view.ranges.size(); ++d) {
    const View::Range& r = view.ranges[d];
    if (r.selected) {
      parts.push_back(std::to_string(r.start));
    } else if (r.len == 0) {
      parts.push_back("0:0");
    } else {
      parts.push_back(
          slice_text(r.start, r.start + (r.len - 1) * r.step + 1, r.step, view.dims[d]));
    }
  }
  return parts;
}

}  // namespace

std::string view_expr(const View& view) { return view.base + index_suffix(view_parts(view)); }

py::Expr view_of(const View& view) {
  std::vector<py::Expr> parts;
  for (const std::string& p : view_parts(view)) parts.push_back(py::lit(p));
  return subscript(py::Expr::name(view.base), std::move(parts));
}

py::Expr subscript(const py::Expr& x, std::vector<py::Expr> parts) {
  while (!parts.empty() && parts.back().str() == ":") parts.pop_back();
  return parts.empty() ? x : x.index(std::move(parts));
}

py::Expr as_long(const Context& ctx, size_t i, const py::Expr& expr) {
  return ctx.dtype(i) == common::DType::kInt64 ? expr : expr.method("to", {py::torch("int64")});
}

std::string slice_text(int64_t start, int64_t stop, int64_t step, int64_t dim) {
  std::string s = start == 0 ? "" : std::to_string(start);
  s += ":";
  if (stop < dim) s += std::to_string(stop);
  if (step != 1) s += ":" + std::to_string(step);
  return s;
}

std::string int_or_tuple(const std::vector<int64_t>& values, bool scalar_ok) {
  const bool same = !values.empty() && std::all_of(values.begin(), values.end(),
                                                   [&](int64_t v) { return v == values[0]; });
  if (scalar_ok && same) return std::to_string(values[0]);
  return py_tuple(values);
}

std::vector<double> doubles(const common::Tensor& t) { return t.to_double(); }

// Kernel, strides, dilations and explicit pads of a Conv-like node over `in` spatial dims.
common::Result<ConvGeometry> conv_geometry(Context& ctx, const std::vector<int64_t>& kernel,
                                           const std::vector<int64_t>& in, bool transposed) {
  common::Result<common::Window> read = common::read_window(ctx.node(), kernel.size(), kernel);
  if (!read.ok()) return ctx.error(read.error().message);
  const common::Window& w = *read;
  if (w.kernel != kernel) return ctx.error("kernel_shape does not match the weight");
  ConvGeometry g{kernel,      w.strides, w.dilations,
                 w.pad_begin, w.pad_end, ctx.node().attr_int("group", 1)};
  if (w.valid()) g.begin = g.end = std::vector<int64_t>(kernel.size(), 0);
  if (!w.same() || transposed) return g;
  for (size_t d = 0; d < kernel.size(); ++d) {
    common::Result<common::WindowDim> dim = common::window_dim(w, d, in[d]);
    if (!dim.ok()) return ctx.error(dim.error().message);
    g.begin[d] = dim->pad_begin;
    g.end[d] = dim->pad_end;
  }
  return g;
}

std::string as_long(const Context& ctx, size_t i, const std::string& expr) {
  return ctx.dtype(i) == common::DType::kInt64 ? expr : expr + ".to(torch.int64)";
}

common::Tensor wrapped_indices(const common::Tensor& t, int64_t dim) {
  std::vector<int64_t> v = t.to_int64();
  for (int64_t& i : v) i = i < 0 ? i + dim : i;
  return common::Tensor::from_int64(v, t.dims);
}

}  // namespace torchonnx

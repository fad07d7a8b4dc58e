// Ops that make tensors: Shape/Size (folded by shape inference), ConstantOfShape, Range,
// EyeLike.
#include <string>

#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::DType;
using common::Status;
using common::Tensor;

Status unfolded(Context& ctx) {
  return ctx.error("value was not computed by shape inference (static shapes are required)");
}

// Reached when the output is too large to store (smaller ones were folded into buffers): the fill
// value is a one-element buffer, expanded without copying. Being a buffer, it lives on the
// module's device, as a tensor made in forward would not.
Status constant_of_shape(Context& ctx) {
  const Tensor* value = ctx.node().attr_tensor("value");
  if (!torch_dtype(ctx.out_dtype()).ok()) return ctx.error("unsupported output type");
  Tensor fill = value && value->numel() == 1 ? *value : Tensor::zeros(DType::kFloat, {});
  fill.dims = {};
  const std::string buffer = ctx.buffer(std::move(fill), "fill");
  const common::Dims& shape = ctx.out_shape();
  return ctx.emit(py::Expr::raw(shape.empty() ? buffer : buffer + ".expand" + py_tuple(shape), {}),
                  "full", false);
}

// start + arange(n) * delta with n from shape inference: no Python scalars are read from tensors.
// The start operand (a buffer when constant) gives the device.
Status range(Context& ctx) {
  auto td = dtype_expr(ctx.out_dtype());
  if (!td.ok()) return ctx.error(td.error().message);
  const int64_t n = ctx.out_shape().empty() ? 0 : ctx.out_shape()[0];
  const py::Expr start = py::Expr::name(ctx.in(0));
  py::Expr expr = py::call(py::torch("arange"), {py::lit(n)},
                           {{"dtype", *td}, {"device", start.attr("device")}});
  const Tensor* delta = ctx.constant(2);
  if (!delta || delta->double_at(0) != 1.0) {
    expr = py::binary("*", expr, py::Expr::name(ctx.scalar_or_in(2)));
  }
  const Tensor* first = ctx.constant(0);
  if (!first || first->double_at(0) != 0.0) expr = py::binary("+", start, expr);
  return ctx.emit(expr, "range", false);
}

Status eye_like(Context& ctx) {
  const common::Dims& s = ctx.shape(0);
  if (s.size() != 2) return ctx.error("input must be 2-D");
  const int64_t k = ctx.node().attr_int("k", 0);
  if (s[0] * s[1] > (int64_t{1} << 24)) return ctx.error("output too large for a constant");
  std::vector<double> v(s[0] * s[1], 0.0);
  for (int64_t r = 0; r < s[0]; ++r) {
    if (r + k >= 0 && r + k < s[1]) v[r * s[1] + r + k] = 1.0;
  }
  const DType dtype = ctx.out_dtype();
  if (!torch_dtype(dtype).ok()) return ctx.error("unsupported output type");
  ctx.alias(0, Operand{ctx.buffer(Tensor::from_double(v, s, dtype), "eye"), false});
  return {};
}

}  // namespace

void register_generator(HandlerRegistry& t) {
  t.add("Shape", unfolded);
  t.add("Size", unfolded);
  t.add("ConstantOfShape", constant_of_shape);
  t.add("Range", range);
  t.add("EyeLike", eye_like);
}

}  // namespace torchonnx

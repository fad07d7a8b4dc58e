// Ops that make tensors: Constant, Shape, Size, Range, ConstantOfShape, EyeLike.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/eval/kernels.h"

namespace common::eval {
namespace {

/// Constant: one of value / value_float / value_floats / value_int / value_ints.
Result<Outputs> constant_kernel(const Ctx& c) {
  const Node& n = c.node();
  if (const Tensor* t = n.attr_tensor("value")) return Outputs{*t};
  if (n.has_attr("value_float"))
    return Outputs{Tensor::from_floats({n.attr_float("value_float", 0)}, {})};
  if (n.has_attr("value_floats")) {
    auto v = n.attr_floats("value_floats");
    return Outputs{Tensor::from_floats(v, {static_cast<int64_t>(v.size())})};
  }
  if (n.has_attr("value_int")) return Outputs{Tensor::from_int64({n.attr_int("value_int", 0)}, {})};
  if (n.has_attr("value_ints")) {
    auto v = n.attr_ints("value_ints");
    return Outputs{Tensor::from_int64(v, {static_cast<int64_t>(v.size())})};
  }
  return c.error("Constant has no supported value attribute");
}

/// Shape with start/end (opset 15), clamped like Slice.
Result<Outputs> shape_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  auto rank = static_cast<int64_t>(x->dims.size());
  const DimRange range = shape_range(c.node(), rank);
  std::vector<int64_t> dims;
  for (int64_t i = range.begin; i < range.end; ++i) dims.push_back(x->dims[i]);
  auto n = static_cast<int64_t>(dims.size());
  return Outputs{Tensor::from_int64(dims, {n})};
}

Result<Outputs> size_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  return Outputs{Tensor::from_int64({x->numel()}, {})};
}

/// Range: n = max(ceil((limit - start) / delta), 0) values start, start + delta, ... in the
/// input type.
Result<Outputs> range_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* start, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* limit, c.need(1));
  ASSIGN_OR_RETURN(const Tensor* delta, c.need(2));
  return visit_numeric(c, start->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    if (start->numel() != 1 || limit->numel() != 1 || delta->numel() != 1)
      return c.error("start, limit and delta must be scalars");
    T s = start->span<T>()[0], l = limit->span<T>()[0], d = delta->span<T>()[0];
    if (d == T(0)) return c.error("delta is zero");
    double count = std::ceil((static_cast<double>(l) - static_cast<double>(s)) / d);
    const int64_t n = std::max<int64_t>(saturating_int64(count), 0);
    if (n > (int64_t{1} << 31)) return c.error("range is too long");
    Tensor out = make_tensor(start->dtype, {n});
    auto o = out.mutable_span<T>();
    T v = s;  // accumulated like onnxruntime (not s + i * d): identical float roundings
    for (int64_t i = 0; i < n; ++i, v = static_cast<T>(v + d)) o[i] = v;
    return Outputs{std::move(out)};
  });
}

Result<Outputs> constant_of_shape_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* s, c.need(0));
  Dims dims = ints_of(*s);
  for (int64_t d : dims)
    if (d < 0) return c.error("negative dim in shape " + dims_str(dims));
  RETURN_IF_ERROR(check_size(c, dims));
  const Tensor* v = c.node().attr_tensor("value");
  Tensor fill = v ? *v : Tensor::from_floats({0.0f}, {});
  if (fill.numel() != 1) return c.error("value must have one element");
  Tensor out = make_tensor(fill.dtype, dims);
  size_t es = dtype_size(fill.dtype);
  for (int64_t i = 0; i < out.numel(); ++i)
    std::memcpy(out.raw.data() + i * es, fill.raw.data(), es);
  return Outputs{std::move(out)};
}

Result<Outputs> eye_like_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  if (x->dims.size() != 2) return c.error("EyeLike needs a 2-D input");
  auto dt = static_cast<DType>(c.node().attr_int("dtype", static_cast<int64_t>(x->dtype)));
  int64_t k = c.node().attr_int("k", 0);
  Tensor one = Tensor::from_int64({1}, {}, DType::kInt64);
  ASSIGN_OR_RETURN(one, cast_tensor(c, one, dt));
  Tensor out = make_tensor(dt, x->dims);
  size_t es = dtype_size(dt);
  for (int64_t i = 0; i < x->dims[0]; ++i) {
    int64_t j = i + k;
    if (j >= 0 && j < x->dims[1])
      std::memcpy(out.raw.data() + (i * x->dims[1] + j) * es, one.raw.data(), es);
  }
  return Outputs{std::move(out)};
}

}  // namespace

void register_generator(KernelRegistry& r) {
  r.add("Constant", {constant_kernel});
  r.add("Shape", {shape_kernel});
  r.add("Size", {size_kernel});
  r.add("Range", {range_kernel});
  r.add("ConstantOfShape", {constant_of_shape_kernel});
  r.add("EyeLike", {eye_like_kernel});
}

}  // namespace common::eval

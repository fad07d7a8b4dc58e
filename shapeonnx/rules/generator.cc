// Ops whose output shape comes from shapes, attributes or input values: Shape, Size, Constant,
// ConstantOfShape, Range, EyeLike and the random generators. Resize/Upsample: resize.cc.
#include <algorithm>
#include <cmath>
#include <string>

#include "shapeonnx/rules/rules.h"
#include "shapeonnx/rules/util.h"

namespace shapeonnx {
namespace {

using common::Dims;
using common::DType;
using common::Result;
using common::Status;
using common::Tensor;

// Shape(X) = X's dims as int64, sliced by start/end (opset 15; clamped, negative from the end).
Status shape_rule(InferContext& ctx) {
  const Dims& in = ctx.shape(0);
  const int64_t r = ctx.rank(0);
  const common::DimRange range = common::shape_range(ctx.node(), r);
  Dims dims(in.begin() + range.begin, in.begin() + range.end);
  const auto n = static_cast<int64_t>(dims.size());
  ctx.set_value(0, Tensor::from_int64(dims, {n}));
  return {};
}

// Size(X) = number of elements, an int64 scalar.
Status size_rule(InferContext& ctx) {
  const Dims& in = ctx.shape(0);
  ASSIGN_OR_RETURN(int64_t n, checked_product(ctx, in, 0, in.size()));
  ctx.set_value(0, Tensor::from_int64({n}, {}));
  return {};
}

// Constant: the tensor of whichever value* attribute is set.
Result<Tensor> constant_tensor(const InferContext& ctx) {
  const common::Node& node = ctx.node();
  if (const Tensor* t = node.attr_tensor("value")) return *t;
  if (node.has_attr("value_float")) {
    return Tensor::from_floats({node.attr_float("value_float", 0)}, {});
  }
  if (node.has_attr("value_floats")) {
    std::vector<float> v = node.attr_floats("value_floats");
    const auto n = static_cast<int64_t>(v.size());
    return Tensor::from_floats(v, {n});
  }
  if (node.has_attr("value_int")) return Tensor::from_int64({node.attr_int("value_int", 0)}, {});
  if (node.has_attr("value_ints")) {
    std::vector<int64_t> v = node.attr_ints("value_ints");
    const auto n = static_cast<int64_t>(v.size());
    return Tensor::from_int64(v, {n});
  }
  return ctx.error("Constant has no supported value attribute (string and sparse values are not)");
}

Status constant_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(Tensor t, constant_tensor(ctx));
  ctx.set_value(0, std::move(t));
  return {};
}

// ConstantOfShape(shape): dims from the input's value, dtype of the `value` attribute (float).
Status constant_of_shape_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, known_ints(ctx, 0, "ConstantOfShape shape"));
  for (int64_t d : dims) {
    if (d < 0) return ctx.error("ConstantOfShape dim " + std::to_string(d) + " < 0");
  }
  RETURN_IF_ERROR(checked_product(ctx, dims, 0, dims.size()));
  const Tensor* value = ctx.node().attr_tensor("value");
  if (value != nullptr && value->numel() != 1) {
    return ctx.error("ConstantOfShape value must hold one element, not " +
                     std::to_string(value->numel()));
  }
  ctx.set_output(0, value != nullptr ? value->dtype : DType::kFloat, std::move(dims));
  return {};
}

// Range(start, limit, delta): max(ceil((limit - start) / delta), 0) elements of start's dtype.
// Integers are counted exactly; float32 subtracts in float first, as onnxruntime does.
Result<int64_t> range_count(const InferContext& ctx) {
  const Tensor* s = ctx.constant(0);
  const Tensor* l = ctx.constant(1);
  const Tensor* d = ctx.constant(2);
  if (s == nullptr || l == nullptr || d == nullptr) {
    return ctx.error("Range start, limit and delta must be known statically");
  }
  if (s->numel() != 1 || l->numel() != 1 || d->numel() != 1) {
    return ctx.error("Range start, limit and delta must be scalars");
  }
  if (common::is_integer(s->dtype)) {
    const int64_t delta = d->int_at(0);
    if (delta == 0) return ctx.error("Range delta is 0");
    const int64_t diff = l->int_at(0) - s->int_at(0);
    return std::max<int64_t>(0, delta > 0 ? ceil_div(diff, delta) : ceil_div(-diff, -delta));
  }
  const double delta = d->double_at(0);
  if (delta == 0) return ctx.error("Range delta is 0");
  double diff = l->double_at(0) - s->double_at(0);
  if (s->dtype == DType::kFloat) {
    diff = static_cast<float>(l->double_at(0)) - static_cast<float>(s->double_at(0));
  }
  const double n = std::ceil(diff / delta);
  if (!(n < 9.0e18)) return ctx.error("Range has too many elements");
  return std::max<int64_t>(0, static_cast<int64_t>(n));
}

Status range_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(int64_t n, range_count(ctx));
  ctx.set_output(0, ctx.dtype(0), {n});
  return {};
}

// EyeLike, RandomNormalLike, RandomUniformLike, Bernoulli: the input's shape, `dtype` attribute
// or the input's dtype.
Status like_rule(InferContext& ctx) {
  const int64_t dt = ctx.node().attr_int("dtype", static_cast<int64_t>(ctx.dtype(0)));
  if (!common::is_known_dtype(static_cast<int32_t>(dt))) return ctx.error("unknown dtype");
  ctx.set_output(0, static_cast<DType>(dt), ctx.shape(0));
  return {};
}

// RandomNormal, RandomUniform: `shape` attribute, `dtype` attribute (float).
Status random_rule(InferContext& ctx) {
  if (!ctx.node().has_attr("shape")) return ctx.error("needs a 'shape' attribute");
  const int64_t dt = ctx.node().attr_int("dtype", static_cast<int64_t>(DType::kFloat));
  if (!common::is_known_dtype(static_cast<int32_t>(dt))) return ctx.error("unknown dtype");
  ctx.set_output(0, static_cast<DType>(dt), ctx.node().attr_ints("shape"));
  return {};
}

// Multinomial(input [batch, classes]) -> [batch, sample_size], int32 by default.
Status multinomial_rule(InferContext& ctx) {
  if (ctx.rank(0) != 2) return ctx.error("Multinomial input must be 2-D");
  const int64_t dt = ctx.node().attr_int("dtype", static_cast<int64_t>(DType::kInt32));
  ctx.set_output(0, static_cast<DType>(dt),
                 {ctx.shape(0)[0], ctx.node().attr_int("sample_size", 1)});
  return {};
}

}  // namespace

void register_generator_rules(ShapeRegistry& table) {
  table.add("Shape", &shape_rule);
  table.add("Size", &size_rule);
  table.add("Constant", &constant_rule);
  table.add("ConstantOfShape", &constant_of_shape_rule);
  table.add("Range", &range_rule);
  table.add("EyeLike", &like_rule);
  table.add("RandomNormalLike", &like_rule);
  table.add("RandomUniformLike", &like_rule);
  table.add("Bernoulli", &like_rule);
  table.add("RandomNormal", &random_rule);
  table.add("RandomUniform", &random_rule);
  table.add("Multinomial", &multinomial_rule);
}

}  // namespace shapeonnx

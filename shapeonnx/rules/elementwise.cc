// Element-wise ops: unary maps, broadcasting binary and variadic ops, comparisons, Where, Cast,
// PRelu. Activations are in activation.cc.
#include <string>

#include "shapeonnx/rules/rules.h"
#include "shapeonnx/rules/util.h"

namespace shapeonnx {
namespace {

using common::Dims;
using common::DType;
using common::Status;

// Y = f(X): same dtype and shape as the first input (extra inputs such as Clip's min/max or
// PRelu's slope do not change the shape).
Status unary_rule(InferContext& ctx) { return same_as_input(ctx); }

// Y = f(X) with a boolean result (IsNaN, IsInf).
Status unary_bool_rule(InferContext& ctx) {
  ctx.set_output(0, DType::kBool, ctx.shape(0));
  return {};
}

// Every input of a broadcasting op shares the first one's dtype (type constraint T; only Pow's
// exponent has a type of its own). Unknown dtypes pass.
Status same_dtypes(InferContext& ctx) {
  if (ctx.node().op_type == "Pow" || ctx.dtype(0) == DType::kUndefined) return {};
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i) || ctx.dtype(i) == DType::kUndefined || ctx.dtype(i) == ctx.dtype(0)) {
      continue;
    }
    return ctx.error("input " + std::to_string(i) + " is " +
                     std::string(common::dtype_name(ctx.dtype(i))) + ", input 0 is " +
                     std::string(common::dtype_name(ctx.dtype(0))));
  }
  return {};
}

// C = A op B (op ...): numpy broadcasting, dtype of the first input.
Status broadcast_rule(InferContext& ctx) {
  RETURN_IF_ERROR(same_dtypes(ctx));
  ASSIGN_OR_RETURN(Dims dims, broadcast_inputs(ctx));
  ctx.set_output(0, ctx.dtype(0), std::move(dims));
  return {};
}

// Comparisons and logical ops: broadcasting, boolean result.
Status compare_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(Dims dims, broadcast_inputs(ctx));
  ctx.set_output(0, DType::kBool, std::move(dims));
  return {};
}

// Where(cond, X, Y): broadcast of all three, dtype of X.
Status where_rule(InferContext& ctx) {
  if (ctx.num_inputs() != 3) return ctx.error("Where takes 3 inputs");
  ASSIGN_OR_RETURN(Dims dims, broadcast_inputs(ctx));
  ctx.set_output(0, ctx.dtype(1), std::move(dims));
  return {};
}

// PRelu(X, slope): the slope broadcasts onto X, so Y has X's shape. Before opset 7 a 1-D slope
// holds one value per channel (dim 1), whatever X's rank.
Status prelu_rule(InferContext& ctx) {
  if (ctx.opset() < 7 && ctx.rank(1) == 1 && ctx.rank(0) >= 2 &&
      ctx.shape(1)[0] == ctx.shape(0)[1]) {
    return same_as_input(ctx);
  }
  ASSIGN_OR_RETURN(Dims dims, broadcast_inputs(ctx));
  if (dims != ctx.shape(0)) return ctx.error("slope does not broadcast to the input shape");
  return same_as_input(ctx);
}

Status cast_rule(InferContext& ctx) {
  const int64_t to = ctx.node().attr_int("to", 0);
  if (!common::is_known_dtype(static_cast<int32_t>(to)) || to == 0) {
    return ctx.error("Cast has no valid 'to' type (" + std::to_string(to) + ")");
  }
  ctx.set_output(0, static_cast<DType>(to), ctx.shape(0));
  return {};
}

// CastLike(X, target): X's shape, target's dtype.
Status cast_like_rule(InferContext& ctx) {
  ctx.set_output(0, ctx.dtype(1), ctx.shape(0));
  return {};
}

// Ops sharing a rule, as space-separated lists.
constexpr std::string_view kUnary =
    "Abs Acos Acosh Asin Asinh Atan Atanh BitwiseNot Ceil Clip Cos Cosh Erf Exp Floor Log Neg Not "
    "Reciprocal Round Shrink Sign Sin Sinh Sqrt Tan Trilu";
// Broadcasting ops that keep the first input's dtype.
constexpr std::string_view kBroadcast =
    "Add BitShift BitwiseAnd BitwiseOr BitwiseXor Div Max Mean Min Mod Mul Pow Sub Sum";
// Broadcasting ops with a boolean result.
constexpr std::string_view kCompare = "And Equal Greater GreaterOrEqual Less LessOrEqual Or Xor";

}  // namespace

void register_elementwise_rules(ShapeRegistry& table) {
  add_rules(table, kUnary, &unary_rule);
  add_rules(table, kBroadcast, &broadcast_rule);
  add_rules(table, kCompare, &compare_rule);
  table.add("IsInf", &unary_bool_rule);
  table.add("IsNaN", &unary_bool_rule);
  table.add("Where", &where_rule);
  table.add("PRelu", &prelu_rule);
  table.add("Cast", &cast_rule);
  table.add("CastLike", &cast_like_rule);
}

}  // namespace shapeonnx

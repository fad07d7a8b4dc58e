// Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
// ConvInteger, QLinearConv, QLinearMatMul.
#include "shapeonnx/rules/rules.h"
#include "shapeonnx/rules/util.h"

namespace shapeonnx {
namespace {

using common::Dims;
using common::DType;
using common::Status;

// QuantizeLinear(x, y_scale, y_zero_point?): x's shape in the zero point's type (uint8 without).
Status quantize_rule(InferContext& ctx) {
  ctx.set_output(0, ctx.has_input(2) ? ctx.dtype(2) : DType::kUInt8, ctx.shape(0));
  return {};
}

// DequantizeLinear(x, x_scale, x_zero_point?): x's shape in the scale's type.
Status dequantize_rule(InferContext& ctx) {
  ctx.set_output(0, ctx.dtype(1), ctx.shape(0));
  return {};
}

// DynamicQuantizeLinear(x) -> y (uint8, x's shape), y_scale (float scalar), y_zero_point (uint8).
Status dynamic_quantize_rule(InferContext& ctx) {
  ctx.set_output(0, DType::kUInt8, ctx.shape(0));
  ctx.set_output(1, DType::kFloat, {});
  ctx.set_output(2, DType::kUInt8, {});
  return {};
}

// ConvInteger(x, w, x_zero_point?, w_zero_point?): Conv's shape, int32.
Status conv_integer_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(Dims out, conv_output_dims(ctx, ctx.shape(0), ctx.shape(1)));
  ctx.set_output(0, DType::kInt32, std::move(out));
  return {};
}

// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B?): Conv of inputs 0 and 3,
// in y_zero_point's type.
Status qlinear_conv_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(Dims out, conv_output_dims(ctx, ctx.shape(0), ctx.shape(3)));
  ctx.set_output(0, ctx.dtype(7), std::move(out));
  return {};
}

// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp): MatMul of inputs 0 and 3.
Status qlinear_matmul_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(Dims out, matmul_output_dims(ctx, ctx.shape(0), ctx.shape(3)));
  ctx.set_output(0, ctx.dtype(7), std::move(out));
  return {};
}

// MatMulInteger accumulates in int32.
Status matmul_integer_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(Dims out, matmul_output_dims(ctx, ctx.shape(0), ctx.shape(1)));
  ctx.set_output(0, DType::kInt32, std::move(out));
  return {};
}

}  // namespace

void register_quant_rules(ShapeRegistry& table) {
  table.add("QuantizeLinear", &quantize_rule);
  table.add("DequantizeLinear", &dequantize_rule);
  table.add("DynamicQuantizeLinear", &dynamic_quantize_rule);
  table.add("ConvInteger", &conv_integer_rule);
  table.add("QLinearConv", &qlinear_conv_rule);
  table.add("QLinearMatMul", &qlinear_matmul_rule);
  table.add("MatMulInteger", &matmul_integer_rule);
}

}  // namespace shapeonnx

// Activations: Relu, Sigmoid, Tanh, ... and the Softmax family (Softmax, LogSoftmax, Hardmax);
// every one keeps the input's shape and dtype.
#include <string_view>

#include "shapeonnx/rules/rules.h"
#include "shapeonnx/rules/util.h"

namespace shapeonnx {
namespace {

using common::Status;

// Softmax, LogSoftmax, Hardmax: the input's shape; an explicit axis must be valid.
Status softmax_rule(InferContext& ctx) {
  if (ctx.node().has_attr("axis")) {
    RETURN_IF_ERROR(ctx.axis(ctx.node().attr_int("axis", -1), ctx.rank(0)));
  }
  return same_as_input(ctx);
}

// Y = f(X): X's shape and dtype.
Status activation_rule(InferContext& ctx) { return same_as_input(ctx); }

constexpr std::string_view kActivations =
    "Celu Elu Gelu HardSigmoid HardSwish LeakyRelu Mish Relu Selu Sigmoid Softplus Softsign Tanh "
    "ThresholdedRelu";

}  // namespace

void register_activation_rules(ShapeRegistry& table) {
  add_rules(table, kActivations, &activation_rule);
  table.add("Softmax", &softmax_rule);
  table.add("LogSoftmax", &softmax_rule);
  table.add("Hardmax", &softmax_rule);
}

}  // namespace shapeonnx

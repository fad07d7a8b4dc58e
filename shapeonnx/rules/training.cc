// Training: the optimizer steps of the ai.onnx.preview.training domain (Adagrad, Momentum, Adam),
// whose inputs are a learning rate R, a step count T, then groups of n tensors (X, G and one or two
// accumulators), each output with the shape and type of the input tensor it updates; and the
// losses NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
#include "shapeonnx/rules/rules.h"

namespace shapeonnx {

namespace {

using common::Dims;
using common::Status;

// Input groups (after R and T) whose updated values are the outputs, in output order.
struct Layout {
  size_t groups;
  std::vector<size_t> updated;
};

Status optimizer(InferContext& ctx, const Layout& layout) {
  const size_t inputs = ctx.num_inputs();
  const size_t n = inputs < 2 ? 0 : (inputs - 2) / layout.groups;
  if (n == 0 || 2 + n * layout.groups != inputs || ctx.num_outputs() != n * layout.updated.size()) {
    return ctx.error("inputs must be R, T and " + std::to_string(layout.groups) +
                     " groups of tensors, outputs " + std::to_string(layout.updated.size()) +
                     " groups");
  }
  if (ctx.shape(0).size() > 1 || ctx.shape(1).size() > 1) {
    return ctx.error("R and T must be scalars");
  }
  for (size_t k = 0; k < layout.updated.size(); ++k) {
    for (size_t i = 0; i < n; ++i) {
      const size_t in = 2 + layout.updated[k] * n + i;
      for (size_t g = 1; g < layout.groups; ++g) {  // every group matches the tensor it belongs to
        if (ctx.shape(2 + g * n + i) != ctx.shape(2 + i)) {
          return ctx.error("tensor " + std::to_string(i) +
                           " and its gradient/accumulators differ in shape");
        }
      }
      ctx.set_output(k * n + i, ctx.dtype(in), ctx.shape(in));
    }
  }
  return {};
}

Status adagrad(InferContext& ctx) { return optimizer(ctx, {3, {0, 2}}); }   // X, G, H -> X, H
Status momentum(InferContext& ctx) { return optimizer(ctx, {3, {0, 2}}); }  // X, G, V -> X, V
Status adam(InferContext& ctx) { return optimizer(ctx, {4, {0, 2, 3}}); }   // X, G, V, H -> X, V, H

// NegativeLogLikelihoodLoss(input [N, C, d...], target [N, d...]) and
// SoftmaxCrossEntropyLoss(scores, labels): target's shape with reduction "none", else a scalar;
// SoftmaxCrossEntropyLoss's optional log_prob output has the scores' shape.
Status loss_rule(InferContext& ctx) {
  if (ctx.rank(0) < 2 || ctx.rank(1) != ctx.rank(0) - 1) {
    return ctx.error("loss input must be [N, C, d...] with target [N, d...]");
  }
  const bool none = ctx.node().attr_string("reduction", "mean") == "none";
  ctx.set_output(0, ctx.dtype(0), none ? ctx.shape(1) : Dims{});
  if (ctx.num_outputs() > 1) ctx.set_output(1, ctx.dtype(0), ctx.shape(0));
  return {};
}

}  // namespace

bool is_training_op(std::string_view domain, std::string_view op_type) {
  return domain == "ai.onnx.preview.training" &&
         (op_type == "Adagrad" || op_type == "Momentum" || op_type == "Adam");
}

void register_training_rules(ShapeRegistry& table) {
  table.add("Adagrad", adagrad);
  table.add("Momentum", momentum);
  table.add("Adam", adam);
  table.add("NegativeLogLikelihoodLoss", &loss_rule);
  table.add("SoftmaxCrossEntropyLoss", &loss_rule);
}

}  // namespace shapeonnx

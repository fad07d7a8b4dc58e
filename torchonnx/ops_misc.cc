// Det, MeanVarianceNormalization and ReverseSequence.
#include <algorithm>
#include <string>
#include <vector>

#include "torchonnx/context.h"
#include "torchonnx/ops_util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::DType;
using common::Status;

Status det(Context& ctx) {
  if (ctx.rank(0) < 2) return ctx.error("input must have rank >= 2");
  return ctx.emit("torch.linalg.det(" + ctx.in(0) + ")", "det", ctx.batched(0) && ctx.rank(0) > 2);
}

// (x - mean) / (std + 1e-9) over `axes`, std being the population standard deviation (ONNX's
// function body computes it as sqrt(E[x^2] - E[x]^2)).
Status mean_variance_normalization(Context& ctx) {
  const int64_t rank = ctx.rank(0);
  ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                   axes_at(ctx, ctx.node().attr_ints("axes", {0, 2, 3}), rank));
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  const std::string x = ctx.in(0);
  const std::string dims = int_or_tuple(axes, false);
  const std::string expr = "(" + x + " - " + x + ".mean(" + dims +
                           ", keepdim=True)) / (torch.sqrt(" + x + ".var(" + dims +
                           ", unbiased=False, keepdim=True)) + 1e-09)";
  return ctx.emit(expr, "mvn", ctx.batched(0));
}

// ReverseSequence: a gather along the time axis with index lens[b] - 1 - t for the first
// lens[b] steps of batch entry b and t after them.
Status reverse_sequence(Context& ctx) {
  const common::Node& node = ctx.node();
  const int64_t batch_axis = node.attr_int("batch_axis", 1);
  const int64_t time_axis = node.attr_int("time_axis", 0);
  const bool axes_ok = (batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0);
  if (ctx.rank(0) < 2 || !axes_ok) {
    return ctx.error("batch_axis and time_axis must be 0 and 1 on an input of rank >= 2");
  }
  const int64_t steps = ctx.shape(0)[time_axis];
  std::vector<int64_t> step_values(steps);
  for (int64_t t = 0; t < steps; ++t) step_values[t] = t;
  // Steps along the time axis, lens along the batch axis: they broadcast to [time, batch] or
  // [batch, time].
  const common::Dims step_dims = time_axis == 0 ? common::Dims{steps, 1} : common::Dims{steps};
  const std::string t = ctx.buffer(common::Tensor::from_int64(step_values, step_dims), "steps");
  std::string lens;
  if (const common::Tensor* c = ctx.constant(1)) {
    const int64_t n = c->numel();
    lens = ctx.buffer(common::Tensor::from_int64(
                          c->to_int64(), batch_axis == 0 ? common::Dims{n, 1} : common::Dims{n}),
                      "lengths");
  } else {
    lens = ctx.in(1) + (ctx.dtype(1) == DType::kInt64 ? "" : ".long()");
    if (batch_axis == 0) lens += ".unsqueeze(1)";
  }
  std::string index =
      "torch.where(" + t + " < " + lens + ", " + lens + " - 1 - " + t + ", " + t + ")";
  const std::string x = ctx.in(0);
  if (ctx.rank(0) > 2) {  // unit dims for the trailing axes, expanded to x's shape
    std::vector<std::string> parts{":", ":"};
    parts.resize(ctx.rank(0), "None");
    index += "[" + join(parts) + "].expand_as(" + x + ")";
  }
  return ctx.emit("torch.gather(" + x + ", " + std::to_string(time_axis) + ", " + index + ")",
                  "reversed", ctx.batched(0) && batch_axis == 0);
}

}  // namespace

void register_misc(HandlerRegistry& t) {
  t.add("Det", det);
  t.add("MeanVarianceNormalization", mean_variance_normalization);
  t.add("ReverseSequence", reverse_sequence);
}

}  // namespace torchonnx

// Loss ops: NegativeLogLikelihoodLoss as F.nll_loss and SoftmaxCrossEntropyLoss as
// F.cross_entropy, with F.log_softmax for its optional log_prob output. Both take scores
// [N, C, d1..dk], class indices [N, d1..dk] and an optional per-class weight [C]; torch's
// weighting, ignore_index and mean (divided by the summed weights of the counted targets) are
// ONNX's.
#include <string>
#include <vector>

#include "torchonnx/context.h"

namespace torchonnx {

namespace {

using common::DType;
using common::Status;

// Checks the layouts and returns the arguments after the scores: target, then weight,
// ignore_index and reduction as keywords, each omitted when it is torch's default.
// The target (class indices) and the keywords of a loss call.
struct LossArgs {
  py::Expr target;
  std::vector<py::Keyword> keywords;
};

common::Result<LossArgs> loss_args(Context& ctx) {
  const common::Node& node = ctx.node();
  if (ctx.rank(0) < 2 || ctx.rank(1) != ctx.rank(0) - 1) {
    return ctx.error("expected scores [N, C, d1..dk] and targets [N, d1..dk]");
  }
  const std::string reduction = node.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    return ctx.error("unknown reduction '" + reduction + "'");
  }
  // torch indexes with int64 only.
  LossArgs args{py::Expr::name(ctx.in(1)), {}};
  if (ctx.dtype(1) != DType::kInt64) args.target = args.target.method("long");
  if (ctx.has_input(2)) args.keywords.push_back({"weight", py::Expr::name(ctx.in(2))});
  // Without the attribute no target is ignored; torch's default (-100) is no valid class either.
  if (node.has_attr("ignore_index")) {
    args.keywords.push_back({"ignore_index", py::lit(node.attr_int("ignore_index", -100))});
  }
  if (reduction != "mean") args.keywords.push_back({"reduction", py::str_lit(reduction)});
  return args;
}

// `F.<fn>(x, target, keywords...)`.
py::Expr loss_call(const std::string& fn, py::Expr x, const LossArgs& args) {
  return py::call(py::fn(fn), {std::move(x), args.target}, args.keywords);
}

// The loss keeps the batch dim only when it is not reduced.
bool loss_batched(const Context& ctx) {
  return ctx.batched(0) && ctx.node().attr_string("reduction", "mean") == "none";
}

Status nll_loss(Context& ctx) {
  ASSIGN_OR_RETURN(LossArgs args, loss_args(ctx));
  return ctx.emit(loss_call("nll_loss", py::Expr::name(ctx.in(0)), args), "nll_loss",
                  loss_batched(ctx));
}

Status softmax_cross_entropy(Context& ctx) {
  ASSIGN_OR_RETURN(LossArgs args, loss_args(ctx));
  const py::Expr x = py::Expr::name(ctx.in(0));
  const py::Expr loss = loss_call("cross_entropy", x, args);
  if (!ctx.output_used(1)) return ctx.emit(loss, "loss", loss_batched(ctx));
  // One statement binds both outputs, so they share one batch flag: a reduced loss makes it
  // false, which only fixes log_prob's batch size to the model's.
  const bool batched = loss_batched(ctx) || (ctx.batched(0) && !ctx.output_used(0));
  py::Expr log_prob = py::call(py::fn("log_softmax"), {x, py::lit(1)});
  ctx.emit_tuple(py::tuple({ctx.output_used(0) ? loss : py::Expr::name("None"), log_prob}), "loss",
                 batched);
  return {};
}

}  // namespace

void register_training_loss(HandlerRegistry& t) {
  t.add("NegativeLogLikelihoodLoss", nll_loss);
  t.add("SoftmaxCrossEntropyLoss", softmax_cross_entropy);
}

}  // namespace torchonnx

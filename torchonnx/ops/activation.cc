// Activations and softmax-like ops.
#include <string>

#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::Status;

std::string attr_float(const Context& ctx, std::string_view name, float fallback) {
  return py_float(ctx.node().attr_float(name, fallback));
}

// The tensor method: the cheapest call of the three spellings (F.relu, torch.relu, .relu()) in
// eager mode.
Status relu(Context& ctx) {
  return ctx.emit_at(py::Expr::name(ctx.in(0)).method("relu"), "relu", ctx.batch_axis(0));
}

Status sigmoid(Context& ctx) {
  return ctx.emit_at(py::Expr::raw("torch.sigmoid(" + ctx.in(0) + ")", {py::Ns::kTorch}), "sigmoid",
                     ctx.batch_axis(0));
}

Status tanh(Context& ctx) {
  return ctx.emit_at(py::Expr::raw("torch.tanh(" + ctx.in(0) + ")", {py::Ns::kTorch}), "tanh",
                     ctx.batch_axis(0));
}

Status leaky_relu(Context& ctx) {
  return ctx.emit_at(
      py::Expr::raw("F.leaky_relu(" + ctx.in(0) + ", " + attr_float(ctx, "alpha", 0.01f) + ")",
                    {py::Ns::kF}),
      "leaky_relu", ctx.batch_axis(0));
}

Status elu(Context& ctx) {
  return ctx.emit_at(
      py::Expr::raw("F.elu(" + ctx.in(0) + ", " + attr_float(ctx, "alpha", 1.0f) + ")",
                    {py::Ns::kF}),
      "elu", ctx.batch_axis(0));
}

Status celu(Context& ctx) {
  return ctx.emit_at(
      py::Expr::raw("F.celu(" + ctx.in(0) + ", " + attr_float(ctx, "alpha", 1.0f) + ")",
                    {py::Ns::kF}),
      "celu", ctx.batch_axis(0));
}

// selu(x) = gamma * elu(x, alpha)
Status selu(Context& ctx) {
  const std::string alpha = attr_float(ctx, "alpha", 1.67326319217681884765625f);
  const std::string gamma = attr_float(ctx, "gamma", 1.05070102214813232421875f);
  return ctx.emit_at(
      py::Expr::raw(gamma + " * F.elu(" + ctx.in(0) + ", " + alpha + ")", {py::Ns::kF}), "selu",
      ctx.batch_axis(0));
}

Status softplus(Context& ctx) {
  return ctx.emit_at(py::Expr::raw("F.softplus(" + ctx.in(0) + ")", {py::Ns::kF}), "softplus",
                     ctx.batch_axis(0));
}

Status softsign(Context& ctx) {
  return ctx.emit_at(py::Expr::raw("F.softsign(" + ctx.in(0) + ")", {py::Ns::kF}), "softsign",
                     ctx.batch_axis(0));
}

// max(0, min(1, alpha * x + beta))
Status hard_sigmoid(Context& ctx) {
  const std::string alpha = attr_float(ctx, "alpha", 0.2f);
  const std::string beta = attr_float(ctx, "beta", 0.5f);
  return ctx.emit_at(
      py::Expr::raw("torch.clamp(" + ctx.in(0) + " * " + alpha + " + " + beta + ", 0.0, 1.0)",
                    {py::Ns::kTorch}),
      "hard_sigmoid", ctx.batch_axis(0));
}

Status hard_swish(Context& ctx) {
  return ctx.emit_at(py::Expr::raw("F.hardswish(" + ctx.in(0) + ")", {py::Ns::kF}), "hard_swish",
                     ctx.batch_axis(0));
}

Status mish(Context& ctx) {
  return ctx.emit_at(py::Expr::raw("F.mish(" + ctx.in(0) + ")", {py::Ns::kF}), "mish",
                     ctx.batch_axis(0));
}

Status thresholded_relu(Context& ctx) {
  const std::string x = ctx.in(0);
  return ctx.emit_at(py::Expr::raw("torch.where(" + x + " > " + attr_float(ctx, "alpha", 1.0f) +
                                       ", " + x + ", torch.zeros_like(" + x + "))",
                                   {py::Ns::kTorch}),
                     "thresholded_relu", ctx.batch_axis(0));
}

Status gelu(Context& ctx) {
  const std::string approx = ctx.node().attr_string("approximate", "none");
  if (approx != "none" && approx != "tanh") return ctx.error("unknown approximate mode");
  std::string extra = approx == "tanh" ? ", approximate=\"tanh\"" : "";
  return ctx.emit_at(py::Expr::raw("F.gelu(" + ctx.in(0) + extra + ")", {py::Ns::kF}), "gelu",
                     ctx.batch_axis(0));
}

// Softmax, LogSoftmax, Hardmax. Before opset 13 the input is coerced to 2-D at `axis`, which
// is a softmax over all dims from `axis` on.
Status softmax(Context& ctx) {
  const std::string& op = ctx.node().op_type;
  const bool legacy = ctx.opset() < 13;
  const int64_t rank = ctx.rank(0);
  ASSIGN_OR_RETURN(const int64_t axis,
                   axis_at(ctx, ctx.node().attr_int("axis", legacy ? 1 : -1), rank));
  const std::string x = ctx.in(0);
  const bool flat = legacy && axis != rank - 1;
  const std::string src = flat ? x + ".flatten(" + std::to_string(axis) + ")" : x;
  const std::string dim = flat ? "-1" : std::to_string(axis == rank - 1 ? -1 : axis);
  std::string expr;
  if (op == "Softmax") expr = "F.softmax(" + src + ", " + dim + ")";
  if (op == "LogSoftmax") expr = "F.log_softmax(" + src + ", " + dim + ")";
  if (op == "Hardmax") {
    int64_t size = 1;
    for (int64_t d = axis; d < (flat ? rank : axis + 1); ++d) size *= ctx.shape(0)[d];
    expr = "F.one_hot(torch.argmax(" + src + ", " + dim + "), " + std::to_string(size) + ")";
    if (!flat && axis != rank - 1) expr += ".movedim(-1, " + std::to_string(axis) + ")";
    expr += ".to(" + x + ".dtype)";
  }
  if (flat) expr += ".reshape(" + x + ".shape)";
  std::string hint = op == "Softmax" ? "softmax" : op == "LogSoftmax" ? "log_softmax" : "hardmax";
  // The batch stays where it is unless the softmax runs over it.
  const int in_axis = ctx.batch_axis(0);
  const bool over_batch = flat ? in_axis >= axis : in_axis == axis;
  const py::Namespaces uses =
      op == "Hardmax" ? py::Namespaces{py::Ns::kTorch, py::Ns::kF} : py::Namespaces{py::Ns::kF};
  return ctx.emit_at(py::Expr::raw(expr, uses), hint, over_batch ? -1 : in_axis);
}

}  // namespace

void register_activation(HandlerRegistry& t) {
  t.add("Relu", relu);
  t.add("Sigmoid", sigmoid);
  t.add("Tanh", tanh);
  t.add("LeakyRelu", leaky_relu);
  t.add("Elu", elu);
  t.add("Celu", celu);
  t.add("Selu", selu);
  t.add("Softplus", softplus);
  t.add("Softsign", softsign);
  t.add("HardSigmoid", hard_sigmoid);
  t.add("HardSwish", hard_swish);
  t.add("Mish", mish);
  t.add("ThresholdedRelu", thresholded_relu);
  t.add("Gelu", gelu);
  t.add("Softmax", softmax);
  t.add("LogSoftmax", softmax);
  t.add("Hardmax", softmax);
}

}  // namespace torchonnx

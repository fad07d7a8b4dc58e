// Activations and softmax-like ops.
#include <string>

#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::Status;

py::Expr attr_float(const Context& ctx, std::string_view name, float fallback) {
  return py::lit(py_float(ctx.node().attr_float(name, fallback)));
}

py::Expr input(Context& ctx) { return py::Expr::name(ctx.in(0)); }

// `<ns>.<fn>(x, args...)` on the input, the batch where the input has it.
Status apply(Context& ctx, py::Ns ns, const std::string& fn, std::string_view hint,
             std::vector<py::Expr> args = {}, std::vector<py::Keyword> keywords = {}) {
  args.insert(args.begin(), input(ctx));
  return ctx.emit_at(py::call(py::ns(ns, fn), std::move(args), std::move(keywords)), hint,
                     ctx.batch_axis(0));
}

// The tensor method: the cheapest call of the three spellings (F.relu, torch.relu, .relu()) in
// eager mode.
Status relu(Context& ctx) {
  return ctx.emit_at(input(ctx).method("relu"), "relu", ctx.batch_axis(0));
}

Status sigmoid(Context& ctx) { return apply(ctx, py::Ns::kTorch, "sigmoid", "sigmoid"); }

Status tanh(Context& ctx) { return apply(ctx, py::Ns::kTorch, "tanh", "tanh"); }

Status leaky_relu(Context& ctx) {
  return apply(ctx, py::Ns::kF, "leaky_relu", "leaky_relu", {attr_float(ctx, "alpha", 0.01f)});
}

Status elu(Context& ctx) {
  return apply(ctx, py::Ns::kF, "elu", "elu", {attr_float(ctx, "alpha", 1.0f)});
}

Status celu(Context& ctx) {
  return apply(ctx, py::Ns::kF, "celu", "celu", {attr_float(ctx, "alpha", 1.0f)});
}

// selu(x) = gamma * elu(x, alpha)
Status selu(Context& ctx) {
  py::Expr alpha = attr_float(ctx, "alpha", 1.67326319217681884765625f);
  py::Expr gamma = attr_float(ctx, "gamma", 1.05070102214813232421875f);
  return ctx.emit_at(py::binary("*", gamma, py::call(py::fn("elu"), {input(ctx), alpha})), "selu",
                     ctx.batch_axis(0));
}

Status softplus(Context& ctx) { return apply(ctx, py::Ns::kF, "softplus", "softplus"); }

Status softsign(Context& ctx) { return apply(ctx, py::Ns::kF, "softsign", "softsign"); }

// max(0, min(1, alpha * x + beta))
Status hard_sigmoid(Context& ctx) {
  py::Expr alpha = attr_float(ctx, "alpha", 0.2f);
  py::Expr beta = attr_float(ctx, "beta", 0.5f);
  py::Expr affine = py::binary("+", py::binary("*", input(ctx), alpha), beta);
  return ctx.emit_at(py::call(py::torch("clamp"), {affine, py::lit("0.0"), py::lit("1.0")}),
                     "hard_sigmoid", ctx.batch_axis(0));
}

Status hard_swish(Context& ctx) { return apply(ctx, py::Ns::kF, "hardswish", "hard_swish"); }

Status mish(Context& ctx) { return apply(ctx, py::Ns::kF, "mish", "mish"); }

Status thresholded_relu(Context& ctx) {
  py::Expr x = input(ctx);
  py::Expr kept = py::binary(">", x, attr_float(ctx, "alpha", 1.0f));
  return ctx.emit_at(
      py::call(py::torch("where"), {kept, x, py::call(py::torch("zeros_like"), {x})}),
      "thresholded_relu", ctx.batch_axis(0));
}

Status gelu(Context& ctx) {
  const std::string approx = ctx.node().attr_string("approximate", "none");
  if (approx != "none" && approx != "tanh") return ctx.error("unknown approximate mode");
  std::vector<py::Keyword> keywords;
  if (approx == "tanh") keywords.push_back({"approximate", py::str_lit("tanh")});
  return apply(ctx, py::Ns::kF, "gelu", "gelu", {}, std::move(keywords));
}

// Hardmax over `dim` of `src`: the one-hot of the argmax (`size` classes) in x's dtype, moved
// back to `axis` unless that is the last dim.
py::Expr hardmax(const py::Expr& x, const py::Expr& src, const py::Expr& dim, int64_t size,
                 int64_t axis, bool move) {
  py::Expr e =
      py::call(py::fn("one_hot"), {py::call(py::torch("argmax"), {src, dim}), py::lit(size)});
  if (move) e = e.method("movedim", {py::lit(-1), py::lit(axis)});
  return e.method("to", {x.attr("dtype")});
}

// Softmax, LogSoftmax, Hardmax. Before opset 13 the input is coerced to 2-D at `axis`, which
// is a softmax over all dims from `axis` on.
Status softmax(Context& ctx) {
  const std::string& op = ctx.node().op_type;
  const bool legacy = ctx.opset() < 13;
  const int64_t rank = ctx.rank(0);
  ASSIGN_OR_RETURN(const int64_t axis,
                   axis_at(ctx, ctx.node().attr_int("axis", legacy ? 1 : -1), rank));
  const py::Expr x = input(ctx);
  const bool flat = legacy && axis != rank - 1;
  const py::Expr src = flat ? x.method("flatten", {py::lit(axis)}) : x;
  const py::Expr dim = py::lit(flat ? -1 : axis == rank - 1 ? -1 : axis);
  py::Expr expr;
  if (op == "Softmax") expr = py::call(py::fn("softmax"), {src, dim});
  if (op == "LogSoftmax") expr = py::call(py::fn("log_softmax"), {src, dim});
  if (op == "Hardmax") {
    int64_t size = 1;
    for (int64_t d = axis; d < (flat ? rank : axis + 1); ++d) size *= ctx.shape(0)[d];
    expr = hardmax(x, src, dim, size, axis, !flat && axis != rank - 1);
  }
  if (flat) expr = expr.method("reshape", {x.attr("shape")});
  std::string hint = op == "Softmax" ? "softmax" : op == "LogSoftmax" ? "log_softmax" : "hardmax";
  // The batch stays where it is unless the softmax runs over it.
  const int in_axis = ctx.batch_axis(0);
  const bool over_batch = flat ? in_axis >= axis : in_axis == axis;
  return ctx.emit_at(expr, hint, over_batch ? -1 : in_axis);
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

// Optimizer steps of the ai.onnx.preview.training domain: Adagrad, Momentum and Adam update
// tensors X1..Xn from gradients G1..Gn and accumulators, given a learning rate R and a step
// count T (both run-time scalars). Each becomes element-wise arithmetic: one local per
// regularized gradient and accumulator, then one tuple of all outputs. Conditions on T are
// torch.where, not Python branches.
#include <string>
#include <vector>

#include "torchonnx/context.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::Status;

std::string f(const Context& ctx, std::string_view attr, double fallback) {
  return py_float(ctx.node().attr_float(attr, static_cast<float>(fallback)));
}

// The tensor count n, checked against the inputs (R, T, then `groups` groups of n) and outputs.
common::Result<size_t> tensor_count(const Context& ctx, size_t groups, size_t out_groups) {
  const size_t n = ctx.num_inputs() < 2 ? 0 : (ctx.num_inputs() - 2) / groups;
  if (n == 0 || 2 + n * groups != ctx.num_inputs() || ctx.num_outputs() != n * out_groups) {
    return ctx.error("inputs must be R, T and " + std::to_string(groups) +
                     " groups of tensors, outputs " + std::to_string(out_groups) + " groups");
  }
  return n;
}

// `norm * X + G`, or G alone when the coefficient is 0.
std::string regularized(Context& ctx, size_t x, size_t g) {
  const float norm = ctx.node().attr_float("norm_coefficient", 0.0f);
  const std::string expr =
      norm == 0.0f ? ctx.in(g) : py_float(norm) + " * " + ctx.in(x) + " + " + ctx.in(g);
  return ctx.local(py::Expr::raw(expr, {}), "grad");
}

void emit_outputs(Context& ctx, const std::vector<std::string>& values) {
  ctx.emit_tuple(py::Expr::raw("(" + join(values) + (values.size() == 1 ? ",)" : ")"), {}), "step",
                 false);
}

// r = R / (1 + T * decay); H' = H + g^2; X' = X - r * g / (sqrt(H') + epsilon).
Status adagrad(Context& ctx) {
  ASSIGN_OR_RETURN(size_t n, tensor_count(ctx, 3, 2));
  const float decay = ctx.node().attr_float("decay_factor", 0.0f);
  const std::string r =
      decay == 0.0f
          ? ctx.in(0)
          : ctx.local(py::Expr::raw(
                          ctx.in(0) + " / (1 + " + ctx.in(1) + " * " + py_float(decay) + ")", {}),
                      "rate");
  const std::string eps = f(ctx, "epsilon", 1e-6);
  std::vector<std::string> xs, hs;
  for (size_t i = 0; i < n; ++i) {
    const std::string g = regularized(ctx, 2 + i, 2 + n + i);
    const std::string h =
        ctx.local(py::Expr::raw(ctx.in(2 + 2 * n + i) + " + " + g + " * " + g, {}), "accum");
    xs.push_back(ctx.in(2 + i) + " - " + r + " * " + g + " / (" + h + ".sqrt() + " + eps + ")");
    hs.push_back(h);
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  emit_outputs(ctx, xs);
  return {};
}

// V' = alpha * V + beta' * g with beta' = beta after the first step (T > 0), 1 before it;
// X' = X - R * V' (standard) or X - R * (g + alpha * V') (nesterov).
Status momentum(Context& ctx) {
  ASSIGN_OR_RETURN(size_t n, tensor_count(ctx, 3, 2));
  const std::string mode = ctx.node().attr_string("mode", "standard");
  if (mode != "standard" && mode != "nesterov") return ctx.error("unknown mode '" + mode + "'");
  const std::string alpha = f(ctx, "alpha", 0.0), beta = f(ctx, "beta", 0.0);
  // beta' is 1 on the first step; with beta = 1 it is 1 on every step and drops out.
  const bool unit_beta = ctx.node().attr_float("beta", 0.0f) == 1.0f;
  const std::string beta_t =
      unit_beta ? ""
                : ctx.local(py::Expr::raw("torch.where(" + ctx.in(1) + " > 0, " + beta + ", 1.0)",
                                          {py::Ns::kTorch}),
                            "beta");
  std::vector<std::string> xs, vs;
  for (size_t i = 0; i < n; ++i) {
    const std::string g = regularized(ctx, 2 + i, 2 + n + i);
    const std::string v = ctx.local(py::Expr::raw(alpha + " * " + ctx.in(2 + 2 * n + i) + " + " +
                                                      (unit_beta ? "" : beta_t + " * ") + g,
                                                  {}),
                                    "velocity");
    const std::string step = mode == "standard" ? v : "(" + g + " + " + alpha + " * " + v + ")";
    xs.push_back(ctx.in(2 + i) + " - " + ctx.in(0) + " * " + step);
    vs.push_back(v);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  emit_outputs(ctx, xs);
  return {};
}

// V' = alpha V + (1 - alpha) g; H' = beta H + (1 - beta) g^2; after the first step the rate is
// bias-corrected, R * sqrt(1 - beta^T) / (1 - alpha^T); X' = (1 - post) (X - r V' / (sqrt(H') +
// eps)).
Status adam(Context& ctx) {
  ASSIGN_OR_RETURN(size_t n, tensor_count(ctx, 4, 3));
  const std::string alpha = f(ctx, "alpha", 0.9), beta = f(ctx, "beta", 0.999);
  const std::string eps = f(ctx, "epsilon", 1e-6);
  const float post = ctx.node().attr_float("norm_coefficient_post", 0.0f);
  const std::string t = ctx.in(1), rate = ctx.in(0);
  const std::string r =
      ctx.local(py::Expr::raw("torch.where(" + t + " > 0, " + rate + " * (1 - " + beta + " ** " +
                                  t + ").sqrt() / (1 - " + alpha + " ** " + t + "), " + rate + ")",
                              {py::Ns::kTorch}),
                "rate");
  std::vector<std::string> xs, vs, hs;
  for (size_t i = 0; i < n; ++i) {
    const std::string g = regularized(ctx, 2 + i, 2 + n + i);
    const std::string v = ctx.local(
        py::Expr::raw(alpha + " * " + ctx.in(2 + 2 * n + i) + " + (1 - " + alpha + ") * " + g, {}),
        "velocity");
    const std::string h = ctx.local(
        py::Expr::raw(
            beta + " * " + ctx.in(2 + 3 * n + i) + " + (1 - " + beta + ") * " + g + " * " + g, {}),
        "accum");
    std::string x = ctx.in(2 + i) + " - " + r + " * (" + v + " / (" + h + ".sqrt() + " + eps + "))";
    if (post != 0.0f) x = py_float(1.0 - post) + " * (" + x + ")";
    xs.push_back(x);
    vs.push_back(v);
    hs.push_back(h);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  emit_outputs(ctx, xs);
  return {};
}

}  // namespace

// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss (training_loss.cc).
void register_training_loss(HandlerRegistry& t);

void register_training(HandlerRegistry& t) {
  t.add("Adagrad", adagrad);
  t.add("Momentum", momentum);
  t.add("Adam", adam);
  register_training_loss(t);
}

}  // namespace torchonnx

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

py::Expr f(const Context& ctx, std::string_view attr, double fallback) {
  return py::lit(py_float(ctx.node().attr_float(attr, static_cast<float>(fallback))));
}

py::Expr in(Context& ctx, size_t i) { return py::Expr::name(ctx.in(i)); }

py::Expr mul(py::Expr a, py::Expr b) { return py::binary("*", std::move(a), std::move(b)); }
py::Expr add(py::Expr a, py::Expr b) { return py::binary("+", std::move(a), std::move(b)); }
py::Expr sub(py::Expr a, py::Expr b) { return py::binary("-", std::move(a), std::move(b)); }

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
py::Expr regularized(Context& ctx, size_t x, size_t g) {
  const float norm = ctx.node().attr_float("norm_coefficient", 0.0f);
  py::Expr grad = in(ctx, g);  // read first: buffer numbering as before
  py::Expr expr = norm == 0.0f ? grad : add(mul(py::lit(py_float(norm)), in(ctx, x)), grad);
  return py::Expr::name(ctx.local(expr, "grad"));
}

void emit_outputs(Context& ctx, std::vector<py::Expr> values) {
  ctx.emit_tuple(py::tuple(std::move(values)), "step", false);
}

// r = R / (1 + T * decay); H' = H + g^2; X' = X - r * g / (sqrt(H') + epsilon).
Status adagrad(Context& ctx) {
  ASSIGN_OR_RETURN(size_t n, tensor_count(ctx, 3, 2));
  const float decay = ctx.node().attr_float("decay_factor", 0.0f);
  py::Expr r;
  if (decay == 0.0f) {
    r = in(ctx, 0);
  } else {
    py::Expr t = in(ctx, 1);  // read first: buffer numbering as before
    py::Expr decayed =
        py::binary("/", in(ctx, 0), add(py::lit(1), mul(t, py::lit(py_float(decay)))));
    r = py::Expr::name(ctx.local(decayed, "rate"));
  }
  const py::Expr eps = f(ctx, "epsilon", 1e-6);
  std::vector<py::Expr> xs, hs;
  for (size_t i = 0; i < n; ++i) {
    const py::Expr g = regularized(ctx, 2 + i, 2 + n + i);
    const py::Expr h = py::Expr::name(ctx.local(add(in(ctx, 2 + 2 * n + i), mul(g, g)), "accum"));
    py::Expr step = py::binary("/", mul(r, g), add(h.method("sqrt"), eps));
    xs.push_back(sub(in(ctx, 2 + i), step));
    hs.push_back(h);
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  emit_outputs(ctx, std::move(xs));
  return {};
}

// V' = alpha * V + beta' * g with beta' = beta after the first step (T > 0), 1 before it;
// X' = X - R * V' (standard) or X - R * (g + alpha * V') (nesterov).
Status momentum(Context& ctx) {
  ASSIGN_OR_RETURN(size_t n, tensor_count(ctx, 3, 2));
  const std::string mode = ctx.node().attr_string("mode", "standard");
  if (mode != "standard" && mode != "nesterov") return ctx.error("unknown mode '" + mode + "'");
  const py::Expr alpha = f(ctx, "alpha", 0.0), beta = f(ctx, "beta", 0.0);
  // beta' is 1 on the first step; with beta = 1 it is 1 on every step and drops out.
  const bool unit_beta = ctx.node().attr_float("beta", 0.0f) == 1.0f;
  py::Expr beta_t;
  if (!unit_beta) {
    py::Expr first = py::binary(">", in(ctx, 1), py::lit(0));
    beta_t = py::Expr::name(
        ctx.local(py::call(py::torch("where"), {first, beta, py::lit("1.0")}), "beta"));
  }
  std::vector<py::Expr> xs, vs;
  for (size_t i = 0; i < n; ++i) {
    const py::Expr g = regularized(ctx, 2 + i, 2 + n + i);
    py::Expr velocity = add(mul(alpha, in(ctx, 2 + 2 * n + i)), unit_beta ? g : mul(beta_t, g));
    const py::Expr v = py::Expr::name(ctx.local(velocity, "velocity"));
    const py::Expr step = mode == "standard" ? v : py::paren(add(g, mul(alpha, v)));
    py::Expr rate = in(ctx, 0);  // read first: buffer numbering as before
    xs.push_back(sub(in(ctx, 2 + i), mul(rate, step)));
    vs.push_back(v);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  emit_outputs(ctx, std::move(xs));
  return {};
}

// V' = alpha V + (1 - alpha) g; H' = beta H + (1 - beta) g^2; after the first step the rate is
// bias-corrected, R * sqrt(1 - beta^T) / (1 - alpha^T); X' = (1 - post) (X - r V' / (sqrt(H') +
// eps)).
Status adam(Context& ctx) {
  ASSIGN_OR_RETURN(size_t n, tensor_count(ctx, 4, 3));
  const py::Expr alpha = f(ctx, "alpha", 0.9), beta = f(ctx, "beta", 0.999);
  const py::Expr eps = f(ctx, "epsilon", 1e-6);
  const float post = ctx.node().attr_float("norm_coefficient_post", 0.0f);
  const py::Expr t = in(ctx, 1), rate = in(ctx, 0);
  auto power = [&](const py::Expr& base) { return sub(py::lit(1), py::binary("**", base, t)); };
  py::Expr corrected = py::binary("/", mul(rate, power(beta).method("sqrt")), power(alpha));
  py::Expr first = py::binary(">", t, py::lit(0));
  const py::Expr r =
      py::Expr::name(ctx.local(py::call(py::torch("where"), {first, corrected, rate}), "rate"));
  std::vector<py::Expr> xs, vs, hs;
  for (size_t i = 0; i < n; ++i) {
    const py::Expr g = regularized(ctx, 2 + i, 2 + n + i);
    py::Expr velocity = add(mul(alpha, in(ctx, 2 + 2 * n + i)), mul(sub(py::lit(1), alpha), g));
    const py::Expr v = py::Expr::name(ctx.local(velocity, "velocity"));
    py::Expr accum = add(mul(beta, in(ctx, 2 + 3 * n + i)), mul(mul(sub(py::lit(1), beta), g), g));
    const py::Expr h = py::Expr::name(ctx.local(accum, "accum"));
    py::Expr x = sub(in(ctx, 2 + i), mul(r, py::binary("/", v, add(h.method("sqrt"), eps))));
    if (post != 0.0f) x = mul(py::lit(py_float(1.0 - post)), x);
    xs.push_back(x);
    vs.push_back(v);
    hs.push_back(h);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  emit_outputs(ctx, std::move(xs));
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

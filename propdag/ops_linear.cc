// Affine arithmetic: Add/Sub (constant or two variables), Mul/Div by constants, Neg, Gemm,
// MatMul with a constant operand, BatchNormalization (inference form), ReduceSum/ReduceMean.
#include <cmath>
#include <functional>

#include "common/eval.h"
#include "propdag/ops_util.h"

namespace propdag {
namespace {

using common::Dims;
using common::num_elements;
using common::Result;

Result<Dims> out_shape(const OpContext& ctx) {
  auto s = common::broadcast_shapes(ctx.shape(0), ctx.shape(1));
  if (!s) return ctx.error("input shapes do not broadcast");
  return *s;
}

// Add, Sub: every variable operand becomes a term, every constant one goes to the bias.
Result<OpOutputs> add_sub(const OpContext& ctx, double sign_b) {
  ASSIGN_OR_RETURN(Dims out, out_shape(ctx));
  int64_t n = num_elements(out);
  std::vector<LinearTerm> terms;
  Vec bias = Vec::Zero(n);
  for (int slot = 0; slot < 2; ++slot) {
    double coef = slot == 0 ? 1.0 : sign_b;
    if (ctx.variable(slot)) {
      terms.push_back(broadcast_term(slot, ctx.shape(slot), out, coef));
      continue;
    }
    add_broadcast_constant(*ctx.constants[slot], out, coef, bias);
  }
  return affine_output(std::move(terms), std::move(bias), out);
}

Result<OpOutputs> add_rule(const OpContext& ctx) { return add_sub(ctx, 1.0); }
Result<OpOutputs> sub_rule(const OpContext& ctx) { return add_sub(ctx, -1.0); }

// Mul / Div: x * c, c * x, x / c; two variables and c / x go to the interval rule
// (ops_nonlinear.cc).
Result<OpOutputs> scale_rule(const OpContext& ctx, bool divide) {
  if (ctx.variable(1) && (ctx.variable(0) || divide)) return interval_product(ctx, divide);
  int var = ctx.variable(0) ? 0 : 1;
  ASSIGN_OR_RETURN(Dims out, out_shape(ctx));
  // The constant is kept at its own size and read through its broadcast.
  const common::Tensor& konst = *ctx.constants[1 - var];
  Gather g;
  g.rows = num_elements(out);
  g.cols = num_elements(ctx.shape(var));
  g.col = IndexMap::broadcast(ctx.shape(var), out);
  g.values = konst.to_double();
  if (divide)
    for (double& v : g.values) v = 1.0 / v;
  g.scale_at = IndexMap::broadcast(konst.dims, out);
  return affine_output(one_term(gather_term(var, std::move(g))), Vec::Zero(num_elements(out)), out);
}

Result<OpOutputs> mul_rule(const OpContext& ctx) { return scale_rule(ctx, false); }
Result<OpOutputs> div_rule(const OpContext& ctx) { return scale_rule(ctx, true); }

Result<OpOutputs> neg_rule(const OpContext& ctx) {
  const Dims& x = ctx.shape(0);
  return affine_output(one_term(broadcast_term(0, x, x, -1.0)), Vec::Zero(num_elements(x)), x);
}

// A batched product out[b, m, n] = sum_k A[b, m, k] * B[b, k, n] where exactly one operand is
// variable; `a_at` / `b_at` give flat indices of the operands (batch broadcasting folded in).
struct Product {
  int64_t batch, m, k, n;
  std::function<int64_t(int64_t, int64_t, int64_t)> a_at, b_at;
};

// The constant operand is read in place (no copy of a large weight as doubles).
LinearTerm product_term(const Product& p, int var_slot, bool a_variable,
                        const common::Tensor& konst, int64_t var_size, double alpha) {
  if (a_variable && p.batch * p.m == 1) {  // dense row: W(n, k) = B[k, n]
    LinearTerm t;
    t.slot = var_slot;
    t.dense = true;
    // Float data times alpha = 1, each entry written once: exact as float.
    if (konst.dtype == common::DType::kFloat && alpha == 1.0 &&
        p.n * var_size >= kFloatWeightEntries) {
      t.wf = Eigen::MatrixXf::Zero(p.n, var_size);
      for (int64_t k = 0; k < p.k; ++k)
        for (int64_t j = 0; j < p.n; ++j)
          t.wf(j, p.a_at(0, 0, k)) = static_cast<float>(konst.double_at(p.b_at(0, k, j)));
      return t;
    }
    t.w = Mat::Zero(p.n, var_size);
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t j = 0; j < p.n; ++j)
        t.w(j, p.a_at(0, 0, k)) += alpha * konst.double_at(p.b_at(0, k, j));
    return t;
  }
  std::vector<Eigen::Triplet<double>> entries;
  entries.reserve(p.batch * p.m * p.n * p.k);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j)
        for (int64_t k = 0; k < p.k; ++k) {
          int64_t row = (b * p.m + i) * p.n + j;
          int64_t a = p.a_at(b, i, k), bb = p.b_at(b, k, j);
          if (a_variable)
            entries.emplace_back(row, a, alpha * konst.double_at(bb));
          else
            entries.emplace_back(row, bb, alpha * konst.double_at(a));
        }
  return sparse_term(var_slot, p.batch * p.m * p.n, var_size, entries);
}

Result<OpOutputs> gemm_rule(const OpContext& ctx) {
  if (ctx.variable(0) == ctx.variable(1))
    return ctx.error("Gemm needs exactly one variable operand among A and B");
  bool ta = ctx.node.attr_int("transA", 0) != 0, tb = ctx.node.attr_int("transB", 0) != 0;
  double alpha = ctx.node.attr_float("alpha", 1.0f), beta = ctx.node.attr_float("beta", 1.0f);
  const Dims &sa = ctx.shape(0), &sb = ctx.shape(1);
  if (sa.size() != 2 || sb.size() != 2) return ctx.error("Gemm operands must be 2-D");
  Product p{1, ta ? sa[1] : sa[0], ta ? sa[0] : sa[1], tb ? sb[0] : sb[1], nullptr, nullptr};
  int64_t M = p.m, K = p.k, N = p.n;
  p.a_at = [=](int64_t, int64_t i, int64_t k) { return ta ? k * M + i : i * K + k; };
  p.b_at = [=](int64_t, int64_t k, int64_t j) { return tb ? j * K + k : k * N + j; };
  bool a_var = ctx.variable(0);
  int var = a_var ? 0 : 1;
  std::vector<LinearTerm> terms = one_term(
      product_term(p, var, a_var, *ctx.constants[1 - var], num_elements(ctx.shape(var)), alpha));
  Dims out{M, N};
  Vec bias = Vec::Zero(M * N);
  if (ctx.present(2)) {
    if (!ctx.constants[2]) return ctx.error("Gemm bias C must be constant");
    std::vector<double> c = broadcast_constant(*ctx.constants[2], out);
    if (c.empty()) return ctx.error("Gemm bias C does not broadcast to the output");
    for (int64_t i = 0; i < M * N; ++i) bias[i] = beta * c[i];
  }
  return affine_output(std::move(terms), std::move(bias), out);
}

Result<OpOutputs> matmul_rule(const OpContext& ctx) {
  if (ctx.variable(0) && ctx.variable(1)) return two_variable_matmul(ctx);
  if (!ctx.variable(0) && !ctx.variable(1)) return ctx.error("MatMul of two constants has no rule");
  ASSIGN_OR_RETURN(MatMulShape s, matmul_shape(ctx));
  const int64_t M = s.m, K = s.k, N = s.n, B = static_cast<int64_t>(s.a_batch.size());
  Product p{B, M, K, N, nullptr, nullptr};
  p.a_at = [=](int64_t bi, int64_t i, int64_t k) { return (s.a_batch[bi] * M + i) * K + k; };
  p.b_at = [=](int64_t bi, int64_t k, int64_t j) { return (s.b_batch[bi] * K + k) * N + j; };
  bool a_var = ctx.variable(0);
  int var = a_var ? 0 : 1;
  std::vector<LinearTerm> terms = one_term(
      product_term(p, var, a_var, *ctx.constants[1 - var], num_elements(ctx.shape(var)), 1));
  return affine_output(std::move(terms), Vec::Zero(B * M * N), s.out);
}

// y = scale * (x - mean) / sqrt(var + eps) + bias, per channel (axis 1).
Result<OpOutputs> batchnorm_rule(const OpContext& ctx) {
  for (size_t i = 1; i < 5; ++i)
    if (!ctx.present(i) || ctx.variable(i))
      return ctx.error("BatchNormalization needs constant parameters");
  const Dims& x = ctx.shape(0);
  if (x.size() < 2) return ctx.error("BatchNormalization input must have a channel axis");
  double eps = ctx.node.attr_float("epsilon", 1e-5f);
  std::vector<double> s = ctx.constants[1]->to_double(), b = ctx.constants[2]->to_double(),
                      mean = ctx.constants[3]->to_double(), var = ctx.constants[4]->to_double();
  int64_t n = num_elements(x), channels = x[1], inner = n / (x[0] * channels);
  if (static_cast<int64_t>(s.size()) != channels) return ctx.error("BatchNormalization scale size");
  Gather g;  // the identity times each channel's factor
  g.rows = g.cols = n;
  g.col = IndexMap::identity(n);
  g.scale_at = IndexMap::broadcast({channels, 1}, {x[0], channels, inner});
  Vec bias(n);
  for (int64_t c = 0; c < channels; ++c) g.values.push_back(s[c] / std::sqrt(var[c] + eps));
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = (i / inner) % channels;
    bias[i] = b[c] - g.values[c] * mean[c];
  }
  return affine_output(one_term(gather_term(0, std::move(g))), std::move(bias), x);
}

// ReduceSum / ReduceMean over constant axes (attribute, or input 1 in later opsets).
Result<OpOutputs> reduce(const OpContext& ctx, bool mean) {
  if (ctx.variable(1)) return ctx.error("reduction axes must be constant");
  const Dims& x = ctx.shape(0);
  const int64_t rank = static_cast<int64_t>(x.size());
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, ints_input_or_attr(ctx, 1, "axes"));
  std::vector<bool> reduced(rank,
                            axes.empty() && ctx.node.attr_int("noop_with_empty_axes", 0) == 0);
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t ax, axis_at(ctx, a, rank));
    reduced[ax] = true;
  }
  const bool keep = ctx.node.attr_int("keepdims", 1) != 0;
  Dims out, kept;  // kept: x's dims with reduced ones as 1 (the output's elements, row-major)
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    kept.push_back(reduced[d] ? 1 : x[d]);
    if (reduced[d]) count *= x[d];
    if (!reduced[d] || keep) out.push_back(reduced[d] ? 1 : x[d]);
  }
  const int64_t n = num_elements(x);
  const std::vector<int64_t> xs = strides_of(x), ks = strides_of(kept);
  std::vector<Eigen::Triplet<double>> entries;
  entries.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[d]) row += (i / xs[d]) % x[d] * ks[d];
    entries.emplace_back(row, i, mean ? 1.0 / static_cast<double>(count) : 1.0);
  }
  std::vector<LinearTerm> terms = one_term(sparse_term(0, num_elements(kept), n, entries));
  return affine_output(std::move(terms), Vec::Zero(num_elements(kept)), out);
}

Result<OpOutputs> reduce_sum_rule(const OpContext& ctx) { return reduce(ctx, false); }
Result<OpOutputs> reduce_mean_rule(const OpContext& ctx) { return reduce(ctx, true); }

}  // namespace

void add_linear_rules(RuleTable& table) {
  table.insert(table.end(), {{"Add", add_rule},
                             {"Sub", sub_rule},
                             {"Mul", mul_rule},
                             {"Div", div_rule},
                             {"Neg", neg_rule},
                             {"Gemm", gemm_rule},
                             {"MatMul", matmul_rule},
                             {"BatchNormalization", batchnorm_rule},
                             {"ReduceSum", reduce_sum_rule},
                             {"ReduceMean", reduce_mean_rule}});
}

}  // namespace propdag

// Gemm and MatMul with a constant operand (affine); MatMul of two variables goes to the interval
// rule of elementwise_nonlinear.cc.
#include <functional>

#include "propdag/ops/util.h"

namespace propdag {
namespace {

using common::Dims;
using common::num_elements;
using common::Result;

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

}  // namespace

void add_linalg_rules(RuleTable& table) {
  table.insert(table.end(), {{"Gemm", gemm_rule}, {"MatMul", matmul_rule}});
}

}  // namespace propdag

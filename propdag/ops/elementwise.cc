// Affine arithmetic: Add/Sub (constant or two variables), Mul/Div by constants, Neg. The other
// elementwise ops are in elementwise_nonlinear.cc (Pow, Sin, Cos, Floor, products of
// variables) and elementwise_compare.cc (Cast, Clip, Min, Max, Equal).
#include <cmath>
#include <functional>

#include "common/eval/eval.h"
#include "propdag/ops/util.h"

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
// (elementwise_nonlinear.cc).
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

}  // namespace

void add_elementwise_rules(RuleTable& table) {
  table.insert(table.end(), {{"Add", add_rule},
                             {"Sub", sub_rule},
                             {"Mul", mul_rule},
                             {"Div", div_rule},
                             {"Neg", neg_rule}});
}

}  // namespace propdag

// Activations: Relu, LeakyRelu, Sigmoid, Tanh (elementwise and monotone: monotone_elementwise,
// which Sign in elementwise_nonlinear.cc uses too) and Softmax (interval).
#include <algorithm>
#include <cmath>
#include <utility>

#include "propdag/ops/util.h"
#include "propdag/relax.h"

namespace propdag {
namespace {

using common::Result;

// A monotone non-decreasing elementwise function with its relaxation on [l, u].
class ElementwiseOp : public BoundOp, public ScalarRule {
 public:
  using Fn = double (*)(double, double);
  using RelaxFn = Lines (*)(double, double, double);
  ElementwiseOp(Fn f, RelaxFn lines, double param, bool kink_at_zero)
      : f_(f), lines_(lines), param_(param), kink_at_zero_(kink_at_zero) {}

  Interval interval(const std::vector<const Interval*>& in) const override {
    Interval out{in[0]->lo, in[0]->hi};
    for (Eigen::Index i = 0; i < out.size(); ++i) {
      out.lo[i] = f_(out.lo[i], param_);
      out.hi[i] = f_(out.hi[i], param_);
    }
    return out;
  }

  Relaxation relax(const std::vector<const Interval*>& in, const Interval&) const override {
    Relaxation r;
    r.kind = Relaxation::Kind::kElementwise;
    Eigen::Index n = in[0]->size();
    r.lo_slope.resize(n), r.lo_bias.resize(n), r.up_slope.resize(n), r.up_bias.resize(n);
    r.lo_min.resize(n), r.lo_max.resize(n);
    r.t0 = r.t_min = r.t_max = Vec::Zero(2 * n);
    r.reach = Vec::Zero(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      Lines l = lines_(in[0]->lo[i], in[0]->hi[i], param_);
      r.lo_slope[i] = l.lo_slope, r.lo_bias[i] = l.lo_bias;
      r.up_slope[i] = l.up_slope, r.up_bias[i] = l.up_bias;
      r.lo_min[i] = l.lo_min, r.lo_max[i] = l.lo_max;
      if (l.curve == nullptr) continue;
      r.curve = l.curve, r.reach[i] = l.reach;
      r.t0[i] = l.lo_t, r.t_min[i] = l.lo_t_min, r.t_max[i] = l.lo_t_max;
      r.t0[n + i] = l.up_t, r.t_min[n + i] = l.up_t_min, r.t_max[n + i] = l.up_t_max;
    }
    if (r.curve == nullptr) r.t0 = r.t_min = r.t_max = r.reach = Vec();
    return r;
  }

  bool linear_on_each_side_of_zero() const override { return kink_at_zero_; }
  const ScalarRule* scalar_rule() const override { return this; }
  std::pair<double, double> range(double l, double u) const override {
    return {f_(l, param_), f_(u, param_)};
  }
  bool has_lines() const override { return true; }
  Lines lines(double l, double u, double, double) const override { return lines_(l, u, param_); }

 private:
  Fn f_;
  RelaxFn lines_;
  double param_;
  bool kink_at_zero_;
};

}  // namespace

common::Result<OpOutputs> monotone_elementwise(const OpContext& ctx, MonotoneFn f, MonotoneLines r,
                                               double param, bool kink_at_zero) {
  OpOutputs out;
  out.push_back({std::make_unique<ElementwiseOp>(f, r, param, kink_at_zero), ctx.shape(0)});
  return out;
}

namespace {

// a = 0 (Relu) gives 0 below 0, also at -inf (where a * x would be NaN).
double leaky(double x, double a) { return x >= 0 ? x : (a == 0 ? 0.0 : a * x); }
double sigmoid(double x, double) { return 1.0 / (1.0 + std::exp(-x)); }
double tanh_fn(double x, double) { return std::tanh(x); }

Lines leaky_lines(double l, double u, double a) { return leaky_relu_lines(l, u, a); }
Lines sigmoid_relax(double l, double u, double) { return sigmoid_lines(l, u); }
Lines tanh_relax(double l, double u, double) { return tanh_lines(l, u); }

Result<OpOutputs> relu_rule(const OpContext& ctx) {
  return monotone_elementwise(ctx, leaky, leaky_lines, 0, true);
}
Result<OpOutputs> leaky_relu_rule(const OpContext& ctx) {
  double alpha = ctx.node.attr_float("alpha", 0.01f);
  if (alpha < 0 || alpha > 1) return ctx.error("LeakyRelu alpha outside [0, 1] has no rule");
  return monotone_elementwise(ctx, leaky, leaky_lines, alpha, true);
}
Result<OpOutputs> sigmoid_rule(const OpContext& ctx) {
  return monotone_elementwise(ctx, sigmoid, sigmoid_relax, 0);
}
Result<OpOutputs> tanh_rule(const OpContext& ctx) {
  return monotone_elementwise(ctx, tanh_fn, tanh_relax, 0);
}

// Softmax over `axis`: out_i in [e^{l_i} / (e^{l_i} + sum_{j!=i} e^{u_j}),
//                                e^{u_i} / (e^{u_i} + sum_{j!=i} e^{l_j})], relaxed to that
//                                interval.
class SoftmaxOp : public BoundOp {
 public:
  SoftmaxOp(int64_t outer, int64_t len, int64_t inner) : outer_(outer), len_(len), inner_(inner) {}
  Interval interval(const std::vector<const Interval*>& in) const override {
    Interval out{in[0]->lo, in[0]->hi};
    for (int64_t o = 0; o < outer_; ++o)
      for (int64_t k = 0; k < inner_; ++k) row(*in[0], out, o * len_ * inner_ + k);
    return out;
  }
  Relaxation relax(const std::vector<const Interval*>&, const Interval&) const override {
    return {};
  }

 private:
  // out_i = 1 / (1 + sum_{j != i} exp(x_j - x_i)): the lower bound takes x_j at its upper and x_i
  // at its lower bound, the upper bound the reverse. exp overflowing to inf gives 0, not NaN.
  void row(const Interval& x, Interval& out, int64_t base) const {
    for (int64_t i = 0; i < len_; ++i) {
      double lo_i = x.lo[base + i * inner_], hi_i = x.hi[base + i * inner_];
      double to_lo = 0, to_hi = 0;
      for (int64_t j = 0; j < len_; ++j) {
        if (j == i) continue;
        to_lo += std::exp(x.hi[base + j * inner_] - lo_i);
        to_hi += std::exp(x.lo[base + j * inner_] - hi_i);
      }
      out.lo[base + i * inner_] = 1.0 / (1.0 + to_lo);
      out.hi[base + i * inner_] = 1.0 / (1.0 + to_hi);
    }
  }
  int64_t outer_, len_, inner_;
};

Result<OpOutputs> softmax_rule(const OpContext& ctx) {
  const common::Dims& x = ctx.shape(0);
  const auto rank = static_cast<int64_t>(x.size());
  ASSIGN_OR_RETURN(const int64_t axis,
                   axis_at(ctx, ctx.node.attr_int("axis", ctx.opset < 13 ? 1 : -1), rank));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= i == axis ? 1 : x[i];
  int64_t len = x[axis];
  // Before opset 13, Softmax flattens [0, axis) and [axis, rank) and normalizes the second part.
  if (ctx.opset < 13) len *= inner, inner = 1;
  OpOutputs out;
  out.push_back({std::make_unique<SoftmaxOp>(outer, len, inner), x});
  return out;
}

}  // namespace

void add_activation_rules(RuleTable& table) {
  table.insert(table.end(), {{"Relu", relu_rule},
                             {"LeakyRelu", leaky_relu_rule},
                             {"Sigmoid", sigmoid_rule},
                             {"Tanh", tanh_rule},
                             {"Softmax", softmax_rule}});
}

}  // namespace propdag

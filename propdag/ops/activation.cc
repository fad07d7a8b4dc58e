// Activations: Relu, LeakyRelu, Sigmoid, Tanh, Softplus (elementwise and monotone:
// monotone_elementwise, which Sign in elementwise_nonlinear.cc uses too) and Softmax (lines through
// its decomposition).
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

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
// Softplus log(1 + e^x): convex, relax.h's bent_lines (chord above, tunable tangents below).
double softplus_fn(double x, double) { return softplus_curve().f(x); }
Lines softplus_relax(double l, double u, double) { return softplus_lines(l, u); }
Result<OpOutputs> softplus_rule(const OpContext& ctx) {
  return monotone_elementwise(ctx, softplus_fn, softplus_relax, 0);
}

// Softmax over `axis`. Interval: out_i in [e^{l_i} / (e^{l_i} + sum_{j!=i} e^{u_j}),
// e^{u_i} / (e^{u_i} + sum_{j!=i} e^{l_j})]. Relaxation: per group of `len` inputs, lines through
// out_i = e_i r with e_j = exp(x_j - c) (c the group's largest upper bound: softmax ignores a
// shift), s = sum_j e_j and r = 1 / s, as auto_LiRPA bounds the decomposed softmax:
//   e_j: tangent at t_j = min((l_j + u_j) / 2, l_j + 0.99) below, the chord above;
//   s: the sums of those lines;
//   r in [1 / S_hi, 1 / S_lo] (S the sums of e's ends): below, the tangent parallel to the chord
//     (at q = sqrt(S_lo S_hi)) applied to s's upper line; above, the chord applied to s's lower
//     line (1 / s decreases);
//   e_i r: McCormick's planes r_lo e + e_lo r - e_lo r_lo below and r_hi e + e_lo r - e_lo r_hi
//     above, with e's and r's lower (upper) lines (all coefficients are nonnegative).
// Each bias is widened by 1e-12 of its terms' magnitude. A group whose bounds are not finite or
// whose S_lo underflows keeps its output interval.
class SoftmaxOp : public BoundOp {
 public:
  SoftmaxOp(int64_t outer, int64_t len, int64_t inner) : outer_(outer), len_(len), inner_(inner) {}
  Interval interval(const std::vector<const Interval*>& in) const override {
    Interval out{in[0]->lo, in[0]->hi};
    for (int64_t o = 0; o < outer_; ++o)
      for (int64_t k = 0; k < inner_; ++k) row(*in[0], out, o * len_ * inner_ + k);
    return out;
  }
  Relaxation relax(const std::vector<const Interval*>& in, const Interval& out) const override {
    Relaxation r;
    // At one point the output interval is exact (and the point search differentiates it).
    if (in[0]->lo == in[0]->hi) return r;
    r.kind = Relaxation::Kind::kLinear;
    const Eigen::Index n = out.size();
    r.lo_bias = out.lo, r.up_bias = out.hi;
    std::vector<Eigen::Triplet<double>> lo, up;
    lo.reserve(n * len_), up.reserve(n * len_);
    for (int64_t o = 0; o < outer_; ++o)
      for (int64_t k = 0; k < inner_; ++k) group(*in[0], o * len_ * inner_ + k, r, lo, up);
    Relaxation::Maps& maps = r.new_maps();
    maps.lo.resize(n, n), maps.up.resize(n, n);
    maps.lo.setFromTriplets(lo.begin(), lo.end());
    maps.up.setFromTriplets(up.begin(), up.end());
    return r;
  }
  int64_t weight_entries() const override { return outer_ * inner_ * len_ * len_; }

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

  // The lines of one group (elements base + j * inner_), into r's biases and the triplets.
  void group(const Interval& x, int64_t base, Relaxation& r,
             std::vector<Eigen::Triplet<double>>& lo,
             std::vector<Eigen::Triplet<double>>& up) const {
    const auto at = [&](int64_t j) { return base + j * inner_; };
    double c = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < len_; ++j) {
      if (!std::isfinite(x.lo[at(j)]) || !std::isfinite(x.hi[at(j)])) return;
      c = std::max(c, x.hi[at(j)]);
    }
    // e_j's ends (e_lo, e_hi), its tangent (ta x + tb) and chord (ka x + kb).
    std::vector<double> e_lo(len_), e_hi(len_), ta(len_), tb(len_), ka(len_), kb(len_), m(len_);
    // Sums over j: e's ends, the lines' biases, and |coefficient| max(|l|, |u|) + |bias|.
    double s_lo = 0, s_hi = 0, sum_tb = 0, sum_kb = 0, mag_t = 0, mag_k = 0;
    for (int64_t j = 0; j < len_; ++j) {
      const double l = x.lo[at(j)], u = x.hi[at(j)];
      e_lo[j] = std::exp(l - c), e_hi[j] = std::exp(u - c);
      const double t = std::min((l + u) / 2, l + 0.99), et = std::exp(t - c);
      ta[j] = et, tb[j] = et * (1 - t);
      ka[j] = u > l ? (e_hi[j] - e_lo[j]) / (u - l) : 0.0;
      kb[j] = e_lo[j] - ka[j] * l;
      m[j] = std::max(std::abs(l), std::abs(u));
      s_lo += e_lo[j], s_hi += e_hi[j], sum_tb += tb[j], sum_kb += kb[j];
      mag_t += ta[j] * m[j] + std::abs(tb[j]), mag_k += ka[j] * m[j] + std::abs(kb[j]);
    }
    if (!(s_lo > 1e-300)) return;
    const double q = std::sqrt(s_lo * s_hi), r_lo = 1 / s_hi, r_hi = 1 / s_lo;
    // r >= 2 / q - s_up(x) / q^2;  r <= 1 / s_lo + 1 / s_hi - s_low(x) / (s_lo s_hi).
    const double rl_bias = 2 / q - sum_kb / (q * q), ru_bias = r_hi + r_lo - sum_tb * r_lo * r_hi;
    for (int64_t i = 0; i < len_; ++i) {
      const double el = e_lo[i];
      std::vector<double> a(len_), b(len_);
      double a_mid = 0, b_mid = 0;  // the lines at the box's centre, less their biases
      for (int64_t j = 0; j < len_; ++j) {
        a[j] = -el * ka[j] / (q * q), b[j] = -el * ta[j] * r_lo * r_hi;
        if (j == i) a[j] += r_lo * ta[i], b[j] += r_hi * ka[i];
        const double mid = (x.lo[at(j)] + x.hi[at(j)]) / 2;
        a_mid += a[j] * mid, b_mid += b[j] * mid;
      }
      // The magnitudes of the terms each row sums, for its rounding.
      const double lo_mag =
          r_lo * (ta[i] * m[i] + std::abs(tb[i])) + el * (2 / q + mag_k / (q * q) + r_lo);
      const double up_mag =
          r_hi * (ka[i] * m[i] + std::abs(kb[i])) + el * (2 * r_hi + r_lo + mag_t * r_lo * r_hi);
      const double lo_bias = r_lo * tb[i] + el * rl_bias - el * r_lo - 1e-12 * (1 + lo_mag);
      const double up_bias = r_hi * kb[i] + el * ru_bias - el * r_hi + 1e-12 * (1 + up_mag);
      // A line is kept where it beats the output interval at the centre (on wide boxes the
      // chords of exp and 1 / s are far looser than the interval).
      if (a_mid + lo_bias > r.lo_bias[at(i)]) {
        for (int64_t j = 0; j < len_; ++j) lo.emplace_back(at(i), at(j), a[j]);
        r.lo_bias[at(i)] = lo_bias;
      }
      if (b_mid + up_bias < r.up_bias[at(i)]) {
        for (int64_t j = 0; j < len_; ++j) up.emplace_back(at(i), at(j), b[j]);
        r.up_bias[at(i)] = up_bias;
      }
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
                             {"Softplus", softplus_rule},
                             {"Softmax", softmax_rule}});
}

}  // namespace propdag

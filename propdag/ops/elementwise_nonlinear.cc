// Nonlinear ops beyond the activations: Pow by a constant integer, Sin, Cos, Floor, Sign, Exp,
// Log (elementwise), and the product, quotient and matrix product of two variable tensors
// and the quotient of a constant by a variable. Even powers get a linear relaxation (tangent below,
// chord above), Sin and Cos lines of the chord's slope (relax.h), products, quotients and matrix
// products of two variables McCormick planes (sums of them); Sign the constant lines between
// sign(l) and sign(u); Exp its chord above and its tangents below, Log the reverse
// (relax.h's bent_lines, the tangents tuned by alpha); the others are relaxed to their output
// interval, which CROWN then treats as a fresh input.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <tuple>

#include "common/eval/eval.h"
#include "propdag/ops/util.h"
#include "propdag/relax.h"

namespace propdag {
namespace {

using common::num_elements;
using common::Result;

constexpr double kTwoPi = 2 * std::numbers::pi;

// The range of f over [l, u] for f = sin(x + shift): 1 at pi/2 + 2k pi - shift, -1 at
// -pi/2 + 2k pi - shift, otherwise at the ends.
std::pair<double, double> sine_range(double l, double u, double shift) {
  if (!(u - l < kTwoPi)) return {-1.0, 1.0};
  double a = std::sin(l + shift), b = std::sin(u + shift);
  double lo = std::min(a, b), hi = std::max(a, b);
  auto hits = [&](double peak) {  // a point peak + 2k pi inside [l, u]
    double k = std::ceil((l - peak) / kTwoPi);
    return peak + k * kTwoPi <= u;
  };
  if (hits(std::numbers::pi / 2 - shift)) hi = 1.0;
  if (hits(-std::numbers::pi / 2 - shift)) lo = -1.0;
  return {lo, hi};
}

std::pair<double, double> power_range(double l, double u, int64_t p) {
  double a = std::pow(l, p), b = std::pow(u, p);
  if (p % 2 == 1) return {a, b};
  if (l >= 0) return {a, b};
  if (u <= 0) return {b, a};
  return {0.0, std::max(a, b)};
}

// One scalar function per element of input 0.
class ScalarOp : public BoundOp, public ScalarRule {
 public:
  enum class Fn { kSin, kCos, kFloor, kPow };
  ScalarOp(Fn fn, int64_t power = 1) : fn_(fn), power_(power) {}
  bool rounds_to_integers() const override { return fn_ == Fn::kFloor; }
  const ScalarRule* scalar_rule() const override { return this; }

  Interval interval(const std::vector<const Interval*>& in) const override {
    Interval out{in[0]->lo, in[0]->hi};
    for (Eigen::Index i = 0; i < out.size(); ++i) {
      auto [lo, hi] = range(in[0]->lo[i], in[0]->hi[i]);
      out.lo[i] = lo, out.hi[i] = hi;
    }
    return out;
  }

  Relaxation relax(const std::vector<const Interval*>& in, const Interval& out) const override {
    if (!has_lines()) return {};  // the output interval
    Relaxation r;
    r.kind = Relaxation::Kind::kElementwise;
    Eigen::Index n = in[0]->size();
    r.lo_slope.resize(n), r.lo_bias.resize(n), r.up_slope.resize(n), r.up_bias.resize(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      Lines l = lines(in[0]->lo[i], in[0]->hi[i], out.lo[i], out.hi[i]);
      r.lo_slope[i] = l.lo_slope, r.lo_bias[i] = l.lo_bias;
      r.up_slope[i] = l.up_slope, r.up_bias[i] = l.up_bias;
    }
    return r;
  }

  std::pair<double, double> range(double l, double u) const override {
    switch (fn_) {
      case Fn::kSin:
        return sine_range(l, u, 0);
      case Fn::kCos:
        return sine_range(l, u, std::numbers::pi / 2);
      case Fn::kFloor:
        return {std::floor(l), std::floor(u)};
      case Fn::kPow:
        return power_range(l, u, power_);
    }
    return {-kInf, kInf};
  }
  // Sin, Cos and even powers have lines; Floor and odd powers the output interval.
  bool has_lines() const override {
    return fn_ == Fn::kSin || fn_ == Fn::kCos || (fn_ == Fn::kPow && power_ % 2 == 0);
  }
  Lines lines(double l, double u, double lo, double hi) const override {
    Lines x = fn_ == Fn::kPow ? even_power_lines(l, u, lo, hi)
                              : sine_lines(l, u, fn_ == Fn::kCos, lo, hi);
    x.lo_min = x.lo_max = x.lo_slope;  // fixed
    return x;
  }

 private:
  // x^p with even p is convex: the chord lies above it on [l, u], the tangent at the midpoint
  // below. Both are widened by a relative margin so that rounding never makes them cross.
  Lines even_power_lines(double l, double u, double lo, double hi) const {
    if (!(u - l > 1e-9) || !std::isfinite(hi)) return constant_lines(lo, hi);
    double p = static_cast<double>(power_);
    double chord = (std::pow(u, power_) - std::pow(l, power_)) / (u - l);
    double m = (l + u) / 2, fm = std::pow(m, power_), slope = p * std::pow(m, power_ - 1);
    double slack = 1e-12 * (1.0 + std::abs(hi) + std::abs(lo));
    return {slope, fm - slope * m - slack, chord, std::pow(l, power_) - chord * l + slack};
  }

  Fn fn_;
  int64_t power_;
};

Result<OpOutputs> scalar(const OpContext& ctx, ScalarOp::Fn fn, int64_t power = 1) {
  OpOutputs out;
  out.push_back({std::make_unique<ScalarOp>(fn, power), ctx.shape(0)});
  return out;
}

Result<OpOutputs> sin_rule(const OpContext& ctx) { return scalar(ctx, ScalarOp::Fn::kSin); }
Result<OpOutputs> cos_rule(const OpContext& ctx) { return scalar(ctx, ScalarOp::Fn::kCos); }
Result<OpOutputs> floor_rule(const OpContext& ctx) { return scalar(ctx, ScalarOp::Fn::kFloor); }

Result<OpOutputs> pow_rule(const OpContext& ctx) {
  if (ctx.variable(1)) return ctx.error("no bound rule for Pow with a variable exponent");
  std::vector<double> e = ctx.constants[1]->to_double();
  if (e.empty() || std::any_of(e.begin(), e.end(), [&](double v) { return v != e[0]; }))
    return ctx.error("Pow needs one exponent for every element");
  if (e[0] < 1 || e[0] > 64 || e[0] != std::floor(e[0]))
    return ctx.error("Pow has a bound rule for integer exponents 1..64 only");
  if (num_elements(ctx.shape(1)) > 1 &&
      common::broadcast_shapes(ctx.shape(0), ctx.shape(1)) != ctx.shape(0))
    return ctx.error("Pow exponent broadcasts beyond the base");
  return scalar(ctx, ScalarOp::Fn::kPow, static_cast<int64_t>(e[0]));
}

// The range of a * b for a in [al, au], b in [bl, bu]. A NaN bound (an affine map of an infinite
// interval gives one) bounds nothing: the whole line.
std::pair<double, double> product_range(double al, double au, double bl, double bu) {
  if (std::isnan(al) || std::isnan(au) || std::isnan(bl) || std::isnan(bu)) return {-kInf, kInf};
  double c[4] = {al * bl, al * bu, au * bl, au * bu};
  for (double& v : c)
    if (std::isnan(v)) v = 0;  // 0 * inf: the finite factor is 0 there
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

bool finite(const Interval& b) { return b.lo.allFinite() && b.hi.allFinite(); }

// x^2 on [l, u]: the tangent at the midpoint below, the chord above.
Lines square_lines(double l, double u) {
  const double m = (l + u) / 2, slack = 1e-12 * (1.0 + l * l + u * u);
  return {2 * m, -m * m - slack, l + u, -l * u + slack};
}

// Lines in x as planes without a y term.
Planes planes_of(const Lines& l) { return {l.lo_slope, 0, l.lo_bias, l.up_slope, 0, l.up_bias}; }

// out = in0 * in1 or in0 / in1, broadcast, in1 variable; in0 variable too, or a constant
// (`numerator`, broadcast to the output) divided by in1. x * x is a square, not a product of
// independent factors.
class BilinearOp : public BoundOp, public PairRule {
 public:
  BilinearOp(std::vector<int64_t> a, std::vector<int64_t> b, bool divide, bool square,
             std::vector<double> numerator)
      : a_(std::move(a)),
        b_(std::move(b)),
        divide_(divide),
        square_(square),
        numerator_(std::move(numerator)) {}

  const PairRule* pair_rule() const override { return this; }
  const std::vector<int64_t>& x_index() const override { return a_; }
  const std::vector<int64_t>& y_index() const override { return b_; }
  bool uses_x() const override { return numerator_.empty(); }
  bool uses_y() const override { return !square_; }

  Interval interval(const std::vector<const Interval*>& in) const override {
    Eigen::Index n = static_cast<Eigen::Index>(a_.size());
    Interval out{Vec(n), Vec(n)};
    const bool konst = !numerator_.empty();
    for (Eigen::Index i = 0; i < n; ++i) {
      std::tie(out.lo[i], out.hi[i]) =
          range(i, konst ? 0 : in[0]->lo[a_[i]], konst ? 0 : in[0]->hi[a_[i]], in[1]->lo[b_[i]],
                in[1]->hi[b_[i]]);
    }
    return out;
  }
  std::pair<double, double> range(int64_t i, double al, double au, double bl,
                                  double bu) const override {
    if (!numerator_.empty()) al = au = numerator_[i];
    if (divide_) {
      if (square_) return {1.0, 1.0};  // x / x (x = 0 gives NaN, which no bound covers)
      if (bl <= 0 && bu >= 0)
        return al == 0 && au == 0 ? std::pair{0.0, 0.0} : std::pair{-kInf, kInf};
      return product_range(al, au, 1.0 / bu, 1.0 / bl);
    }
    return square_ ? power_range(al, au, 2) : product_range(al, au, bl, bu);
  }
  // McCormick planes per element (quotients: with 1 / y's lines, relax.h), a square's lines for
  // x * x; x / x is 1. A constant numerator's terms go to the bias. Unbounded inputs, or a
  // divisor whose interval holds 0, keep the output interval.
  bool planes(const std::vector<const Interval*>& in, std::vector<Planes>& out) const override {
    const bool konst = !numerator_.empty();
    if ((!konst && !finite(*in[0])) || !finite(*in[1])) return false;
    if (divide_ && !square_ && ((in[1]->lo.array() <= 0) && (in[1]->hi.array() >= 0)).any())
      return false;
    for (size_t i = 0; i < a_.size(); ++i) {
      const double lx = konst ? numerator_[i] : in[0]->lo[a_[i]];
      const double ux = konst ? numerator_[i] : in[0]->hi[a_[i]];
      const double ly = in[1]->lo[b_[i]], uy = in[1]->hi[b_[i]];
      if (square_) {
        out[i] = planes_of(divide_ ? constant_lines(1, 1) : square_lines(lx, ux));
      } else if (konst) {  // the constant's terms join the bias
        const Planes p = quotient_planes(lx, ux, ly, uy);
        out[i] = {0, p.lo_y, p.lo_bias + p.lo_x * lx, 0, p.up_y, p.up_bias + p.up_x * lx};
      } else {
        out[i] = divide_ ? quotient_planes(lx, ux, ly, uy) : product_planes(lx, ux, ly, uy);
      }
    }
    return true;
  }
  // A product of two variables: (ux - x)(uy - y) >= 0 and (ux - x)(y - ly) >= 0 too.
  bool other_planes(const std::vector<const Interval*>& in,
                    std::vector<Planes>& out) const override {
    if (!has_second_relax() || !finite(*in[0]) || !finite(*in[1])) return false;
    for (size_t i = 0; i < a_.size(); ++i)
      out[i] = product_planes_other(in[0]->lo[a_[i]], in[0]->hi[a_[i]], in[1]->lo[b_[i]],
                                    in[1]->hi[b_[i]]);
    return true;
  }
  Relaxation relax(const std::vector<const Interval*>& in, const Interval&) const override {
    std::vector<Planes> p(a_.size());
    if (!planes(in, p)) return {};
    return sum_of(in, p);
  }
  bool has_second_relax() const override { return !divide_ && !square_ && uses_x(); }
  std::optional<Relaxation> second_relax(const std::vector<const Interval*>& in) const override {
    std::vector<Planes> q(a_.size());
    if (!other_planes(in, q)) return std::nullopt;
    return sum_of(in, q);
  }

 private:
  Relaxation sum_of(const std::vector<const Interval*>& in, const std::vector<Planes>& p) const {
    const auto n = static_cast<int64_t>(a_.size());
    PlaneSum sum(n);
    for (int64_t i = 0; i < n; ++i) sum.add(i, uses_x() ? a_[i] : -1, uses_y() ? b_[i] : -1, p[i]);
    return sum.finish(uses_x() ? in[0]->size() : 0, in[1]->size());
  }

  std::vector<int64_t> a_, b_;
  bool divide_, square_;
  std::vector<double> numerator_;
};

// out[b, i, j] = sum_k A[b, i, k] * B[b, k, j], both variable: the sum of the terms' ranges.
class IntervalMatMulOp : public BoundOp {
 public:
  IntervalMatMulOp(std::vector<int64_t> amap, std::vector<int64_t> bmap, int64_t m, int64_t k,
                   int64_t n)
      : amap_(std::move(amap)), bmap_(std::move(bmap)), m_(m), k_(k), n_(n) {}

  Interval interval(const std::vector<const Interval*>& in) const override {
    const int64_t batch = static_cast<int64_t>(amap_.size());
    Interval out{Vec::Zero(batch * m_ * n_), Vec::Zero(batch * m_ * n_)};
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < m_; ++i)
        for (int64_t j = 0; j < n_; ++j) {
          int64_t row = (b * m_ + i) * n_ + j;
          for (int64_t k = 0; k < k_; ++k) {
            int64_t a = (amap_[b] * m_ + i) * k_ + k, c = (bmap_[b] * k_ + k) * n_ + j;
            auto [lo, hi] = product_range(in[0]->lo[a], in[0]->hi[a], in[1]->lo[c], in[1]->hi[c]);
            out.lo[row] += lo;
            out.hi[row] += hi;
          }
        }
    return out;
  }
  // Each output is a sum of products: the sum of their McCormick planes.
  Relaxation relax(const std::vector<const Interval*>& in, const Interval&) const override {
    if (!finite(*in[0]) || !finite(*in[1])) return {};
    return sum_of(in, product_planes);
  }
  // The sum of their other McCormick planes.
  bool has_second_relax() const override { return true; }
  std::optional<Relaxation> second_relax(const std::vector<const Interval*>& in) const override {
    if (!finite(*in[0]) || !finite(*in[1])) return std::nullopt;
    return sum_of(in, product_planes_other);
  }

 private:
  Relaxation sum_of(const std::vector<const Interval*>& in,
                    Planes (*planes)(double, double, double, double)) const {
    const auto batch = static_cast<int64_t>(amap_.size());
    PlaneSum sum(batch * m_ * n_);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < m_; ++i)
        for (int64_t j = 0; j < n_; ++j)
          for (int64_t k = 0; k < k_; ++k) {
            int64_t a = (amap_[b] * m_ + i) * k_ + k, c = (bmap_[b] * k_ + k) * n_ + j;
            sum.add((b * m_ + i) * n_ + j, a, c,
                    planes(in[0]->lo[a], in[0]->hi[a], in[1]->lo[c], in[1]->hi[c]));
          }
    return sum.finish(in[0]->size(), in[1]->size());
  }

  std::vector<int64_t> amap_, bmap_;
  int64_t m_, k_, n_;
};

// Sign: monotone, relaxed by the constant lines between sign(l) and sign(u) (the activations'
// monotone_elementwise).
double sign(double x, double) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }
Lines sign_relax(double l, double u, double) { return constant_lines(sign(l, 0), sign(u, 0)); }
Result<OpOutputs> sign_rule(const OpContext& ctx) {
  return monotone_elementwise(ctx, sign, sign_relax, 0);
}

double exp_fn(double x, double) { return std::exp(x); }
Lines exp_relax(double l, double u, double) { return exp_lines(l, u); }
Result<OpOutputs> exp_rule(const OpContext& ctx) {
  return monotone_elementwise(ctx, exp_fn, exp_relax, 0);
}

double log_fn(double x, double) { return std::log(x); }
Lines log_relax(double l, double u, double) { return log_lines(l, u); }
Result<OpOutputs> log_rule(const OpContext& ctx) {
  return monotone_elementwise(ctx, log_fn, log_relax, 0);
}

}  // namespace

Result<OpOutputs> interval_product(const OpContext& ctx, bool divide) {
  auto out = common::broadcast_shapes(ctx.shape(0), ctx.shape(1));
  if (!out) return ctx.error("input shapes do not broadcast");
  bool square = ctx.node.inputs[0] == ctx.node.inputs[1];
  std::vector<double> numerator;
  if (!ctx.variable(0)) numerator = broadcast_constant(*ctx.constants[0], *out);
  OpOutputs result;
  result.push_back({std::make_unique<BilinearOp>(common::broadcast_map(ctx.shape(0), *out),
                                                 common::broadcast_map(ctx.shape(1), *out), divide,
                                                 square, std::move(numerator)),
                    *out});
  return result;
}

Result<OpOutputs> two_variable_matmul(const OpContext& ctx) {
  ASSIGN_OR_RETURN(MatMulShape s, matmul_shape(ctx));
  OpOutputs result;
  result.push_back(
      {std::make_unique<IntervalMatMulOp>(s.a_batch, s.b_batch, s.m, s.k, s.n), s.out});
  return result;
}

void add_elementwise_nonlinear_rules(RuleTable& table) {
  table.insert(table.end(), {{"Pow", pow_rule},
                             {"Sin", sin_rule},
                             {"Cos", cos_rule},
                             {"Floor", floor_rule},
                             {"Sign", sign_rule},
                             {"Exp", exp_rule},
                             {"Log", log_rule}});
}

}  // namespace propdag

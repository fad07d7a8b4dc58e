// Casts, clamps and comparisons: Cast, Clip, Min, Max, Equal.
// Cast to a float type is the identity (bounds are kept in double); to a signed integer type it
// truncates toward zero (monotone, relaxed by slope-1 lines within 1 of x); to bool it tests
// x != 0 (interval). Clip and Min / Max with one variable input clamp it to constant ends:
// monotone and piecewise linear, relaxed like a ReLU where one end lies inside the input interval.
// Min / Max of several variable inputs and Equal are interval rules.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/dtype.h"
#include "common/eval/eval.h"
#include "propdag/ops/util.h"
#include "propdag/relax.h"

namespace propdag {
namespace {

using common::Dims;
using common::num_elements;
using common::Result;

// Lines of trunc(x) on [l, u]: x - 1 <= trunc(x) <= x for x >= 0, x <= trunc(x) <= x + 1 for
// x <= 0.
Lines trunc_lines(double l, double u) {
  if (std::trunc(l) == std::trunc(u)) return constant_lines(std::trunc(l), std::trunc(u));
  return {1, u <= 0 ? 0.0 : -1.0, 1, l >= 0 ? 0.0 : 1.0, 1, 1};
}

// min(max(x, a), b) with a <= b on [l, u].
Lines clamp_lines(double l, double u, double a, double b) {
  auto f = [&](double x) { return std::min(std::max(x, a), b); };
  if (u <= a || l >= b || l == u) return constant_lines(f(l), f(u));
  if (l >= a && u <= b) return {1, 0, 1, 0, 1, 1};
  if (u <= b) {  // a + relu(x - a)
    Lines r = leaky_relu_lines(l - a, u - a, 0);
    return {r.lo_slope, a - r.lo_slope * a + r.lo_bias,
            r.up_slope, a - r.up_slope * a + r.up_bias,
            r.lo_slope, r.lo_slope};
  }
  if (l >= a) {  // b - relu(b - x)
    Lines r = leaky_relu_lines(b - u, b - l, 0);
    return {r.up_slope, b - r.up_slope * b - r.up_bias,
            r.lo_slope, b - r.lo_slope * b - r.lo_bias,
            r.up_slope, r.up_slope};
  }
  // Both ends inside: lines of the chord's slope through the extreme kinks.
  double k = (f(u) - f(l)) / (u - l);
  double lo = std::min({f(l) - k * l, f(u) - k * u, a - k * a, b - k * b});
  double hi = std::max({f(l) - k * l, f(u) - k * u, a - k * a, b - k * b});
  return {k, lo, k, hi, k, k};
}

// One elementwise function of input 0 with per-element constant ends (kClamp) or none.
class ScalarMapOp : public BoundOp {
 public:
  enum class Fn { kTrunc, kNonzero, kClamp };
  ScalarMapOp(Fn fn, std::vector<double> lo_end = {}, std::vector<double> hi_end = {})
      : fn_(fn), a_(std::move(lo_end)), b_(std::move(hi_end)) {}

  Interval interval(const std::vector<const Interval*>& in) const override {
    Interval out{in[0]->lo, in[0]->hi};
    for (Eigen::Index i = 0; i < out.size(); ++i) {
      double l = in[0]->lo[i], u = in[0]->hi[i];
      if (fn_ == Fn::kNonzero) {
        bool zero_possible = l <= 0 && u >= 0, nonzero_possible = l < 0 || u > 0;
        out.lo[i] = zero_possible ? 0 : 1, out.hi[i] = nonzero_possible ? 1 : 0;
      } else if (fn_ == Fn::kTrunc) {
        out.lo[i] = std::trunc(l), out.hi[i] = std::trunc(u);
      } else {
        out.lo[i] = std::min(std::max(l, a_[i]), b_[i]);
        out.hi[i] = std::min(std::max(u, a_[i]), b_[i]);
      }
    }
    return out;
  }

  bool rounds_to_integers() const override { return fn_ == Fn::kTrunc; }

  Relaxation relax(const std::vector<const Interval*>& in, const Interval& out) const override {
    Relaxation r;
    r.kind = Relaxation::Kind::kElementwise;
    Eigen::Index n = in[0]->size();
    r.lo_slope.resize(n), r.lo_bias.resize(n), r.up_slope.resize(n), r.up_bias.resize(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      double l = in[0]->lo[i], u = in[0]->hi[i];
      Lines s = fn_ == Fn::kNonzero ? constant_lines(out.lo[i], out.hi[i])
                : fn_ == Fn::kTrunc ? trunc_lines(l, u)
                                    : clamp_lines(l, u, a_[i], b_[i]);
      r.lo_slope[i] = s.lo_slope, r.lo_bias[i] = s.lo_bias;
      r.up_slope[i] = s.up_slope, r.up_bias[i] = s.up_bias;
    }
    return r;
  }

 private:
  Fn fn_;
  std::vector<double> a_, b_;
};

Result<OpOutputs> scalar_map(const OpContext& ctx, ScalarMapOp::Fn fn, std::vector<double> a = {},
                             std::vector<double> b = {}) {
  OpOutputs out;
  out.push_back({std::make_unique<ScalarMapOp>(fn, std::move(a), std::move(b)), ctx.shape(0)});
  return out;
}

Result<OpOutputs> identity(const OpContext& ctx) {
  int64_t n = num_elements(ctx.shape(0));
  std::vector<int64_t> src(n);
  std::iota(src.begin(), src.end(), 0);
  return affine_output(one_term(gather_term(0, src, n)), Vec::Zero(n), ctx.shape(0));
}

Result<OpOutputs> cast_rule(const OpContext& ctx) {
  using common::DType;
  switch (static_cast<DType>(ctx.node.attr_int("to", 0))) {
    case DType::kFloat:
    case DType::kDouble:
      return identity(ctx);
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
      return scalar_map(ctx, ScalarMapOp::Fn::kTrunc);
    case DType::kBool:
      return scalar_map(ctx, ScalarMapOp::Fn::kNonzero);
    default:
      return ctx.error("Cast has a bound rule to float, double, signed integers and bool only");
  }
}

// A constant end of Clip (input or, before opset 11, attribute), broadcast to n elements.
Result<std::vector<double>> clip_end(const OpContext& ctx, size_t input, const char* attr,
                                     double fallback, int64_t n) {
  if (ctx.opset < 11) return std::vector<double>(n, ctx.node.attr_float(attr, fallback));
  if (!ctx.present(input)) return std::vector<double>(n, fallback);
  if (ctx.variable(input)) return ctx.error(std::string("Clip with a variable ") + attr);
  std::vector<double> v = ctx.constants[input]->to_double();
  if (v.size() != 1) return ctx.error(std::string("Clip ") + attr + " must be a scalar");
  return std::vector<double>(n, v[0]);
}

Result<OpOutputs> clip_rule(const OpContext& ctx) {
  int64_t n = num_elements(ctx.shape(0));
  ASSIGN_OR_RETURN(std::vector<double> a, clip_end(ctx, 1, "min", -kInf, n));
  ASSIGN_OR_RETURN(std::vector<double> b, clip_end(ctx, 2, "max", kInf, n));
  // min > max: ONNX gives max everywhere, as min(max(x, a), b) does.
  return scalar_map(ctx, ScalarMapOp::Fn::kClamp, std::move(a), std::move(b));
}

// Elementwise over broadcast inputs, each variable (interval) or constant: Min, Max, Equal.
class NaryOp : public BoundOp {
 public:
  enum class Fn { kMin, kMax, kEqual };
  NaryOp(Fn fn, std::vector<std::vector<int64_t>> maps, std::vector<std::vector<double>> consts)
      : fn_(fn), maps_(std::move(maps)), consts_(std::move(consts)) {}

  Interval interval(const std::vector<const Interval*>& in) const override {
    Eigen::Index n = static_cast<Eigen::Index>(maps_[0].size());
    Interval out{Vec(n), Vec(n)};
    for (Eigen::Index i = 0; i < n; ++i) {
      double lo0 = 0, hi0 = 0;
      for (size_t k = 0; k < maps_.size(); ++k) {
        double l = in[k] ? in[k]->lo[maps_[k][i]] : consts_[k][i];
        double u = in[k] ? in[k]->hi[maps_[k][i]] : consts_[k][i];
        if (k == 0) {
          lo0 = l, hi0 = u;
        } else if (fn_ == Fn::kMin) {
          lo0 = std::min(lo0, l), hi0 = std::min(hi0, u);
        } else if (fn_ == Fn::kMax) {
          lo0 = std::max(lo0, l), hi0 = std::max(hi0, u);
        } else {  // Equal of two: 1 only if both are the same point, 0 if they cannot meet
          bool same = lo0 == hi0 && l == u && lo0 == l, apart = hi0 < l || u < lo0;
          lo0 = same ? 1 : 0, hi0 = apart ? 0 : 1;
        }
      }
      out.lo[i] = lo0, out.hi[i] = hi0;
    }
    return out;
  }
  Relaxation relax(const std::vector<const Interval*>&, const Interval&) const override {
    return {};
  }

 private:
  Fn fn_;
  std::vector<std::vector<int64_t>> maps_;
  std::vector<std::vector<double>> consts_;
};

// An error for the first omitted input (an empty name) of an op whose inputs are all required.
common::Status all_given(const OpContext& ctx) {
  for (size_t k = 0; k < ctx.shapes.size(); ++k)
    if (!ctx.present(k)) return ctx.error("input " + std::to_string(k) + " is missing");
  return {};
}

Result<OpOutputs> nary(const OpContext& ctx, NaryOp::Fn fn) {
  size_t count = ctx.shapes.size();
  if (count == 0) return ctx.error("needs at least one input");
  RETURN_IF_ERROR(all_given(ctx));
  Dims out = ctx.shape(0);
  for (size_t k = 1; k < count; ++k) {
    auto b = common::broadcast_shapes(out, ctx.shape(k));
    if (!b) return ctx.error("input shapes do not broadcast");
    out = *b;
  }
  std::vector<std::vector<int64_t>> maps(count);
  std::vector<std::vector<double>> consts(count);
  for (size_t k = 0; k < count; ++k) {
    if (ctx.variable(k))
      maps[k] = common::broadcast_map(ctx.shape(k), out);
    else
      consts[k] = broadcast_constant(*ctx.constants[k], out);
  }
  maps[0].resize(num_elements(out));  // sizes the output when input 0 is constant
  OpOutputs result;
  result.push_back({std::make_unique<NaryOp>(fn, std::move(maps), std::move(consts)), out});
  return result;
}

// Min / Max: a clamp when input 0 is the only variable one and has the output's shape.
Result<OpOutputs> min_max(const OpContext& ctx, bool is_max) {
  RETURN_IF_ERROR(all_given(ctx));
  size_t count = ctx.shapes.size();
  bool clamp = count > 1 && ctx.variable(0);
  for (size_t k = 1; k < count && clamp; ++k)
    clamp =
        !ctx.variable(k) && common::broadcast_shapes(ctx.shape(0), ctx.shape(k)) == ctx.shape(0);
  if (!clamp) return nary(ctx, is_max ? NaryOp::Fn::kMax : NaryOp::Fn::kMin);
  int64_t n = num_elements(ctx.shape(0));
  std::vector<double> a(n, -kInf), b(n, kInf);
  for (size_t k = 1; k < count; ++k) {
    std::vector<double> c = broadcast_constant(*ctx.constants[k], ctx.shape(0));
    for (int64_t i = 0; i < n; ++i)
      is_max ? a[i] = std::max(a[i], c[i]) : b[i] = std::min(b[i], c[i]);
  }
  // max(x, c) = clamp(x, c, inf), min(x, c) = clamp(x, -inf, c)
  return scalar_map(ctx, ScalarMapOp::Fn::kClamp, std::move(a), std::move(b));
}

Result<OpOutputs> min_rule(const OpContext& ctx) { return min_max(ctx, false); }
Result<OpOutputs> max_rule(const OpContext& ctx) { return min_max(ctx, true); }
Result<OpOutputs> equal_rule(const OpContext& ctx) {
  if (ctx.shapes.size() != 2) return ctx.error("Equal needs two inputs");
  return nary(ctx, NaryOp::Fn::kEqual);
}

}  // namespace

void add_elementwise_compare_rules(RuleTable& table) {
  table.insert(table.end(), {{"Cast", cast_rule},
                             {"Clip", clip_rule},
                             {"Min", min_rule},
                             {"Max", max_rule},
                             {"Equal", equal_rule}});
}

}  // namespace propdag

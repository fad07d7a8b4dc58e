#include "propdag/relax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace propdag {
namespace {

// Margin added to lines so that rounding in f never makes them cross the curve.
constexpr double kSlack = 1e-12;

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double sigmoid_d(double x) {
  double s = sigmoid(x);
  return s * (1.0 - s);
}
double sigmoid_dd(double x) {
  double s = sigmoid(x);
  return s * (1.0 - s) * (1.0 - 2.0 * s);
}
double tanh_f(double x) { return std::tanh(x); }
double tanh_d(double x) {
  double t = std::tanh(x);
  return 1.0 - t * t;
}
double tanh_dd(double x) {
  double t = std::tanh(x);
  return -2.0 * t * (1.0 - t * t);
}
double exp_f(double x) { return std::exp(x); }
// log(1 + e^x) without overflow: x + log(1 + e^-x) for x > 0.
double softplus_f(double x) {
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}
double log_f(double x) { return std::log(x); }
double log_d(double x) { return 1 / x; }
double log_dd(double x) { return -1 / (x * x); }

// The chord of f over [l, u], moved down (`below`) or up by the rounding margin.
Line chord(const Curve& c, double l, double u, double reach, bool below) {
  double fl = c.f(l), k = (c.f(u) - fl) / (u - l);
  double slack = kSlack * (1.0 + std::abs(fl) + std::abs(k) * (std::abs(l) + reach));
  return {k, fl - k * l + (below ? -slack : slack)};
}

// The point t between `good` and `bad` where ok(t) turns false, on the side where it holds.
template <class Ok>
double boundary(double good, double bad, Ok ok) {
  for (int i = 0; i < 100; ++i) {
    double mid = (good + bad) / 2;
    if (mid == good || mid == bad) break;
    (ok(mid) ? good : bad) = mid;
  }
  return good;
}

// The point of [a, b] where f' (monotone there) equals k, or `fallback` where there is none.
double slope_point(const Curve& c, double a, double b, double k, double fallback) {
  const double fa = c.df(a), fb = c.df(b);
  if (!((fa - k) * (fb - k) <= 0)) return fallback;
  const bool rising = fb > fa;
  return boundary(a, b, [&](double t) { return (c.df(t) < k) == rising; });
}

}  // namespace

const Curve& sigmoid_curve() {
  static const Curve c{sigmoid, sigmoid_d, sigmoid_dd};
  return c;
}

const Curve& tanh_curve() {
  static const Curve c{tanh_f, tanh_d, tanh_dd};
  return c;
}

const Curve& exp_curve() {
  static const Curve c{exp_f, exp_f, exp_f};
  return c;
}

const Curve& softplus_curve() {
  static const Curve c{softplus_f, sigmoid, sigmoid_d};
  return c;
}

const Curve& log_curve() {
  static const Curve c{log_f, log_d, log_dd};
  return c;
}

Line tangent_line(const Curve& c, double t, double reach, bool below) {
  double ft = c.f(t), k = c.df(t);
  double slack = kSlack * (1.0 + std::abs(ft) + std::abs(k) * (std::abs(t) + reach));
  return {k, ft - k * t + (below ? -slack : slack)};
}

Lines constant_lines(double lo, double hi) { return {0, lo, 0, hi, 0, 0}; }

Lines leaky_relu_lines(double l, double u, double alpha) {
  if (l >= 0) return {1, 0, 1, 0, 1, 1};
  if (u <= 0) return {alpha, 0, alpha, 0, alpha, alpha};
  double k = (u - alpha * l) / (u - l);
  // Slope 1 where u > -l by more than 1e-9 of the width: bounds symmetric but for rounding (a
  // TLL network's on [0, 1]) take alpha whatever the order their sums were rounded in, so that
  // engines which sum in other orders choose the same line.
  double lower = u + l > 1e-9 * (u - l) ? 1.0 : alpha;
  // The upper line's bias from both ends, the larger: through (u, u) alone it rounds to 0 when
  // |l| is tiny beside u (l = -2, u = 1e22: k rounds to 1 and the line y = x misses (l, 0)),
  // through (l, a l) alone when u is tiny beside |l|.
  const double at_u = u - k * u, at_l = (alpha - k) * l;
  return {lower, 0, k, at_l > at_u ? at_l : at_u, alpha, 1};
}

Lines curve_lines(const Curve& c, double l, double u) {
  if (!std::isfinite(l) || !std::isfinite(u) || !(u - l > 1e-9))
    return constant_lines(c.f(l), c.f(u));
  Lines s;
  s.curve = &c;
  s.reach = std::max(std::abs(l), std::abs(u));
  const double k = (c.f(u) - c.f(l)) / (u - l), m = (l + u) / 2;
  bool lo_chord = l >= 0, up_chord = u <= 0;
  if (u <= 0) {
    s.lo_t = m, s.lo_t_min = l, s.lo_t_max = u;
  } else if (l >= 0) {
    s.up_t = m, s.up_t_min = l, s.up_t_max = u;
  } else {
    const double fl = c.f(l), fu = c.f(u);
    lo_chord = c.df(l) >= k;
    if (!lo_chord) {  // tangents at t <= d stay below f(u); the one at l does, at 0 none does
      s.lo_t = s.lo_t_max =
          boundary(l, 0.0, [&](double t) { return fu >= c.f(t) + c.df(t) * (u - t); });
      s.lo_t_min = l;
    }
    up_chord = c.df(u) >= k;
    if (!up_chord) {
      s.up_t = s.up_t_min =
          boundary(u, 0.0, [&](double t) { return fl <= c.f(t) + c.df(t) * (l - t); });
      s.up_t_max = u;
    }
  }
  // The fixed tangents are those of the chord's slope (the curve's lines parallel to the chord)
  // where the family holds one: on a sigmoid MLP they measured tighter than the tangents at the
  // midpoint or at the family's end (widths 0.77-0.90 of those against 0.95-1.0).
  if (!lo_chord) s.lo_t = slope_point(c, s.lo_t_min, s.lo_t_max, k, s.lo_t);
  if (!up_chord) s.up_t = slope_point(c, s.up_t_min, s.up_t_max, k, s.up_t);
  Line lo = lo_chord ? chord(c, l, u, s.reach, true) : tangent_line(c, s.lo_t, s.reach, true);
  Line up = up_chord ? chord(c, l, u, s.reach, false) : tangent_line(c, s.up_t, s.reach, false);
  s.lo_slope = s.lo_min = s.lo_max = lo.slope, s.lo_bias = lo.bias;
  s.up_slope = up.slope, s.up_bias = up.bias;
  return s;
}

Lines sine_lines(double l, double u, bool cosine, double lo, double hi) {
  constexpr double kTwoPi = 2 * std::numbers::pi;
  if (!std::isfinite(l) || !std::isfinite(u) || !(u - l > 1e-9) || u - l > 2 * kTwoPi)
    return constant_lines(lo, hi);
  auto f = [&](double x) { return cosine ? std::cos(x) : std::sin(x); };
  const double k = std::clamp((f(u) - f(l)) / (u - l), -1.0, 1.0);
  // f(x) - k x is extreme over [l, u] at an end or where f'(x) = k: x = +-acos(k) - shift + 2 pi n
  // (f(x) = sin(x + shift)).
  double g_lo = std::min(f(l) - k * l, f(u) - k * u), g_hi = std::max(f(l) - k * l, f(u) - k * u);
  const double a = std::acos(k), shift = cosine ? std::numbers::pi / 2 : 0.0;
  for (double root : {a - shift, -a - shift}) {
    for (double n = std::ceil((l - root) / kTwoPi); root + n * kTwoPi <= u; ++n) {
      const double x = std::clamp(root + n * kTwoPi, l, u), g = f(x) - k * x;
      g_lo = std::min(g_lo, g), g_hi = std::max(g_hi, g);
    }
  }
  const double reach = std::max(std::abs(l), std::abs(u));
  const double slack = kSlack * (1.0 + (1.0 + std::abs(k)) * reach);
  return {k, g_lo - slack, k, g_hi + slack, k, k};
}

Planes product_planes(double lx, double ux, double ly, double uy) {
  const double big = std::max(std::abs(lx), std::abs(ux)) * std::max(std::abs(ly), std::abs(uy));
  const double slack = kSlack * (1.0 + big);
  return {ly, lx, -lx * ly - slack, uy, lx, -lx * uy + slack};
}

Planes product_planes_other(double lx, double ux, double ly, double uy) {
  const double big = std::max(std::abs(lx), std::abs(ux)) * std::max(std::abs(ly), std::abs(uy));
  const double slack = kSlack * (1.0 + big);
  return {uy, ux, -ux * uy - slack, ly, ux, -ux * ly + slack};
}

Lines reciprocal_lines(double ly, double uy) {
  const double m = (ly + uy) / 2, near = std::min(std::abs(ly), std::abs(uy));
  const double slack = kSlack * (1.0 + (1.0 + std::max(std::abs(ly), std::abs(uy)) / near) / near);
  const Line chord{-1 / (ly * uy), 1 / ly + 1 / uy}, tangent{-1 / (m * m), 2 / m};
  const Line lo = ly > 0 ? tangent : chord, up = ly > 0 ? chord : tangent;
  return {lo.slope, lo.bias - slack, up.slope, up.bias + slack};
}

Planes quotient_planes(double lx, double ux, double ly, double uy) {
  const Lines r = reciprocal_lines(ly, uy);
  const double lr = std::min(1 / ly, 1 / uy), ur = std::max(1 / ly, 1 / uy);
  const double big = std::max(std::abs(lx), std::abs(ux)) * std::max(std::abs(lr), std::abs(ur));
  const double slack = kSlack * (1.0 + big);
  // lx r >= lx (lower line) where lx >= 0, lx (upper line) otherwise; <= the reverse.
  const double lo_k = lx >= 0 ? r.lo_slope : r.up_slope, lo_b = lx >= 0 ? r.lo_bias : r.up_bias;
  const double up_k = lx >= 0 ? r.up_slope : r.lo_slope, up_b = lx >= 0 ? r.up_bias : r.lo_bias;
  return {lr, lx * lo_k, lx * lo_b - lx * lr - slack, ur, lx * up_k, lx * up_b - lx * ur + slack};
}

Lines sigmoid_lines(double l, double u) { return curve_lines(sigmoid_curve(), l, u); }

Lines tanh_lines(double l, double u) { return curve_lines(tanh_curve(), l, u); }

Lines bent_lines(const Curve& c, double l, double u, bool convex) {
  const double fl = c.f(l), fu = c.f(u);
  if (!std::isfinite(l) || !std::isfinite(u) || !(u - l > 1e-9) || !std::isfinite(fl) ||
      !std::isfinite(fu))
    return constant_lines(fl, fu);
  Lines s;
  s.curve = &c;
  s.reach = std::max(std::abs(l), std::abs(u));
  const Line outer = chord(c, l, u, s.reach, !convex);
  const double t = slope_point(c, l, u, outer.slope, (l + u) / 2);
  const Line inner = tangent_line(c, t, s.reach, convex);
  const Line lo = convex ? inner : outer, up = convex ? outer : inner;
  s.lo_slope = s.lo_min = s.lo_max = lo.slope, s.lo_bias = lo.bias;
  s.up_slope = up.slope, s.up_bias = up.bias;
  (convex ? s.lo_t : s.up_t) = t;
  (convex ? s.lo_t_min : s.up_t_min) = l;
  (convex ? s.lo_t_max : s.up_t_max) = u;
  return s;
}

Lines exp_lines(double l, double u) { return bent_lines(exp_curve(), l, u, true); }

Lines softplus_lines(double l, double u) { return bent_lines(softplus_curve(), l, u, true); }

Lines log_lines(double l, double u) {
  const double inf = std::numeric_limits<double>::infinity();
  if (!(u > 0)) return constant_lines(-inf, inf);  // no point of the domain: NaN at run time
  if (!(l > 0)) return constant_lines(-inf, std::log(u));
  return bent_lines(log_curve(), l, u, false);
}

}  // namespace propdag

#include "propdag/relax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

namespace propdag {
namespace {

TEST(RelaxTest, ReluLinesByHand) {
  // Stable intervals are exact.
  Lines on = leaky_relu_lines(0.5, 2, 0);
  EXPECT_EQ(on.lo_slope, 1);
  EXPECT_EQ(on.up_slope, 1);
  Lines off = leaky_relu_lines(-3, -1, 0);
  EXPECT_EQ(off.lo_slope, 0);
  EXPECT_EQ(off.up_slope, 0);
  EXPECT_EQ(off.up_bias, 0);
  // [-1, 3]: chord from (-1, 0) to (3, 3): slope 3/4, intercept 3/4; u > -l so lower slope 1.
  Lines a = leaky_relu_lines(-1, 3, 0);
  EXPECT_DOUBLE_EQ(a.up_slope, 0.75);
  EXPECT_DOUBLE_EQ(a.up_bias, 0.75);
  EXPECT_EQ(a.lo_slope, 1);
  // [-3, 1]: chord slope 1/4, intercept 3/4; u < -l so lower slope 0.
  Lines b = leaky_relu_lines(-3, 1, 0);
  EXPECT_DOUBLE_EQ(b.up_slope, 0.25);
  EXPECT_DOUBLE_EQ(b.up_bias, 0.75);
  EXPECT_EQ(b.lo_slope, 0);
  // Within 1e-9 of the width u > -l counts as the tie (alpha's line): engines that round a
  // symmetric interval's ends differently still choose alike. Past it, slope 1.
  EXPECT_EQ(leaky_relu_lines(-1, 1 + 1e-12, 0).lo_slope, 0);
  EXPECT_EQ(leaky_relu_lines(-1 - 1e-12, 1, 0).lo_slope, 0);
  EXPECT_EQ(leaky_relu_lines(-1, 1 + 1e-6, 0).lo_slope, 1);
  // LeakyReLU alpha 0.1 on [-2, 2]: chord from (-2, -0.2) to (2, 2): slope 2.2/4 = 0.55,
  // intercept 2 - 1.1 = 0.9; tie u = -l picks the alpha line.
  Lines c = leaky_relu_lines(-2, 2, 0.1);
  EXPECT_DOUBLE_EQ(c.up_slope, 0.55);
  EXPECT_DOUBLE_EQ(c.up_bias, 0.9);
  EXPECT_DOUBLE_EQ(c.lo_slope, 0.1);
  EXPECT_EQ(c.lo_bias, 0);
}

// The lines must bracket the function on the whole interval (checked densely) for many
// intervals, including very wide, very narrow and one-sided ones; so must the tangents at points
// drawn from the tangent families' ranges, and the fixed lines must be those of the families'
// starting points.
void check_families(const Curve& c, double l, double u, const Lines& s, std::mt19937& rng) {
  auto check = [&](double slope, double bias, bool lower) {
    for (int k = 0; k <= 200; ++k) {
      double x = l + (u - l) * k / 200.0, y = c.f(x), v = slope * x + bias;
      double tol = 1e-12 * (1 + std::abs(y) + std::abs(x));
      if (lower)
        ASSERT_LE(v, y + tol) << "l=" << l << " u=" << u << " x=" << x;
      else
        ASSERT_GE(v, y - tol) << "l=" << l << " u=" << u << " x=" << x;
    }
  };
  std::uniform_real_distribution<double> unit(0, 1);
  for (bool lower : {true, false}) {
    double lo = lower ? s.lo_t_min : s.up_t_min, hi = lower ? s.lo_t_max : s.up_t_max;
    if (!(hi > lo)) continue;
    Line start = tangent_line(c, lower ? s.lo_t : s.up_t, s.reach, lower);
    ASSERT_EQ(start.slope, lower ? s.lo_slope : s.up_slope);
    ASSERT_EQ(start.bias, lower ? s.lo_bias : s.up_bias);
    for (double t : {lo, hi, lo + (hi - lo) * unit(rng), lo + (hi - lo) * unit(rng)}) {
      Line line = tangent_line(c, t, s.reach, lower);
      check(line.slope, line.bias, lower);
    }
  }
}

template <class F, class L>
void check_brackets(F f, L lines, const Curve* curve = nullptr) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> center(-8, 8), log_width(-6, 2.5);
  int families = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    double c = center(rng), w = std::pow(10.0, log_width(rng));
    double l = c - w / 2, u = c + w / 2;
    Lines s = lines(l, u);
    for (int k = 0; k <= 200; ++k) {
      double x = l + (u - l) * k / 200.0, y = f(x);
      // Double rounding only: 1e-12 relative to the magnitudes involved.
      double tol = 1e-12 * (1 + std::abs(y) + std::abs(x));
      ASSERT_LE(s.lo_slope * x + s.lo_bias, y + tol) << "l=" << l << " u=" << u << " x=" << x;
      ASSERT_GE(s.up_slope * x + s.up_bias, y - tol) << "l=" << l << " u=" << u << " x=" << x;
    }
    if (curve == nullptr) continue;
    ASSERT_EQ(s.curve, curve);
    families += s.lo_t_max > s.lo_t_min || s.up_t_max > s.up_t_min;
    check_families(*curve, l, u, s, rng);
  }
  if (curve != nullptr) {
    EXPECT_GT(families, 1000);
  }
}

TEST(RelaxTest, SigmoidLinesBracket) {
  check_brackets([](double x) { return 1 / (1 + std::exp(-x)); }, sigmoid_lines, &sigmoid_curve());
}

TEST(RelaxTest, TanhLinesBracket) {
  check_brackets([](double x) { return std::tanh(x); }, tanh_lines, &tanh_curve());
}

TEST(RelaxTest, LeakyReluLinesBracket) {
  check_brackets([](double x) { return x > 0 ? x : 0.2 * x; },
                 [](double l, double u) { return leaky_relu_lines(l, u, 0.2); });
}

// Sigmoid on [0, 2]: concave there, so the chord is the lower line (shifted by only the slack)
// and the upper line touches the curve where sigmoid' equals the chord slope.
TEST(RelaxTest, SigmoidChordIsTightOnConcavePart) {
  Lines s = sigmoid_lines(0, 2);
  double k = (1 / (1 + std::exp(-2.0)) - 0.5) / 2;
  EXPECT_DOUBLE_EQ(s.lo_slope, k);
  EXPECT_NEAR(s.lo_bias, 0.5, 1e-9);
  EXPECT_GT(s.up_bias, 0.5 + 1e-3);
  // The upper line is the tangent parallel to the chord, tunable over [0, 2]:
  // sigmoid'(t) = k at t = logit((1 + sqrt(1 - 4k)) / 2) on the concave side.
  double t = std::log((1 + std::sqrt(1 - 4 * k)) / (1 - std::sqrt(1 - 4 * k)));
  double st = 1 / (1 + std::exp(-t));
  EXPECT_NEAR(s.up_t, t, 1e-9);
  EXPECT_NEAR(s.up_slope, k, 1e-12);
  EXPECT_NEAR(s.up_bias, st - k * t, 1e-9);
  EXPECT_EQ(s.up_t_min, 0);
  EXPECT_EQ(s.up_t_max, 2);
  EXPECT_FALSE(s.lo_t_max > s.lo_t_min);
}

// Sigmoid on [-2, -1], convex there: the chord above, below the tangent at the t where
// sigmoid'(t) = chord slope k, i.e. sigmoid(t) = (1 - sqrt(1 - 4k)) / 2.
TEST(RelaxTest, SigmoidConvexPartByHand) {
  Lines s = sigmoid_lines(-2, -1);
  double a = 1 / (1 + std::exp(2.0)), b = 1 / (1 + std::exp(1.0)), k = b - a;
  double st = (1 - std::sqrt(1 - 4 * k)) / 2, t = std::log(st / (1 - st));
  EXPECT_NEAR(s.up_slope, k, 1e-15);
  EXPECT_NEAR(s.up_bias, b + k, 1e-11);
  EXPECT_NEAR(s.lo_t, t, 1e-9);
  EXPECT_NEAR(s.lo_slope, k, 1e-12);
  EXPECT_NEAR(s.lo_bias, st - k * t, 1e-9);
  EXPECT_EQ(s.lo_t_min, -2);
  EXPECT_EQ(s.lo_t_max, -1);
}

// Tanh on [-1, 3]: the chord (slope (tanh 3 + tanh 1) / 4 = 0.4392) is steeper than tanh'(-1)
// = 0.42 and tanh'(3) = 0.0099, so it is neither line: the lower line is the tangent at the
// d in (-1, 0) whose tangent passes through (3, tanh 3), the upper the tangent at the d' in
// (0, 3) whose tangent passes through (-1, -tanh 1).
TEST(RelaxTest, TanhAcrossZeroByHand) {
  Lines s = tanh_lines(-1, 3);
  EXPECT_EQ(s.lo_t_min, -1);
  EXPECT_NEAR(s.lo_t_max, -0.97031594, 1e-7);  // d, by bisection of the condition by hand
  Line d = tangent_line(tanh_curve(), s.lo_t_max, s.reach, true);
  EXPECT_NEAR(d.slope * 3 + d.bias, std::tanh(3.0), 1e-9);
  // The fixed lines: the tangents of the chord's slope 0.43916 at -+atanh(sqrt(1 - k)) = -+0.97043
  // (the lower one just inside [-1, d]).
  double k = (std::tanh(3.0) + std::tanh(1.0)) / 4, t = std::atanh(std::sqrt(1 - k));
  EXPECT_NEAR(s.lo_t, -t, 1e-9);
  EXPECT_NEAR(s.lo_slope, k, 1e-12);
  EXPECT_NEAR(s.up_t, t, 1e-9);
  EXPECT_NEAR(s.up_bias, std::tanh(t) - k * t, 1e-9);
  EXPECT_NEAR(s.up_t_min, 0.45829939, 1e-7);  // d', whose tangent passes through (-1, -tanh 1)
  EXPECT_EQ(s.up_t_max, 3);
  // Sigmoid on [-0.1, 4]: the chord's slope 0.124 is below sigmoid'(-0.1) = 0.249, so the chord
  // is the lower line; sigmoid'(4) = 0.018 is below it too, so the upper line is a tangent.
  Lines c = sigmoid_lines(-0.1, 4);
  double kc = (1 / (1 + std::exp(-4.0)) - 1 / (1 + std::exp(0.1))) / 4.1;
  EXPECT_NEAR(c.lo_slope, kc, 1e-15);
  EXPECT_FALSE(c.lo_t_max > c.lo_t_min);
  EXPECT_TRUE(c.up_t_max > c.up_t_min);
}

TEST(RelaxTest, SineLinesBracket) {
  check_brackets([](double x) { return std::sin(x); },
                 [](double l, double u) { return sine_lines(l, u, false, -1, 1); });
  check_brackets([](double x) { return std::cos(x); },
                 [](double l, double u) { return sine_lines(l, u, true, -1, 1); });
}

// sin on [-1, 1]: chord slope k = sin 1; sin x - k x is extreme where cos x = sin 1, at
// x = +-(pi/2 - 1), with values +-(cos 1 - sin 1 (pi/2 - 1)) = +-0.0599938.
// cos on [0, pi/2] (concave): chord slope -2/pi, so the lower line is the chord 1 - 2x/pi; the
// upper touches where sin x = 2/pi: bias sqrt(1 - 4/pi^2) + (2/pi) asin(2/pi) = 1.2105.
// sin on [0, pi] (concave, chord slope ~0): lines 0 and 1.
TEST(RelaxTest, SineLinesByHand) {
  const double pi = std::numbers::pi;
  Lines s = sine_lines(-1, 1, false, -1, 1);
  const double d = std::cos(1.0) - std::sin(1.0) * (pi / 2 - 1);
  EXPECT_NEAR(d, 0.0599938, 1e-7);
  EXPECT_DOUBLE_EQ(s.lo_slope, std::sin(1.0));
  EXPECT_DOUBLE_EQ(s.up_slope, std::sin(1.0));
  EXPECT_NEAR(s.lo_bias, -d, 1e-11);
  EXPECT_NEAR(s.up_bias, d, 1e-11);
  Lines c = sine_lines(0, pi / 2, true, 0, 1);
  EXPECT_NEAR(c.lo_slope, -2 / pi, 1e-15);
  EXPECT_NEAR(c.lo_bias, 1, 1e-11);
  const double top = std::sqrt(1 - 4 / (pi * pi)) + 2 / pi * std::asin(2 / pi);
  EXPECT_NEAR(top, 1.2105, 1e-4);
  EXPECT_NEAR(c.up_bias, top, 1e-11);
  Lines h = sine_lines(0, pi, false, 0, 1);
  EXPECT_NEAR(h.lo_slope, 0, 1e-15);
  EXPECT_NEAR(h.lo_bias, 0, 1e-11);
  EXPECT_NEAR(h.up_bias, 1, 1e-11);
  // Wider than 4 pi: the range given.
  Lines w = sine_lines(0, 13, false, -1, 1);
  EXPECT_EQ(w.lo_slope, 0);
  EXPECT_EQ(w.lo_bias, -1);
  EXPECT_EQ(w.up_bias, 1);
}

// x in [-1, 2], y in [3, 5]: lower plane (x + 1)(y - 3) >= 0: xy >= 3x - y + 3; upper plane
// (x + 1)(5 - y) >= 0: xy <= 5x - y + 5 (both widened by at most 1e-12 (1 + 10)).
TEST(RelaxTest, ProductPlanesByHand) {
  Planes p = product_planes(-1, 2, 3, 5);
  EXPECT_EQ(p.lo_x, 3);
  EXPECT_EQ(p.lo_y, -1);
  EXPECT_NEAR(p.lo_bias, 3, 1e-10);
  EXPECT_LE(p.lo_bias, 3);
  EXPECT_EQ(p.up_x, 5);
  EXPECT_EQ(p.up_y, -1);
  EXPECT_NEAR(p.up_bias, 5, 1e-10);
  EXPECT_GE(p.up_bias, 5);
}

// The planes bracket x * y on a 41 x 41 grid of many random boxes (signs mixed, widths from
// 1e-6 to 100, magnitudes to 1e3).
TEST(RelaxTest, ProductPlanesBracket) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> center(-1e3, 1e3), log_width(-6, 2), unit(0, 1);
  for (int trial = 0; trial < 2000; ++trial) {
    double cx = center(rng) * unit(rng), cy = center(rng) * unit(rng);
    double wx = std::pow(10.0, log_width(rng)), wy = std::pow(10.0, log_width(rng));
    double lx = cx - wx / 2, ux = cx + wx / 2, ly = cy - wy / 2, uy = cy + wy / 2;
    Planes p = product_planes(lx, ux, ly, uy);
    for (int i = 0; i <= 40; ++i) {
      for (int j = 0; j <= 40; ++j) {
        double x = lx + (ux - lx) * i / 40.0, y = ly + (uy - ly) * j / 40.0, v = x * y;
        double tol = 1e-15 * (1 + std::abs(x * y) + std::abs(p.lo_x * x) + std::abs(p.lo_y * y));
        ASSERT_LE(p.lo_x * x + p.lo_y * y + p.lo_bias, v + tol) << lx << " " << ly << " " << x;
        ASSERT_GE(p.up_x * x + p.up_y * y + p.up_bias, v - tol) << lx << " " << ly << " " << x;
      }
    }
  }
}

// 1 / y on [1, 2]: chord through (1, 1) and (2, 1/2): 3/2 - y/2 above; tangent at 3/2:
// 2/(3/2) - y/(9/4) = 4/3 - 4y/9 below. On [-2, -1] (concave) the roles swap: the chord
// -3/2 - y/2 below, the tangent at -3/2, -4/3 - 4y/9, above.
TEST(RelaxTest, ReciprocalLinesByHand) {
  Lines r = reciprocal_lines(1, 2);
  EXPECT_DOUBLE_EQ(r.up_slope, -0.5);
  EXPECT_NEAR(r.up_bias, 1.5, 1e-10);
  EXPECT_DOUBLE_EQ(r.lo_slope, -4.0 / 9);
  EXPECT_NEAR(r.lo_bias, 4.0 / 3, 1e-10);
  Lines n = reciprocal_lines(-2, -1);
  EXPECT_DOUBLE_EQ(n.lo_slope, -0.5);
  EXPECT_NEAR(n.lo_bias, -1.5, 1e-10);
  EXPECT_DOUBLE_EQ(n.up_slope, -4.0 / 9);
  EXPECT_NEAR(n.up_bias, -4.0 / 3, 1e-10);
}

// Quotient planes bracket x / y on a 41 x 41 grid of many random boxes, y on either side of 0
// (its nearer end from 1e-3 to 1e2 away).
TEST(RelaxTest, QuotientPlanesBracket) {
  std::mt19937 rng(13);
  std::uniform_real_distribution<double> center(-1e2, 1e2), log_w(-6, 2), log_near(-3, 2);
  std::uniform_real_distribution<double> unit(0, 1);
  for (int trial = 0; trial < 2000; ++trial) {
    double cx = center(rng) * unit(rng), wx = std::pow(10.0, log_w(rng));
    double near = std::pow(10.0, log_near(rng)), wy = std::pow(10.0, log_w(rng));
    double lx = cx - wx / 2, ux = cx + wx / 2, ly = near, uy = near + wy;
    if (unit(rng) < 0.5) std::swap(ly, uy), ly = -ly, uy = -uy;
    Planes p = quotient_planes(lx, ux, ly, uy);
    for (int i = 0; i <= 40; ++i) {
      for (int j = 0; j <= 40; ++j) {
        double x = lx + (ux - lx) * i / 40.0, y = ly + (uy - ly) * j / 40.0, v = x / y;
        double tol = 1e-15 * (1 + std::abs(v) + std::abs(p.lo_x * x) + std::abs(p.lo_y * y) +
                              std::abs(p.up_x * x) + std::abs(p.up_y * y));
        ASSERT_LE(p.lo_x * x + p.lo_y * y + p.lo_bias, v + tol) << lx << " " << ly << " " << uy;
        ASSERT_GE(p.up_x * x + p.up_y * y + p.up_bias, v - tol) << lx << " " << ly << " " << uy;
      }
    }
  }
}

}  // namespace
}  // namespace propdag

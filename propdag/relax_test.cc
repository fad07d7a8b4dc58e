#include "propdag/relax.h"

#include <gtest/gtest.h>

#include <cmath>
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
  // LeakyReLU alpha 0.1 on [-2, 2]: chord from (-2, -0.2) to (2, 2): slope 2.2/4 = 0.55,
  // intercept 2 - 1.1 = 0.9; tie u = -l picks the alpha line.
  Lines c = leaky_relu_lines(-2, 2, 0.1);
  EXPECT_DOUBLE_EQ(c.up_slope, 0.55);
  EXPECT_DOUBLE_EQ(c.up_bias, 0.9);
  EXPECT_DOUBLE_EQ(c.lo_slope, 0.1);
  EXPECT_EQ(c.lo_bias, 0);
}

// The lines must bracket the function on the whole interval (checked densely) for many
// intervals, including very wide, very narrow and one-sided ones.
template <class F, class L>
void check_brackets(F f, L lines) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> center(-8, 8), log_width(-6, 2.5);
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
  }
}

TEST(RelaxTest, SigmoidLinesBracket) {
  check_brackets([](double x) { return 1 / (1 + std::exp(-x)); }, sigmoid_lines);
}

TEST(RelaxTest, TanhLinesBracket) {
  check_brackets([](double x) { return std::tanh(x); }, tanh_lines);
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
}

}  // namespace
}  // namespace propdag

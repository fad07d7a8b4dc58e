// clip_box (clip.h): a box cut down to where linear lower bounds of a case's constraints
// can meet their right-hand sides. Hand-worked cuts, and on random rows every sampled point of
// the box that meets every row stays in the cut box. two_row_margin: hand-worked maxima, and on
// random rows the maximum over a fine grid of weights.
#include "propdag/clip.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "propdag/test_util.h"
#include "propdag/verify.h"

namespace propdag::internal {
namespace {

Interval square(double lo, double hi) { return {Vec::Constant(2, lo), Vec::Constant(2, hi)}; }

// [0, 2]^2 and x1 + x2 <= 1: each coordinate at most 1 - 0 (the other at its minimum 0).
TEST(ClipBox, CutsEachDimensionByTheOthersMinimum) {
  Interval b = square(0, 2);
  ASSERT_TRUE(clip_box(b, Mat{{1, 1}}, Vec{{0}}, Vec{{1}}));
  for (int d : {0, 1}) {
    EXPECT_DOUBLE_EQ(b.lo[d], 0);
    EXPECT_NEAR(b.hi[d], 1, 1e-8);
    EXPECT_GE(b.hi[d], 1);  // widened outward, never inward
  }
}

// -x1 + 0.5 <= 0 (x1 >= 0.5), then 2 x2 - x1 <= 0 on what is left: x2 <= (0 + x1's most) / 2,
// with x1 at most 2: x2 <= 1. A row with a -inf bias says nothing.
TEST(ClipBox, NegativeCoefficientsRaiseTheLowEnd) {
  Interval b = square(0, 2);
  const double inf = std::numeric_limits<double>::infinity();
  ASSERT_TRUE(clip_box(b, Mat{{-1, 0}, {-1, 2}, {5, 5}}, Vec{{0.5, 0, -inf}}, Vec{{0, 0, 0}}));
  EXPECT_NEAR(b.lo[0], 0.5, 1e-8);
  EXPECT_LE(b.lo[0], 0.5);
  EXPECT_DOUBLE_EQ(b.hi[0], 2);
  EXPECT_DOUBLE_EQ(b.lo[1], 0);
  EXPECT_NEAR(b.hi[1], 1, 1e-8);
  EXPECT_GE(b.hi[1], 1);
}

// x1 + x2 + 5 <= 1 has no point in [0, 2]^2 (its least value there is 5): false, box unchanged.
// Rows past rhs's size are not constraints of the case. A row met at one corner only keeps it.
TEST(ClipBox, ARowNoPointMeetsLeavesNothing) {
  Interval b = square(0, 2);
  EXPECT_FALSE(clip_box(b, Mat{{1, 1}}, Vec{{5}}, Vec{{1}}));
  EXPECT_EQ(b.hi, Vec::Constant(2, 2));
  EXPECT_TRUE(clip_box(b, Mat{{1, 1}, {1, 1}}, Vec{{0, 5}}, Vec{{10}}));
  EXPECT_EQ(b.hi, Vec::Constant(2, 2));
  // x1 + x2 <= 0 is met at the corner (0, 0) alone: that point is kept.
  ASSERT_TRUE(clip_box(b, Mat{{1, 1}}, Vec{{0}}, Vec{{0}}));
  EXPECT_EQ(b.lo, Vec::Zero(2));
  EXPECT_GE(b.hi.minCoeff(), 0);
  EXPECT_LT(b.hi.maxCoeff(), 1e-8);
}

// Random boxes in 4 dimensions and 3 random rows whose right-hand sides leave a part of the box:
// every sampled point meeting all rows lies in the cut box, and where the cut leaves nothing no
// sampled point meets them all.
TEST(ClipBox, KeepsEveryPointThatMeetsTheRows) {
  std::mt19937 rng(11);
  std::normal_distribution<double> g(0, 1);
  std::uniform_real_distribution<double> u(0, 1);
  int cut = 0, emptied = 0, inside = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Interval box{Vec(4), Vec(4)};
    for (int d = 0; d < 4; ++d) {
      const double c = g(rng), r = 0.1 + u(rng);
      box.lo[d] = c - r, box.hi[d] = c + r;
    }
    Mat a(3, 4);
    Vec bias(3), rhs(3);
    for (int r = 0; r < 3; ++r) {
      for (int d = 0; d < 4; ++d) a(r, d) = u(rng) < 0.2 ? 0 : g(rng);
      bias[r] = g(rng);
      // Between the row's least and most value over the box.
      const Vec mid = 0.5 * (box.lo + box.hi), rad = 0.5 * (box.hi - box.lo);
      const double at = a.row(r).dot(mid) + bias[r], spread = a.row(r).cwiseAbs().dot(rad);
      rhs[r] = at + spread * (2 * u(rng) - 1.2);
    }
    Interval clipped = box;
    const bool left = clip_box(clipped, a, bias, rhs);
    if (!left) ++emptied;
    if (left && ((clipped.hi - clipped.lo).array() < (box.hi - box.lo).array()).any()) ++cut;
    for (int s = 0; s < 2000; ++s) {
      Vec x(4);
      for (int d = 0; d < 4; ++d) x[d] = box.lo[d] + u(rng) * (box.hi[d] - box.lo[d]);
      if (((a * x + bias).array() > rhs.array()).any()) continue;
      ++inside;
      ASSERT_TRUE(left) << "trial " << trial;
      for (int d = 0; d < 4; ++d) {
        ASSERT_GE(x[d], clipped.lo[d]) << "trial " << trial;
        ASSERT_LE(x[d], clipped.hi[d]) << "trial " << trial;
      }
    }
  }
  // The rows cut most boxes, leave nothing of some, and many points meet them.
  EXPECT_GT(cut, 100);
  EXPECT_GT(emptied, 10);
  EXPECT_GT(inside, 10000);
}

// y0 = |x - 0.3| (two ReLUs) and y1 = x, x in [-1, 1]; unsafe: y0 <= 0.05 and y1 >= 0.3, met
// for x in [0.3, 0.35] only, at one end of the part where y0's lower line allows y0 <= 0.05:
// boxes cut down to that part must keep those points, and the search finds one there. With
// y1 >= 0.36 instead nothing meets the case, and splitting proves it.
TEST(ClipBox, SearchStillFindsCounterexamplesAtTheEdgeOfTheCut) {
  Model m = test::build(test::distance_net(true));
  for (Method method : {Method::kCrown, Method::kAlpha}) {
    auto r =
        verify(m, test::box_spec({-1}, {1}, 2, "(assert (<= Y_0 0.05))\n(assert (>= Y_1 0.3))"),
               {method}, {1000, 0});
    ASSERT_TRUE(r.ok()) << r.error().str();
    ASSERT_TRUE(r->falsified);
    ASSERT_EQ(r->counterexample.size(), 1);
    EXPECT_GE(r->counterexample[0], 0.3);
    EXPECT_LE(r->counterexample[0], 0.35);
    auto safe =
        verify(m, test::box_spec({-1}, {1}, 2, "(assert (<= Y_0 0.05))\n(assert (>= Y_1 0.36))"),
               {method}, {1000, 0});
    ASSERT_TRUE(safe.ok()) << safe.error().str();
    EXPECT_TRUE(safe->verified);
  }
}

// Over x in [-1, 1]: x + 0.5 <= 0 and -3x + 1.5 <= 0 (x <= -0.5 and x >= 0.5) meet nowhere.
// min over x of t (x + 0.5) + (1 - t)(-3x + 1.5) = 1.5 - t - |4t - 3|, largest at t = 3/4: 0.75
// (the even weights t = 1/2 give 0). x + 0.5 <= 0 and -x - 0.5 <= 0 meet at x = -0.5: the best
// weights give 0 (t = 1/2), a margin that proves nothing.
TEST(TwoRowMargin, HandWorkedMaxima) {
  const Interval box{Vec::Constant(1, -1), Vec::Constant(1, 1)};
  EXPECT_NEAR(two_row_margin(Mat{{1}, {-3}}, Vec{{0.5, 1.5}}, box), 0.75, 1e-15);
  EXPECT_NEAR(two_row_margin(Mat{{1}, {-1}}, Vec{{0.5, -0.5}}, box), 0, 1e-15);
  // A dimension whose combined coefficient is 0 at the best weights adds nothing, however wide:
  // y's coefficients 2 and 6 cancel at t = 3/4, where x's do too.
  const Interval wide{Vec{{-1, -std::numeric_limits<double>::infinity()}},
                      Vec{{1, std::numeric_limits<double>::infinity()}}};
  EXPECT_NEAR(two_row_margin(Mat{{1, 3}, {-3, -9}}, Vec{{0.5, 1.5}}, wide), 0.75, 1e-15);
}

// Random rows in 1-8 dimensions (some coefficients 0, some equal in both rows, some boxes of
// width 0): the margin is no less than the largest of 20,001 evenly spaced weights gives, and
// more by at most what the function can rise between two of them.
TEST(TwoRowMargin, NoGridOfWeightsDoesBetter) {
  std::mt19937 rng(5);
  std::normal_distribution<double> g(0, 1);
  std::uniform_real_distribution<double> u(0, 1);
  int inner = 0;  // maxima strictly between the single rows' margins
  for (int trial = 0; trial < 400; ++trial) {
    const int n = 1 + trial % 8;
    Interval box{Vec(n), Vec(n)};
    Mat a(2, n);
    for (int d = 0; d < n; ++d) {
      const double c = g(rng), r = u(rng) < 0.1 ? 0 : u(rng);
      box.lo[d] = c - r, box.hi[d] = c + r;
      a(0, d) = u(rng) < 0.15 ? 0 : g(rng);
      a(1, d) = u(rng) < 0.15 ? a(0, d) : g(rng);
    }
    const Vec slack{{g(rng), g(rng)}};
    auto at = [&](double t) {
      double v = t * slack[0] + (1 - t) * slack[1];
      for (int d = 0; d < n; ++d) {
        const double w = t * a(0, d) + (1 - t) * a(1, d);
        v += std::min(w * box.lo[d], w * box.hi[d]);
      }
      return v;
    };
    constexpr int kGrid = 20000;
    double grid = -std::numeric_limits<double>::infinity();
    for (int i = 0; i <= kGrid; ++i) grid = std::max(grid, at(static_cast<double>(i) / kGrid));
    double rise = std::abs(slack[0] - slack[1]);  // the slope's largest size
    for (int d = 0; d < n; ++d)
      rise += std::abs(a(0, d) - a(1, d)) * std::max(std::abs(box.lo[d]), std::abs(box.hi[d]));
    const double m = two_row_margin(a, slack, box);
    EXPECT_GE(m, grid - 1e-12) << "trial " << trial;
    EXPECT_LE(m, grid + rise / kGrid + 1e-12) << "trial " << trial;
    if (m > std::max(at(0), at(1)) + 1e-9) ++inner;
  }
  EXPECT_GT(inner, 50);  // 93 of the 400 maxima need weights on both rows
}

}  // namespace
}  // namespace propdag::internal

// The falsification search (point_search.h) on hand-made violation functions.
#include "propdag/point_search.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "propdag/test_util.h"

namespace propdag::internal {
namespace {

using test::unit_box;

// Counterexamples only on one edge of a 5-dimensional box (x0 at its least value and x1 at its
// greatest), and the same violation everywhere else: uniform points hit the edge with
// probability 0, and the pattern search only moves to strictly better points, so nothing leads
// it there. A point with x0 and x1 each at a bound comes up once in 16 face samples.
TEST(PointSearchTest, FindsCounterexamplesThatLieOnlyOnAnEdgeOfTheBox) {
  const Interval box = {Vec::Constant(5, -1.0), Vec::Constant(5, 2.0)};
  int calls = 0;
  Violation on_edge = [&](const Vec& x) -> common::Result<double> {
    ++calls;
    return x[0] == box.lo[0] && x[1] == box.hi[1] ? -1.0 : 1.0;
  };
  auto found = point_search(box, on_edge, 1000, 5, 10.0);
  ASSERT_TRUE(found.ok()) << found.error().str();
  ASSERT_TRUE(found->has_value());
  const Vec& x = **found;
  EXPECT_EQ(x[0], -1.0);
  EXPECT_EQ(x[1], 2.0);
  EXPECT_TRUE((x.array() >= box.lo.array()).all() && (x.array() <= box.hi.array()).all());
  EXPECT_LT(calls, 1000);
}

// Half of the samples stay uniform: an interior pocket that no face touches is still found.
TEST(PointSearchTest, FindsCounterexamplesInsideTheBox) {
  Violation pocket = [](const Vec& x) -> common::Result<double> {
    return (x.array() - 0.5).abs().maxCoeff() - 0.2;  // <= 0 on the cube [0.3, 0.7]^3
  };
  auto found = point_search(unit_box(3), pocket, 1000, 5, 10.0);
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->has_value());
  EXPECT_LE(((**found).array() - 0.5).abs().maxCoeff(), 0.2);
}

// Nothing to find: every sample and every pattern-search move is tried, and no point returned.
TEST(PointSearchTest, ReturnsNothingWhereNoPointViolates) {
  int calls = 0;
  Violation never = [&](const Vec& x) -> common::Result<double> {
    ++calls;
    return 1.0 + x.sum();
  };
  auto found = point_search(unit_box(2), never, 200, 3, 10.0);
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());
  EXPECT_GT(calls, 200);  // the samples, then the searches from the 3 best
}

// Samples evaluated in chunks (`batch`) are the same points in the same order: the edge
// test's search finds the same point, with one call of `on_edge` per point the batch flags.
// A batch that flags every point (or rounds otherwise than the check) returns none of them
// unless `violation` confirms it.
TEST(PointSearchTest, BatchedSamplesAreTheSamePointsAndConfirmedOneByOne) {
  const Interval box = {Vec::Constant(5, -1.0), Vec::Constant(5, 2.0)};
  int calls = 0;
  Violation on_edge = [&](const Vec& x) -> common::Result<double> {
    ++calls;
    return x[0] == box.lo[0] && x[1] == box.hi[1] ? -1.0 : 1.0;
  };
  int rows = 0;
  Violations each = [&](const Mat& x) -> common::Result<Vec> {
    rows += static_cast<int>(x.rows());
    Vec v(x.rows());
    for (Eigen::Index k = 0; k < x.rows(); ++k)
      v[k] = x(k, 0) == box.lo[0] && x(k, 1) == box.hi[1] ? -1.0 : 1.0;
    return v;
  };
  auto one = point_search(box, on_edge, 1000, 5, 10.0);
  ASSERT_TRUE(one.ok() && one->has_value());
  const int one_calls = calls;
  calls = 0;
  auto chunked = point_search(box, on_edge, 1000, 5, 10.0, each, 64);
  ASSERT_TRUE(chunked.ok() && chunked->has_value());
  EXPECT_EQ(**chunked, **one);
  EXPECT_EQ(calls, 1);  // the check of the point found
  EXPECT_EQ(rows % 64, 0);
  EXPECT_GE(rows, one_calls);

  Violation never = [](const Vec&) -> common::Result<double> { return 1.0; };
  Violations flags_all = [](const Mat& x) -> common::Result<Vec> {
    return Vec(Vec::Constant(x.rows(), -1.0));
  };
  auto none = point_search(unit_box(2), never, 300, 3, 10.0, flags_all, 64);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

// An error from the violation function ends the search with that error.
TEST(PointSearchTest, PassesOnTheViolationsError) {
  Violation failing = [](const Vec&) -> common::Result<double> {
    return common::Error{"", "n1", "X", "no rule"};
  };
  auto found = point_search(unit_box(2), failing, 10, 2, 10.0);
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.error().node, "n1");
  EXPECT_EQ(found.error().message, "no rule");
}

// Four constraints whose counterexamples fill a small square inside the box (around x0 = x1 =
// 0.755, 0.014 wide: 2e-4 of the box, and on no face): x0 + x1 within [1.5, 1.52] and x1
// within [x0 - 0.02, x0]. Descent on the violated ones reaches it from some of the 20 starts.
RowsAt square(const Vec& x) {
  RowsAt at;
  at.g = Vec{{1.5 - x[0] - x[1], x[0] + x[1] - 1.52, x[1] - x[0], x[0] - x[1] - 0.02}};
  at.grad = Mat{{-1, -1}, {1, 1}, {-1, 1}, {1, -1}};
  return at;
}

TEST(GradientSearchTest, FindsAnInteriorRegionByFollowingTheViolatedConstraints) {
  int confirmed = 0;
  Rows rows = [](const Vec& x) -> common::Result<RowsAt> { return square(x); };
  Violation violation = [&](const Vec& x) -> common::Result<double> {
    ++confirmed;
    return square(x).g.maxCoeff();
  };
  auto found = gradient_search(unit_box(2), rows, violation, 20, 100, 0.02, 10.0);
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->has_value());
  EXPECT_LE(square(**found).g.maxCoeff(), 0);
  EXPECT_EQ(confirmed, 1);
  // The sampling alone (point_search without its pattern search) misses the square.
  auto sampled = point_search(unit_box(2), violation, 1000, 0, 10.0);
  ASSERT_TRUE(sampled.ok());
  EXPECT_FALSE(sampled->has_value());
}

// Where the gradients promise a counterexample that the exact evaluation does not confirm (as
// when rounding differs), nothing is returned; where they are zero, each start ends at once.
TEST(GradientSearchTest, ReturnsOnlyPointsTheViolationConfirms) {
  Rows promising = [](const Vec& x) -> common::Result<RowsAt> {
    return RowsAt{Vec{{-1.0}}, Mat::Zero(1, x.size())};
  };
  Violation refuting = [](const Vec&) -> common::Result<double> { return 1e-9; };
  auto found = gradient_search(unit_box(3), promising, refuting, 5, 50, 0.02, 10.0);
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());

  int calls = 0;
  Rows flat = [&](const Vec& x) -> common::Result<RowsAt> {
    ++calls;
    return RowsAt{Vec{{1.0}}, Mat::Zero(1, x.size())};
  };
  found = gradient_search(unit_box(3), flat, refuting, 5, 50, 0.02, 10.0);
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());
  EXPECT_EQ(calls, 5);
}

// Steps never leave the box, however steep the gradient: x0 is pushed below its least value.
TEST(GradientSearchTest, StaysInsideTheBox) {
  const Interval box = {Vec{{-1.0, 2.0}}, Vec{{1.0, 3.0}}};
  Rows down = [&](const Vec& x) -> common::Result<RowsAt> {
    EXPECT_TRUE((x.array() >= box.lo.array()).all() && (x.array() <= box.hi.array()).all());
    return RowsAt{Vec{{x[0] + 5.0}}, Mat{{1e6, 0.0}}};  // <= 0 nowhere in the box
  };
  Violation never = [](const Vec& x) -> common::Result<double> { return x[0] + 5.0; };
  auto found = gradient_search(box, down, never, 3, 200, 0.02, 10.0);
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());
}

// The starts stepped side by side (the same starting points and steps as above, each with its
// own Adam state) find the square too, in chunks of 7 and of 20, with one confirmation; a point
// the values promise but the check refutes is never returned; every point stays in the box.
TEST(GradientSearchTest, StartsSteppedTogetherFollowTheSamePaths) {
  BatchRows rows = [](const Mat& x) -> common::Result<BatchRowsAt> {
    BatchRowsAt at{Mat(x.rows(), 4), Mat::Zero(x.rows(), 2)};
    for (Eigen::Index k = 0; k < x.rows(); ++k) {
      EXPECT_TRUE((x.row(k).array() >= 0).all() && (x.row(k).array() <= 1).all());
      const RowsAt one = square(x.row(k).transpose());
      at.g.row(k) = one.g.transpose();
      for (Eigen::Index r = 0; r < 4; ++r)
        if (one.g[r] > 0) at.grad.row(k) += one.grad.row(r);
    }
    return at;
  };
  int confirmed = 0;
  Violation violation = [&](const Vec& x) -> common::Result<double> {
    ++confirmed;
    return square(x).g.maxCoeff();
  };
  for (Eigen::Index chunk : {7, 20}) {
    confirmed = 0;
    auto together =
        batched_gradient_search(unit_box(2), rows, violation, 20, 100, 0.02, 10.0, chunk);
    ASSERT_TRUE(together.ok() && together->has_value()) << chunk;
    EXPECT_LE(square(**together).g.maxCoeff(), 0);
    EXPECT_EQ(confirmed, 1);
  }
  Violation refuting = [](const Vec&) -> common::Result<double> { return 1e-9; };
  BatchRows promising = [](const Mat& x) -> common::Result<BatchRowsAt> {
    return BatchRowsAt{Mat::Constant(x.rows(), 1, -1.0), Mat::Zero(x.rows(), x.cols())};
  };
  auto none = batched_gradient_search(unit_box(3), promising, refuting, 5, 50, 0.02, 10.0, 5);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

}  // namespace
}  // namespace propdag::internal

// verify() on inputs that reach an op rounding to integers (integer_split.cc): the search splits
// them at integers, so that every bounded box sees one rounded value.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "propdag/point_eval.h"
#include "propdag/test_util.h"
#include "propdag/verify.h"

namespace propdag {
namespace {

using test::build;

using test::floor_net;

Spec spec(double hi, const std::string& output_constraint) {
  return test::floor_spec(hi, output_constraint);
}

// Unsafe: y <= 0.25 with c = 0.5; min over the integers k in [0, 9] of (k - 3)^2 + 0.5 is 0.5,
// so the property holds. [0, 9] meets 10 cells ([0, 1), ..., [8, 9), and {9}); each is proved by
// its IBP bounds: 1 bound computation of the whole box + 10 = 11. Halving at the middle never
// proves it: every box that holds an integer k in its inside sees floor values k - 1 and k.
TEST(IntegerSplitTest, ProvesCellByCellWhatHalvingCannot) {
  Model m = build(floor_net(0.5));
  const Spec s = spec(9, "(assert (<= Y_0 0.25))\n");
  for (Method method : {Method::kIbp, Method::kCrown}) {
    auto r = verify(m, s, {method}, {1000, 0});
    ASSERT_TRUE(r.ok()) << r.error().str();
    EXPECT_TRUE(r->verified);
    EXPECT_FALSE(r->falsified);
    EXPECT_EQ(r->boxes, 11);
  }
}

// y = 1 - 1.5 [floor(x) = 5]: -0.5 on the cell [5, 6), 1 elsewhere, so unsafe y <= 0.25 only
// there. Over [0, 10^6] sampling misses that millionth of the box, and the pattern search, with
// no slope to follow, steps from the samples by 10^6 / 2^k (from x = 0: ..., 7.63, 3.81, ...);
// the search, lower cells first, bounds the cells 0 to 4 (proved) and 5, whose centre 5.5 is a
// counterexample: 1 + 6 bound computations.
TEST(IntegerSplitTest, FindsTheOneCellThatViolates) {
  Model m = build(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,1] x) => (float[1,1] y)
    <float[1] five = {5}, float[1] one = {1}, float[1] drop = {1.5}> {
      f = Floor(x)
      b = Equal(f, five)
      e = Cast<to = 1>(b)
      d = Mul(e, drop)
      y = Sub(one, d)
    })");
  const Spec s = spec(1e6, "(assert (<= Y_0 0.25))\n");
  auto r = verify(m, s, {Method::kCrown}, {1000, 0});
  ASSERT_TRUE(r.ok()) << r.error().str();
  ASSERT_TRUE(r->falsified);
  EXPECT_FALSE(r->verified);
  ASSERT_EQ(r->counterexample.size(), 1);
  EXPECT_EQ(std::floor(r->counterexample[0]), 5);
  EXPECT_EQ(r->boxes, 7);
}

// A Cast to an integer type rounds as well (toward zero). y = x - trunc(x), the fractional part,
// is in [0, 1) for x >= 0: unsafe y >= 1 holds nowhere. IBP over [0, 5]: x - trunc(x) in
// [0 - 5, 5 - 0]; within a cell [k, k + 1): x - k in [0, 1 - 2^-52 (k + 1)] < 1, proved, but its
// bounds differ from those at its centre, so cells are bounded, not dropped: 1 + 6 cells.
TEST(IntegerSplitTest, CastToIntegerSplitsToo) {
  Model m = build(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,1] x) => (float[1,1] y) {
      i = Cast<to = 7>(x)
      f = Cast<to = 1>(i)
      y = Sub(x, f)
    })");
  const Spec s = spec(5, "(assert (>= Y_0 1))\n");
  auto r = verify(m, s, {Method::kIbp}, {1000, 0});
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_TRUE(r->verified);
  EXPECT_EQ(r->boxes, 7);
}

// y = 1 / floor(x). On the cell [0, 1) the divisor is 0: the bounds there are unbounded, the
// same as at its centre, so no split can prove that cell and none is tried; the cells k = 1..9
// give y = 1/k, proved against unsafe y <= -1. The search bounds all 10 cells (1 + 10 bound
// computations, far below the budget) and ends open: neither verified nor falsified.
TEST(IntegerSplitTest, ACellNoSplitCanProveLeavesTheCaseOpen) {
  Model m = build(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,1] x) => (float[1,1] y) <float[1] one = {1}> {
      f = Floor(x)
      y = Div(one, f)
    })");
  const Spec s = spec(9, "(assert (<= Y_0 -1))\n");
  auto r = verify(m, s, {Method::kIbp}, {1000, 0});
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_FALSE(r->verified);
  EXPECT_FALSE(r->falsified);
  EXPECT_EQ(r->boxes, 11);
}

// A window whose length varies with a position: w = x[s : s + 1] for s = trunc(p), one element
// for s in {0, 1, 2} and none past the end, where ONNX's Slice clamps; y = ReduceSum(w) is x[s],
// or 0 (the sum of nothing) for s >= 3. The bounds describe the one-element runs only (the
// static shape), so a cell with s >= 3 is decided by evaluating its run: the model is constant
// on each cell, p reaching it through the Cast alone. `tail` computes y from w (and p).
Model window_net(const std::string& tail = "y = ReduceSum<keepdims = 1>(w)") {
  return build(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[3] x, float[1] p) => (float[1] y)
    <int64[1] one = {1}, int64[1] zero = {0}, float[1] three = {3}> {
      s = Cast<to = 7>(p)
      e = Add(s, one)
      w = Slice(x, s, e, zero)
      )" + tail +
               "\n    }");
}

// x = (1, 2, 3) (or `x`), p in [lo, hi].
Spec window_spec(double lo, double hi, const std::string& output_constraint,
                 std::vector<double> x = {1, 2, 3}) {
  return test::box_spec({x[0], x[1], x[2], lo}, {x[0], x[1], x[2], hi}, 1, output_constraint);
}

// The run at a point, with windows of ONNX's own length (none past x's end): x[s], or 0. One
// evaluator remembers what the runs share; its outputs equal a fresh evaluator's at each point.
TEST(PointEvaluatorTest, RunsTheWindowsOnnxRuns) {
  Model m = window_net();
  internal::PointEvaluator shared(m);
  const std::vector<std::pair<double, double>> cases = {{0.5, 1}, {3.5, 0}, {1.5, 2}, {3.7, 0},
                                                        {0.2, 1}, {2.0, 3}, {4.9, 0}};
  for (const auto& [p, want] : cases) {
    Vec x(4);
    x << 1, 2, 3, p;
    auto y = shared.outputs(x);
    ASSERT_TRUE(y.ok()) << y.error().str();
    ASSERT_EQ(y->size(), 1);
    EXPECT_EQ((*y)[0], want) << "p = " << p;
    internal::PointEvaluator fresh(m);
    EXPECT_EQ(*fresh.outputs(x), *y) << "p = " << p;
  }
}

TEST(IntegerSplitTest, CellsWhoseWindowVariesAreDecidedByTheirRuns) {
  Model m = window_net();
  ASSERT_FALSE(m.value_dependent_shape().empty());
  // y in {1, 2, 3} on [0, 2.5]: unsafe y <= 0.5 holds nowhere, proved by the runs of the cells
  // [0, 1), [1, 2), [2, 2.5] (the whole box, then 3 cells).
  auto r = verify(m, window_spec(0, 2.5, "(assert (<= Y_0 0.5))\n"), {Method::kIbp}, {1000, 0});
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_TRUE(r->verified);
  EXPECT_EQ(r->boxes, 4);
  // On [0, 4.5] the cells [3, 4) and [4, 4.5] sum no element: y = 0 there, a counterexample, which
  // the static-shape bounds (a one-element window) do not show; its run does.
  r = verify(m, window_spec(0, 4.5, "(assert (<= Y_0 0.5))\n"), {Method::kIbp}, {1000, 0});
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_FALSE(r->verified);
  ASSERT_TRUE(r->falsified);
  EXPECT_GE(r->counterexample[3], 3.0);
  EXPECT_TRUE(*confirm_counterexample(m, window_spec(0, 4.5, "(assert (<= Y_0 0.5))\n"),
                                      r->counterexample));
  // y <= 3 everywhere on [0, 4.5]: unsafe y >= 3.5 is proved cell by cell, empty windows too.
  r = verify(m, window_spec(0, 4.5, "(assert (>= Y_0 3.5))\n"), {Method::kIbp}, {1000, 0});
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_TRUE(r->verified);
  // On [3, 4.5] every window is empty: unsafe y >= 0.5 holds nowhere (the static-shape bounds,
  // one element of x, would have it everywhere).
  r = verify(m, window_spec(3, 4.5, "(assert (>= Y_0 0.5))\n"), {Method::kIbp}, {1000, 0});
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_TRUE(r->verified);
  EXPECT_FALSE(r->falsified);
  // A point of an empty-window cell is no counterexample of y >= 0.5 (its run gives 0), though
  // the static-shape evaluation there would say otherwise.
  Vec x(4);
  x << 1, 2, 3, 3.5;
  EXPECT_FALSE(*confirm_counterexample(m, window_spec(0, 4.5, "(assert (>= Y_0 0.5))\n"), x));
}

TEST(IntegerSplitTest, NoProofWherePReachesTheOutputBesideTheWindow) {
  // y = x[s] + p <= 3 + 2.5 on [0, 2.5]: unsafe y >= 10 holds nowhere, and the bounds would
  // show it, but they describe the static-shape runs only, and p reaches y unrounded (through a
  // fixed coefficient): no cell is constant.
  Model m = window_net("t = ReduceSum<keepdims = 1>(w)\n y = Add(t, p)");
  auto r = verify(m, window_spec(0, 2.5, "(assert (>= Y_0 10))\n"), {Method::kIbp}, {1000, 0});
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_FALSE(r->verified);
  EXPECT_FALSE(r->falsified);
  // s = trunc(0.4 p): on the first cell s = 0 throughout, but on [2, 2.9] s is 0 below 2.5 and
  // 1 from there, an empty window (x has one element): y = 0 meets unsafe y <= 0.5 there, which
  // the run at the cell's corner p = 2 (y = 1) does not show. The Cast rounds 0.4 p, not p: no
  // cell is constant, and nothing is proved.
  m = build(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1] x, float[1] p) => (float[1] y)
    <int64[1] one = {1}, int64[1] zero = {0}, float[1] scale = {0.4}> {
      q = Mul(p, scale)
      s = Cast<to = 7>(q)
      e = Add(s, one)
      w = Slice(x, s, e, zero)
      y = ReduceSum<keepdims = 1>(w)
    })");
  const Spec scaled = test::box_spec({1, 0}, {1, 2.9}, 1, "(assert (<= Y_0 0.5))\n");
  r = verify(m, scaled, {Method::kIbp}, {1000, 0});
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_FALSE(r->verified);
  if (r->falsified) {
    EXPECT_GE(r->counterexample[1], 2.5);
  }
  // y = x[s] + Relu(p - 3) with x = (-1, -1, -1): on the first cell Relu(p - 3) is 0, as if p
  // did not reach y. Unsafe y >= 0.9 is met only on [3.9, 3.99], where the window is empty
  // (y = p - 3 there, not seen by the static-shape point searches), and not at the corner p = 3
  // of that cell, whose run gives 0: not verified.
  m = window_net(
      "t = ReduceSum<keepdims = 1>(w)\n q = Sub(p, three)\n r = Relu(q)\n y = Add(t, r)");
  r = verify(m, window_spec(0, 3.99, "(assert (>= Y_0 0.9))\n", {-1, -1, -1}), {Method::kIbp},
             {1000, 0});
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_FALSE(r->verified);
}

}  // namespace
}  // namespace propdag

// verify() on inputs that reach an op rounding to integers (integer_split.cc): the search splits
// them at integers, so that every bounded box sees one rounded value.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

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

}  // namespace
}  // namespace propdag

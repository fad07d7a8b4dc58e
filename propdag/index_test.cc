// Data-dependent indexing (ops/index.cc): Slice with variable starts and ends, ScatterND with
// variable indices; bounds worked by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "propdag/engine.h"
#include "propdag/test_util.h"
#include "propdag/verify.h"
#include "propdag/vnnlib.h"

namespace propdag {
namespace {

using test::box;

// x in [0,1] [5,6] [1,2] [3,4] [-2,-1] [4,5] (x_i in [lo_i, lo_i + 1]).
const std::vector<double> kLo = {0, 5, 1, 3, -2, 4}, kHi = {1, 6, 2, 4, -1, 5};

Interval at(double p_lo, double p_hi) {
  std::vector<double> lo = kLo, hi = kHi;
  lo.push_back(p_lo), hi.push_back(p_hi);
  return box(lo, hi);
}

using test::output_bounds_of;

void expect_bounds(const Interval& got, const std::vector<double>& lo,
                   const std::vector<double>& hi, const std::string& what) {
  ASSERT_EQ(got.size(), static_cast<Eigen::Index>(lo.size())) << what;
  for (size_t i = 0; i < lo.size(); ++i) {
    EXPECT_NEAR(got.lo[i], lo[i], 1e-12) << what << " lo " << i;
    EXPECT_NEAR(got.hi[i], hi[i], 1e-12) << what << " hi " << i;
  }
}

// p in [1, 2.5]: s in {1, 2}, e in {4, 5}. Windows of 3: (1, 4) and (2, 5), so
//   y_k = hull(x[1 + k], x[2 + k]): [1, 6], [1, 4], [-2, 4];  n the same (-5 + 6 = 1, ...).
//   k: starts {3, 4}, ends {5, 7} clamped to 6: only (3, 6) has 3 elements: x[3:6] exactly.
//   r: starts {4, 5}, ends {-6, -5} + 6 = {0, 1}: (4, 0) and (5, 1) have 4 elements;
//      r_k = hull(x[4 - k], x[5 - k]): [-2, 5], [-2, 4], [1, 4], [1, 6].
//   d = y - x[2:5]: [1 - 2, 6 - 1], [1 - 4, 4 - 3], [-2 + 1, 4 + 2] = [-1, 5], [-3, 1], [-1, 6]
//   (CROWN takes y's interval: the same).
TEST(VariableSliceTest, HullOverPlacements) {
  Model m = test::build(test::kSlices);
  for (Method method : {Method::kIbp, Method::kCrown}) {
    const std::string name = method == Method::kIbp ? "ibp " : "crown ";
    auto out = output_bounds_of(m, at(1, 2.5), method);
    ASSERT_EQ(out.size(), 5u);
    expect_bounds(out[0], {1, 1, -2}, {6, 4, 4}, name + "y");
    expect_bounds(out[1], {1, 1, -2}, {6, 4, 4}, name + "n");
    expect_bounds(out[2], {3, -2, 4}, {4, -1, 5}, name + "k");
    expect_bounds(out[3], {-2, -2, 1, 1}, {5, 4, 4, 6}, name + "r");
    expect_bounds(out[4], {-1, -3, -1}, {5, 1, 6}, name + "d");
  }
}

// p in [2, 2.9]: s = 2, one window each: the plain slices y = x[2:5], r = x[5], ..., x[2].
// k has no window of 3 ((4, 6) has 2): every element takes the hull of x, [-2, 6].
// d = y - x[2:5]: IBP [-1, 1] each; CROWN, through the plain slice's select, exactly 0.
TEST(VariableSliceTest, OnePlacementIsThePlainSlice) {
  Model m = test::build(test::kSlices);
  auto ibp = output_bounds_of(m, at(2, 2.9), Method::kIbp);
  ASSERT_EQ(ibp.size(), 5u);
  expect_bounds(ibp[0], {1, 3, -2}, {2, 4, -1}, "y");
  expect_bounds(ibp[1], {1, 3, -2}, {2, 4, -1}, "n");
  expect_bounds(ibp[2], {-2, -2, -2}, {6, 6, 6}, "k");
  expect_bounds(ibp[3], {4, -2, 3, 1}, {5, -1, 4, 2}, "r");
  expect_bounds(ibp[4], {-1, -1, -1}, {1, 1, 1}, "d ibp");
  auto crown = output_bounds_of(m, at(2, 2.9), Method::kCrown);
  expect_bounds(crown[0], {1, 3, -2}, {2, 4, -1}, "y crown");
  expect_bounds(crown[4], {0, 0, 0}, {0, 0, 0}, "d crown");
}

// y = ScatterND(x, trunc(p), u): x in [0,1] [2,3] [4,5] [6,7], u in [10, 11].
//   p in [1, 2.5]: the index is 1 or 2, so y_1 and y_2 keep x's value or take u:
//     [0, 1], [2, 11], [4, 11], [6, 7].
//   p in [2, 2.9]: index 2 surely: [0, 1], [2, 3], [10, 11], [6, 7].
//   p in [-1, -0.5]: trunc gives -1 (the last element, 3) or 0: [0, 11], [2, 3], [4, 5], [6, 11].
TEST(ScatterNdTest, HullOverPlaces) {
  Model m = test::build(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x, float[1,1] p, float[1] u) => (float[4] y) {
      i = Cast<to = 7>(p)
      y = ScatterND(x, i, u)
    })");
  auto with = [](double p_lo, double p_hi) {
    return box({0, 2, 4, 6, p_lo, 10}, {1, 3, 5, 7, p_hi, 11});
  };
  for (Method method : {Method::kIbp, Method::kCrown}) {
    expect_bounds(output_bounds_of(m, with(1, 2.5), method)[0], {0, 2, 4, 6}, {1, 11, 11, 7},
                  "two places");
    expect_bounds(output_bounds_of(m, with(2, 2.9), method)[0], {0, 2, 10, 6}, {1, 3, 11, 7},
                  "one place");
    expect_bounds(output_bounds_of(m, with(-1, -0.5), method)[0], {0, 2, 4, 6}, {11, 3, 5, 11},
                  "from the end");
  }
}

// The bounds prove y_0 >= 1 > 0 on the box (p in [1, 2.5]), but they cover the static-shape runs
// only: on the cell s = 2, k = x[4 : 7] has 2 elements, not its static 3, so that cell's run
// has other outputs than the property's Y_i, and verify proves nothing (bounds alone never do
// for a model with a variable Slice); nor does it find a counterexample where there is none.
TEST(VariableSliceTest, VerifyNeverProvesWhereAShapeMayVary) {
  Model m = test::build(test::kSlices);
  EXPECT_EQ(m.value_dependent_shape().rfind("node '", 0), 0u) << m.value_dependent_shape();
  std::string text;
  for (int i = 0; i < 7; ++i) text += "(declare-const X_" + std::to_string(i) + " Real)\n";
  for (int i = 0; i < 16; ++i) text += "(declare-const Y_" + std::to_string(i) + " Real)\n";
  const Interval b = at(1, 2.5);
  for (int i = 0; i < 7; ++i) {
    text += "(assert (>= X_" + std::to_string(i) + " " + std::to_string(b.lo[i]) + "))\n";
    text += "(assert (<= X_" + std::to_string(i) + " " + std::to_string(b.hi[i]) + "))\n";
  }
  text += "(assert (<= Y_0 0))\n";
  auto spec = parse_vnnlib(text, "slice.vnnlib");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  auto y = output_bounds_of(m, b, Method::kCrown);
  ASSERT_FALSE(y.empty());
  EXPECT_GT(y[0].lo[0], 0);  // the bound alone would prove it
  auto r = verify(m, *spec, {Method::kCrown}, SplitOptions{100, 0});
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_FALSE(r->verified);
  EXPECT_FALSE(r->falsified);
}

}  // namespace
}  // namespace propdag

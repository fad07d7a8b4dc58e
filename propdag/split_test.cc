// Bounds under ReLU splits (BoundsIn::splits): hand-worked cases, and sampled points of random
// networks checked against the bounds of the part of the box they lie in.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "propdag/engine.h"
#include "propdag/test_util.h"

namespace propdag {
namespace {

using test::box;
using test::build;
using test::kNet1;

// x1 in [-1, 1], x2 in [0, 1]; h = x1 - x2, r = relu(h), y = x1 + 0 r (r only links h to y).
// Where h >= 0: x1 >= x2 >= 0, so min y = 0 (at x = 0). Without the constraint, the box alone
// gives y >= -1. The split's multiplier b enters as y - b h = (1 - b) x1 + b x2, whose minimum
// over the box is -|1 - b| + 0, so b = 1 gives the true minimum 0. Where h <= 0 (x1 <= x2),
// min y = -1 (x = (-1, 0)), and no multiplier improves on the box: y + b h = (1 + b) x1 - b x2
// has minimum -1 - 2 b.
const char* kNet5 = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,2] x) => (float[1,1] y)
  <float[2,1] wh = {1, -1}, float[2,1] wx = {1, 0}, float[1,1] zero = {0}> {
    h = MatMul(x, wh)
    r = Relu(h)
    a = MatMul(x, wx)
    b = MatMul(r, zero)
    y = Add(a, b)
  })";

Interval bounds_under(const Model& m, const Interval& in, const std::vector<Mat>& c,
                      const Options& o, const std::vector<NeuronSplit>& splits,
                      bool* empty = nullptr) {
  BoundsIn given;
  given.splits = &splits;
  BoundsOut got;
  auto y = linear_bounds(m, in, c, o, given, &got);
  EXPECT_TRUE(y.ok()) << y.error().str();
  if (empty != nullptr) *empty = got.empty;
  return y.ok() ? *y : Interval{};
}

TEST(SplitTest, MultiplierUsesTheSplitConstraint) {
  Model m = build(kNet5);
  const int h = m.dag().find("h");
  const Interval in = box({-1, 0}, {1, 1});
  const std::vector<Mat> c{Mat::Ones(1, 1)};
  Options crown{Method::kCrown}, alpha{Method::kAlpha};
  alpha.alpha_steps = 50;
  const std::vector<NeuronSplit> active{{h, 0, true}}, inactive{{h, 0, false}};
  // CROWN has no multipliers: the box's bound.
  EXPECT_DOUBLE_EQ(bounds_under(m, in, c, crown, active).lo[0], -1);
  const double tuned = bounds_under(m, in, c, alpha, active).lo[0];
  EXPECT_LE(tuned, 0);  // sound: y(0, 0) = 0
  EXPECT_GT(tuned, -0.01);
  EXPECT_DOUBLE_EQ(bounds_under(m, in, c, alpha, inactive).lo[0], -1);
  // The multiplier comes back, and passed in again (a starting point: the warm steps, none here)
  // it gives the tuned bound at once.
  BoundsIn given;
  given.splits = &active;
  BoundsOut got;
  got.want.split_multipliers = true;
  ASSERT_TRUE(linear_bounds(m, in, c, alpha, given, &got).ok());
  const Mat multipliers = got.split_multipliers;
  ASSERT_EQ(multipliers.rows(), 1);
  ASSERT_EQ(multipliers.cols(), 1);
  EXPECT_NEAR(multipliers(0, 0), 1, 0.01);
  alpha.alpha_warm_steps = 0;
  given.split_multipliers = &multipliers;
  auto again = linear_bounds(m, in, c, alpha, given);
  ASSERT_TRUE(again.ok());
  EXPECT_DOUBLE_EQ(again->lo[0], tuned);
}

// Network 1 (test::kNet1: h = [x1 + x2, x1 - x2], y = relu(h1) + relu(h2)) on x in
// [0.5, 1]^2: h1 in [1, 2] is active everywhere, so the part where h1 <= 0 is empty; the active
// side is the whole box, and its bounds are the box's: h2 in [-0.5, 0.5] crosses 0 (upper line
// 0.5 h2 + 0.25, lower line slope 0), so y >= h1 >= 1 and
// y <= x1 + x2 + 0.5 (x1 - x2) + 0.25 = 1.5 x1 + 0.5 x2 + 0.25 <= 2.25.

TEST(SplitTest, ContradictedSplitIsAnEmptyPart) {
  Model m = build(kNet1);
  const int h = m.dag().find("h");
  const Interval in = box({0.5, 0.5}, {1, 1});
  const std::vector<Mat> c{Mat::Ones(1, 1)};
  for (Method method : {Method::kCrown, Method::kAlpha}) {
    bool empty = false;
    Interval y = bounds_under(m, in, c, {method}, {{h, 0, false}}, &empty);
    EXPECT_TRUE(empty);
    EXPECT_EQ(y.lo[0], std::numeric_limits<double>::infinity());
    EXPECT_EQ(y.hi[0], -std::numeric_limits<double>::infinity());
    y = bounds_under(m, in, c, {method}, {{h, 0, true}}, &empty);
    EXPECT_FALSE(empty);
    EXPECT_DOUBLE_EQ(y.lo[0], 1);
    EXPECT_DOUBLE_EQ(y.hi[0], 2.25);
  }
  // A split naming no element is an error, not a bound.
  BoundsIn given;
  const std::vector<NeuronSplit> bad{{h, 2, true}};
  given.splits = &bad;
  EXPECT_FALSE(linear_bounds(m, in, c, {Method::kCrown}, given).ok());
}

// Split scores on Network 1 over [-1, 1]^2: both ReLU inputs are in [-2, 2], their outputs have
// coefficient 1 in y, and the upper lines' intercept is -l u / (u - l) = 1: scores [1, 1] at h,
// and nothing at other nodes. Where the split of h1 is active (x1 + x2 >= 0), h1 is stable and
// its score is 0.
TEST(SplitTest, ScoresAreCoefficientTimesIntercept) {
  Model m = build(kNet1);
  const int h = m.dag().find("h");
  const Interval in = box({-1, -1}, {1, 1});
  BoundsIn given;
  BoundsOut got;
  got.want.split_scores = true;
  ASSERT_TRUE(linear_bounds(m, in, {Mat::Ones(1, 1)}, {Method::kCrown}, given, &got).ok());
  const std::vector<Vec>& scores = got.split_scores;
  ASSERT_EQ(scores.size(), static_cast<size_t>(m.dag().size()));
  for (int n = 0; n < m.dag().size(); ++n) {
    if (n == h) continue;
    EXPECT_EQ(scores[n].size(), 0) << n;
  }
  ASSERT_EQ(scores[h].size(), 2);
  EXPECT_DOUBLE_EQ(scores[h][0], 1);
  EXPECT_DOUBLE_EQ(scores[h][1], 1);
  const std::vector<NeuronSplit> split{{h, 0, true}};
  given.splits = &split;
  ASSERT_TRUE(linear_bounds(m, in, {Mat::Ones(1, 1)}, {Method::kCrown}, given, &got).ok());
  EXPECT_EQ(scores[h][0], 0);
  EXPECT_GT(scores[h][1], 0);
}

// A ReLU on a graph input: y = relu(x). Over x in [0.5, 1], the part where x <= 0 is empty;
// over [-1, 1], the part where x >= 0 has y in [0, 1] (and x's bounds there are [0, 1]).
TEST(SplitTest, SplitOfAGraphInput) {
  Model m = build(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,1] x) => (float[1,1] y) {
      y = Relu(x)
    })");
  const int x = m.dag().find("x");
  const std::vector<Mat> c{Mat::Ones(1, 1)};
  bool empty = false;
  bounds_under(m, box({0.5}, {1}), c, {Method::kCrown}, {{x, 0, false}}, &empty);
  EXPECT_TRUE(empty);
  Interval y = bounds_under(m, box({-1}, {1}), c, {Method::kCrown}, {{x, 0, true}}, &empty);
  EXPECT_FALSE(empty);
  EXPECT_DOUBLE_EQ(y.lo[0], 0);
  EXPECT_DOUBLE_EQ(y.hi[0], 1);
}

// A random 3-8-8-2 ReLU network as ONNX text (weights from `rng`).
std::string random_mlp(std::mt19937_64& rng) {
  std::normal_distribution<double> w(0.0, 0.8);
  auto matrix = [&](const std::string& name, int rows, int cols) {
    std::string s =
        "float[" + std::to_string(rows) + "," + std::to_string(cols) + "] " + name + " = {";
    for (int i = 0; i < rows * cols; ++i) s += (i ? ", " : "") + std::to_string(w(rng));
    return s + "}";
  };
  auto vector = [&](const std::string& name, int n) {
    std::string s = "float[" + std::to_string(n) + "] " + name + " = {";
    for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(0.3 * w(rng));
    return s + "}";
  };
  return R"(<ir_version: 8, opset_import: ["" : 15]>
    g (float[1,3] x) => (float[1,2] y)
    <)" + matrix("w1", 3, 8) +
         ", " + vector("b1", 8) + ", " + matrix("w2", 8, 8) + ", " + vector("b2", 8) + ", " +
         matrix("w3", 8, 2) + R"(> {
      m1 = MatMul(x, w1)
      h1 = Add(m1, b1)
      r1 = Relu(h1)
      m2 = MatMul(r1, w2)
      h2 = Add(m2, b2)
      r2 = Relu(h2)
      y = MatMul(r2, w3)
    })";
}

// For random networks, boxes and sets of splits (one or two ReLU inputs crossing 0, each side):
// every sampled point of the box that meets the splits has outputs within their bounds, with
// CROWN and alpha (whose multipliers are tuned).
TEST(SplitTest, SampledPointsOfEachPartLieWithinItsBounds) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int checked = 0, parts = 0;
  for (int net = 0; net < 6; ++net) {
    Model m = build(random_mlp(rng));
    const int h1 = m.dag().find("h1"), h2 = m.dag().find("h2");
    Interval in{Vec(3), Vec(3)};
    for (int d = 0; d < 3; ++d) in.lo[d] = -unit(rng), in.hi[d] = in.lo[d] + 0.5 + unit(rng);
    auto nodes = ibp_all(m, in);
    ASSERT_TRUE(nodes.ok());
    std::vector<NeuronSplit> crossing;
    for (int node : {h1, h2})
      for (Eigen::Index j = 0; j < 8; ++j)
        if ((*nodes)[node].lo[j] < 0 && (*nodes)[node].hi[j] > 0) crossing.push_back({node, j});
    ASSERT_GE(crossing.size(), 2u);
    const Mat c = Mat::Identity(2, 2);
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<NeuronSplit> splits{crossing[rng() % crossing.size()]};
      if (trial % 2) splits.push_back(crossing[rng() % crossing.size()]);
      for (NeuronSplit& s : splits) s.active = rng() % 2;
      for (Method method : {Method::kCrown, Method::kAlpha}) {
        bool empty = false;
        const Interval y = bounds_under(m, in, {c}, {method}, splits, &empty);
        ++parts;
        for (int k = 0; k < 300; ++k) {
          Vec x(3);
          for (int d = 0; d < 3; ++d) x[d] = in.lo[d] + unit(rng) * (in.hi[d] - in.lo[d]);
          auto at = ibp_all(m, {x, x});
          ASSERT_TRUE(at.ok());
          bool inside = true;
          for (const NeuronSplit& s : splits) {
            const double z = (*at)[s.node].lo[s.index];
            inside = inside && (s.active ? z >= 0 : z <= 0);
          }
          if (!inside) continue;
          EXPECT_FALSE(empty) << "a point meets splits whose part was found empty";
          const Vec& out = (*at)[m.dag().outputs()[0]].lo;
          for (int r = 0; r < 2; ++r) {
            EXPECT_GE(out[r], y.lo[r] - 1e-9) << "net " << net << " trial " << trial;
            EXPECT_LE(out[r], y.hi[r] + 1e-9) << "net " << net << " trial " << trial;
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(parts, 48);
  EXPECT_GT(checked, 2000);  // about a quarter to a half of the samples meet their splits
}

}  // namespace
}  // namespace propdag

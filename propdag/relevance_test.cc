// The objective's cone (relevance.h): which elements reach the columns an objective weighs, and
// CROWN refining only those rows.
#include "propdag/relevance.h"

#include <gtest/gtest.h>

#include <vector>

#include "propdag/crown.h"
#include "propdag/test_util.h"

namespace propdag {
namespace {

using internal::Relevance;
using test::box;
using test::build;

// A convolution of width 3 over 5 inputs (no padding): output k reads inputs k, k + 1, k + 2,
// through a gather (Reshape) and an elementwise op (Relu). z = Softmax(r) reads all of r.
constexpr const char* kConv = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,5] x) => (float[1,3] y, float[1,3] z)
  <float[1,1,1,3] k = {1, -1, 0.5}, int64[4] s = {1, 1, 1, 5}, int64[2] f = {1, 3}> {
    t = Reshape(x, s)
    c = Conv(t, k)
    r = Relu(c)
    y = Reshape(r, f)
    z = Softmax <axis = 1> (y)
  })";

int node_named(const Model& m, const std::string& name) {
  for (int n = 0; n < m.dag().size(); ++n)
    if (m.dag().node(n).name == name) return n;
  ADD_FAILURE() << "no node " << name;
  return 0;
}

// The mask of `name`, all ones where relevant_elements leaves it empty (every element).
std::vector<char> mask(const Model& m, const Relevance& r, const std::string& name) {
  const int n = node_named(m, name);
  return r[n].empty() ? std::vector<char>(m.numel(n), 1) : r[n];
}

Mat row(std::vector<double> v) {
  return Eigen::Map<Mat>(v.data(), 1, static_cast<Eigen::Index>(v.size()));
}

TEST(RelevanceTest, FollowsWeightsTapsElementsAndWholeOps) {
  Model m = build(test::two_outputs_net());
  Relevance r = internal::relevant_elements(m, {row({1, 0})});
  EXPECT_EQ(mask(m, r, "r2"), (std::vector<char>{1, 1, 0}));
  EXPECT_EQ(mask(m, r, "h2"), (std::vector<char>{1, 1, 0}));
  EXPECT_EQ(mask(m, r, "r1"), (std::vector<char>{1, 1, 1}));  // w2's columns 0, 1 are full
  EXPECT_TRUE(r[node_named(m, "x")].empty());
  r = internal::relevant_elements(m, {row({0, 3})});
  EXPECT_EQ(mask(m, r, "h2"), (std::vector<char>{0, 0, 1}));
  r = internal::relevant_elements(m, {row({1, -1})});
  for (int n = 0; n < m.dag().size(); ++n) EXPECT_TRUE(r[n].empty()) << n;

  Model conv = build(kConv);
  r = internal::relevant_elements(conv, {row({1, 0, 0}), Mat()});
  EXPECT_EQ(mask(conv, r, "r"), (std::vector<char>{1, 0, 0}));
  EXPECT_EQ(mask(conv, r, "c"), (std::vector<char>{1, 0, 0}));
  EXPECT_EQ(mask(conv, r, "x"), (std::vector<char>{1, 1, 1, 0, 0}));
  r = internal::relevant_elements(conv, {row({0, 0, 2}), Mat()});
  EXPECT_EQ(mask(conv, r, "x"), (std::vector<char>{0, 0, 1, 1, 1}));
  r = internal::relevant_elements(conv, {Mat(), row({1, 0, 0})});  // Softmax: all of y
  EXPECT_EQ(mask(conv, r, "c"), (std::vector<char>{1, 1, 1}));
  r = internal::relevant_elements(conv, {Mat(), Mat()});  // nothing weighed: nothing reaches
  EXPECT_EQ(mask(conv, r, "x"), (std::vector<char>{0, 0, 0, 0, 0}));
}

TEST(RelevanceTest, CachedPerPatternOfWeighedColumns) {
  Model m = build(test::two_outputs_net());
  auto a = internal::cached_relevance(m, {row({1, 0})});
  auto b = internal::cached_relevance(m, {row({-4, 0})});  // the same columns
  auto c = internal::cached_relevance(m, {row({0, 1})});
  EXPECT_EQ(a.get(), b.get());
  EXPECT_NE(a.get(), c.get());
  EXPECT_EQ(*c, internal::relevant_elements(m, {row({0, 1})}));
}

struct Bound {
  Interval y;
  BoundsReport report;
};

Bound objective_bound(const Model& m, const Mat& c, double budget, bool cone) {
  Options o;
  o.refine_budget = budget;
  o.objective_cone = cone;
  Bound out;
  o.report = &out.report;
  auto b = linear_bounds(m, box({-1, -1}, {1, 1}), {c}, o);
  EXPECT_TRUE(b.ok()) << b.error().str();
  if (b.ok()) out.y = *b;
  return out;
}

// two_outputs_net (test_util.h) at budget 60: h2's pass over the two rows y0 reads (52) fits where
// the pass over all three (78) does not: with the cone y0's bound is full CROWN's, without it h2
// keeps IBP's bounds.
TEST(RelevanceTest, TheConeFitsTheBudgetAndEqualsFullCrown) {
  Model m = build(test::two_outputs_net());
  const Mat c = row({1, 0});
  const Bound full = objective_bound(m, c, std::numeric_limits<double>::infinity(), false);
  const Bound cone = objective_bound(m, c, 60, true);
  const Bound all = objective_bound(m, c, 60, false);
  EXPECT_EQ(full.report.refined, 2);
  EXPECT_EQ(cone.report.refined, 2);
  EXPECT_EQ(cone.report.ibp_budget, 0);
  EXPECT_EQ(all.report.refined, 1);
  EXPECT_EQ(all.report.ibp_budget, 1);
  EXPECT_NEAR(cone.y.lo[0], full.y.lo[0], 1e-12);
  EXPECT_NEAR(cone.y.hi[0], full.y.hi[0], 1e-12);
  EXPECT_LT(all.y.lo[0], full.y.lo[0] - 1e-3);
  // Full CROWN with the cone is full CROWN: the rows left out move no bound of y0.
  const Bound full_cone = objective_bound(m, c, std::numeric_limits<double>::infinity(), true);
  EXPECT_EQ(full_cone.report.refined, 2);
  EXPECT_NEAR(full_cone.y.lo[0], full.y.lo[0], 1e-12);
  EXPECT_NEAR(full_cone.y.hi[0], full.y.hi[0], 1e-12);
}

}  // namespace
}  // namespace propdag

// The PGD attack (attack.h): gradients at points, and attacks on small hand-built networks.
#include "propdag/attack.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "propdag/engine.h"
#include "propdag/point_search.h"
#include "propdag/test_util.h"
#include "propdag/verify.h"

namespace propdag::internal {
namespace {

using test::build;

// x in [0, 1]^20, s_i = Sign(x_i - 0.9), y = s_1 + ... + s_20 (a binarized layer).
std::string sign_net() {
  std::string ones;
  for (int i = 0; i < 20; ++i) ones += i > 0 ? ", 1" : "1";
  return R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,20] x) => (float[1,1] y)
  <float[1] t = {0.9}, float[20,1] w = {)" +
         ones + R"(}> {
    d = Sub(x, t)
    s = Sign(d)
    y = MatMul(s, w)
  })";
}

using test::unit_box;

// One case, c y <= rhs row by row.
AttackTarget one_case(Mat c, Vec rhs) {
  AttackTarget t;
  t.c.push_back(std::move(c));
  t.rhs.push_back(std::move(rhs));
  return t;
}

double y_at(const Model& m, const Vec& x) {
  auto y = output_bounds(m, {x, x}, {Method::kIbp});
  EXPECT_TRUE(y.ok());
  return y->front().lo[0];
}

// y >= 19.5 holds only where every x_i > 0.9: a corner of the box 1e-20 of its volume. Sampling
// misses it: a uniform point is in it with probability 0.1^20, a face sample (each coordinate
// at its upper bound a quarter of the time, uniform half the time) with 0.3^20 = 3.5e-11. The
// gradient of y is 0 wherever it exists (Sign is flat), so descent on true gradients has
// nowhere to go either. Sign's secant over its input's range on the box (x_i - 0.9 in
// [-0.9, 0.1]: slope 1) says which way the step lies, and two sign-gradient steps of half the
// box's width each take every coordinate past 0.9.
TEST(AttackTest, FindsACounterexampleThatSamplingMissesBehindSignSteps) {
  Model m = build(sign_net());
  const Interval box = unit_box(20);
  Violation miss = [&](const Vec& x) -> common::Result<double> { return 19.5 - y_at(m, x); };
  auto sampled = point_search(box, miss, 10000, 0, 30.0);
  ASSERT_TRUE(sampled.ok());
  EXPECT_FALSE(sampled->has_value());

  int accepted = 0;
  Accept check = [&](const Vec& x) -> common::Result<bool> {
    ++accepted;
    return y_at(m, x) >= 19.5;
  };
  AttackOptions options;
  options.seconds = 30;
  auto found = pgd_attack(m, box, one_case(Mat::Constant(1, 1, -1.0), Vec::Constant(1, -19.5)),
                          options, check);
  ASSERT_TRUE(found.ok()) << found.error().str();
  ASSERT_TRUE(found->has_value());
  EXPECT_TRUE(((**found).array() > 0.9).all());
  EXPECT_TRUE(((**found).array() <= 1.0).all());
  EXPECT_EQ(accepted, 1);
}

// y <= 20 everywhere: no point reaches 20.5, and none is offered to the check.
TEST(AttackTest, ReturnsNothingWhereNoCounterexampleExists) {
  Model m = build(sign_net());
  int accepted = 0;
  Accept check = [&](const Vec&) -> common::Result<bool> {
    ++accepted;
    return true;
  };
  AttackOptions options;
  options.rounds = 2;
  options.steps = 20;
  auto found =
      pgd_attack(m, unit_box(20), one_case(Mat::Constant(1, 1, -1.0), Vec::Constant(1, -20.5)),
                 options, check);
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());
  EXPECT_EQ(accepted, 0);
}

// A point whose loss is <= 0 but that the check turns down is not returned.
TEST(AttackTest, ReturnsOnlyPointsTheCheckAccepts) {
  Model m = build(sign_net());
  Accept never = [](const Vec&) -> common::Result<bool> { return false; };
  AttackOptions options;
  options.rounds = 1;
  auto found =
      pgd_attack(m, unit_box(20), one_case(Mat::Constant(1, 1, -1.0), Vec::Constant(1, -19.5)),
                 options, never);
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());
}

// Of a disjunction, the case closest to holding is followed: y <= -100 cannot hold, y >= 19.5
// can.
TEST(AttackTest, FollowsTheCaseOfTheDisjunctionClosestToHolding) {
  Model m = build(sign_net());
  AttackTarget both = one_case(Mat::Constant(1, 1, 1.0), Vec::Constant(1, -100.0));
  both.c.push_back(Mat::Constant(1, 1, -1.0));
  both.rhs.push_back(Vec::Constant(1, -19.5));
  auto found = pgd_attack(m, unit_box(20), both, {},
                          [&](const Vec& x) -> common::Result<bool> { return y_at(m, x) >= 19.5; });
  ASSERT_TRUE(found.ok());
  EXPECT_TRUE(found->has_value());
}

// On a ReLU network the gradient is the true one (away from kinks): against central differences
// of the forward pass, at several points at once.
TEST(PointGradientTest, MatchesDifferencesOnAReluNetwork) {
  Model m = build(test::two_relu_net());
  const Interval box = test::box({-1, -1}, {1, 1});
  auto g = PointGradient::make(m, box);
  ASSERT_TRUE(g.ok());
  Mat x{{0.3, -0.2}, {-0.7, 0.45}, {0.9, 0.8}};
  auto y = g->forward(x);
  ASSERT_TRUE(y.ok());
  const Mat grad = g->backward(Mat::Ones(3, 1));
  for (Eigen::Index k = 0; k < x.rows(); ++k) {
    EXPECT_NEAR((*y)(k, 0), y_at(m, x.row(k).transpose()), 1e-12);
    for (Eigen::Index d = 0; d < 2; ++d) {
      Vec up = x.row(k).transpose(), down = up;
      up[d] += 1e-6, down[d] -= 1e-6;
      EXPECT_NEAR(grad(k, d), (y_at(m, up) - y_at(m, down)) / 2e-6, 1e-6) << k << " " << d;
    }
  }
}

// Softmax has interval bounds only: its Jacobian comes from forward differences (error O(1e-6)).
TEST(PointGradientTest, DifferentiatesSoftmaxByDifferences) {
  Model m = build(R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,3] x) => (float[1,3] y) {
    y = Softmax(x)
  })");
  auto g = PointGradient::make(m, test::box({-1, -1, -1}, {1, 1, 1}));
  ASSERT_TRUE(g.ok());
  const Mat x{{0.2, -0.5, 0.4}};
  auto y = g->forward(x);
  ASSERT_TRUE(y.ok());
  // d y_0 / d x = y_0 (e_0 - y).
  const Mat grad = g->backward(Mat{{1, 0, 0}});
  const Vec p = y->row(0).transpose();
  for (Eigen::Index d = 0; d < 3; ++d)
    EXPECT_NEAR(grad(0, d), p[0] * ((d == 0 ? 1.0 : 0.0) - p[d]), 1e-6);
}

// Through verify: the sign network's property is falsified before any split, and the point is
// one confirm_counterexample accepts.
TEST(AttackTest, VerifyReportsTheAttacksConfirmedPoint) {
  Model m = build(sign_net());
  std::string text;
  for (int i = 0; i < 20; ++i) text += "(declare-const X_" + std::to_string(i) + " Real)\n";
  text += "(declare-const Y_0 Real)\n";
  for (int i = 0; i < 20; ++i)
    text += "(assert (>= X_" + std::to_string(i) + " 0))\n(assert (<= X_" + std::to_string(i) +
            " 1))\n";
  text += "(assert (>= Y_0 19.5))\n";
  auto spec = parse_vnnlib(text, "p.vnnlib");
  ASSERT_TRUE(spec.ok());
  auto r = verify(m, *spec, {Method::kCrown}, {1000, 20});
  ASSERT_TRUE(r.ok()) << r.error().str();
  ASSERT_TRUE(r->falsified);
  EXPECT_EQ(r->boxes, 1);  // the whole box's bounds only
  auto confirmed = confirm_counterexample(m, *spec, r->counterexample);
  ASSERT_TRUE(confirmed.ok());
  EXPECT_TRUE(*confirmed);
}

}  // namespace
}  // namespace propdag::internal

#include "propdag/verify.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "propdag/objective.h"
#include "propdag/test_util.h"

namespace propdag {
namespace {

using test::build;

using test::kZero;

Spec spec(const std::string& output_constraint) { return test::one_input_spec(output_constraint); }

// Unsafe: y >= 1, i.e. -y <= -1. The case is proved over a box where -y's lower bound exceeds -1:
//   whole box (width 2): -y >= -2, open;  halves (width 1): -y >= -1, still open (not above -1);
//   quarters (width 0.5): -y >= -0.5, proved.
// Bound computations: 1 (whole box) + 2 (its halves, the one dimension tried) + 2 + 2 (each
// half's halves) = 7.
TEST(VerifyTest, SplittingProvesWhatTheWholeBoxCannot) {
  Model m = build(kZero);
  const Spec unsafe_one = spec("(assert (>= Y_0 1))");
  auto whole = verify(m, unsafe_one, {Method::kIbp});
  ASSERT_TRUE(whole.ok()) << whole.error().str();
  EXPECT_FALSE(whole->verified);
  EXPECT_EQ(whole->boxes, 1);

  auto split = verify(m, unsafe_one, {Method::kIbp}, {7, 0});
  ASSERT_TRUE(split.ok()) << split.error().str();
  EXPECT_TRUE(split->verified);
  EXPECT_FALSE(split->falsified);
  EXPECT_EQ(split->boxes, 7);

  // One computation short: the second half's split does not fit the budget.
  auto short_budget = verify(m, unsafe_one, {Method::kIbp}, {6, 0});
  ASSERT_TRUE(short_budget.ok());
  EXPECT_FALSE(short_budget->verified);
  EXPECT_FALSE(short_budget->falsified);
  EXPECT_EQ(short_budget->boxes, 5);
}

// Unsafe: y <= 0.5. IBP over the whole box leaves it open; the box's centre x = 0 gives y = 0,
// inside the unsafe set, so splitting reports it as a counterexample.
TEST(VerifyTest, ACentreInsideTheUnsafeSetIsACounterexample) {
  Model m = build(kZero);
  const Spec unsafe_low = spec("(assert (<= Y_0 0.5))");
  auto whole = verify(m, unsafe_low, {Method::kIbp});
  ASSERT_TRUE(whole.ok());
  EXPECT_FALSE(whole->verified);
  EXPECT_FALSE(whole->falsified);  // without splitting, no centre is checked

  auto split = verify(m, unsafe_low, {Method::kIbp}, {100, 0});
  ASSERT_TRUE(split.ok());
  EXPECT_FALSE(split->verified);
  ASSERT_TRUE(split->falsified);
  ASSERT_EQ(split->counterexample.size(), 1);
  EXPECT_EQ(split->counterexample[0], 0.0);
}

// y = |x - 0.3| (two ReLUs), x in [-1, 1]; unsafe: y <= 0.05, i.e. x in [0.25, 0.35]. Neither
// the centre (y = 0.3) nor a corner (1.3, 0.7) is a counterexample, and a budget of 2 bound
// computations leaves no room for a split: only the search by sampling and pattern steps can
// find one, and what it finds must lie in that interval.

TEST(VerifyTest, SearchFindsACounterexampleAwayFromCentreAndCorners) {
  Model m = build(test::distance_net(false));
  for (Method method : {Method::kIbp, Method::kCrown}) {
    auto r = verify(m, spec("(assert (<= Y_0 0.05))"), {method}, {2, 0});
    ASSERT_TRUE(r.ok()) << r.error().str();
    ASSERT_TRUE(r->falsified);
    EXPECT_EQ(r->boxes, 1);
    ASSERT_EQ(r->counterexample.size(), 1);
    EXPECT_GE(r->counterexample[0], 0.25);
    EXPECT_LE(r->counterexample[0], 0.35);
  }
  // Without room to search (no splitting), the same property stays open.
  auto whole = verify(m, spec("(assert (<= Y_0 0.05))"), {Method::kCrown});
  ASSERT_TRUE(whole.ok());
  EXPECT_FALSE(whole->falsified);
  EXPECT_FALSE(whole->verified);
}

// SplitOptions::probe_boxes: a small input's open case is split briefly before the point
// searches. kZero under IBP (the first test) is proved by it in the 7 bound computations the
// search after the point searches makes without it. A probe of 4 stops short (nothing of it is
// kept), and that search proves the case in 7 more. On y = |x - 0.3| the probe's split boxes
// have a corner at x = 0.25, a counterexample (y = 0.05 <= 0.05) that the whole box's corners
// and centre are not.
TEST(VerifyTest, AShortSplitSearchComesBeforeThePointSearches) {
  Model m = build(kZero);
  const Spec unsafe_one = spec("(assert (>= Y_0 1))");
  auto proved_with = [&](int64_t probe_boxes) {
    SplitOptions split{1000, 0};
    split.probe_boxes = probe_boxes;
    auto r = verify(m, unsafe_one, {Method::kIbp}, split);
    EXPECT_TRUE(r.ok() && r->verified) << probe_boxes;
    return r.ok() ? *r : VerifyResult{};
  };
  const VerifyResult probed = proved_with(200), searched = proved_with(0), cut = proved_with(4);
  EXPECT_EQ(probed.cases_probed, 1);
  EXPECT_EQ(probed.boxes, 7);
  EXPECT_EQ(searched.cases_probed, 0);
  EXPECT_EQ(searched.boxes, 7);
  EXPECT_EQ(cut.cases_probed, 0);
  EXPECT_GT(cut.boxes, 7);
  EXPECT_LE(cut.boxes, 7 + 4);

  auto found = verify(build(test::distance_net(false)), spec("(assert (<= Y_0 0.05))"),
                      {Method::kCrown}, {1000, 0});
  ASSERT_TRUE(found.ok()) << found.error().str();
  ASSERT_TRUE(found->falsified);
  EXPECT_GT(found->boxes, 1);  // by splitting (the point searches find it with none: above)
  ASSERT_EQ(found->counterexample.size(), 1);
  EXPECT_LE(std::abs(found->counterexample[0] - 0.3), 0.05);
}

// y = sum of sign(x_i) over 20 inputs in [-1, 1]; unsafe: y = 10, met where 15 inputs are
// positive (1.5% of uniform points: descent's 20 starting points miss it). Sign's gradient is 0, so
// descent cannot move, the centre gives y = 0, the corners where bounds are attained +-20, and 20
// inputs are too many for the pattern search: sampling finds it.
TEST(VerifyTest, SamplingFindsCounterexamplesOfLargeInputsWithoutGradients) {
  std::string ones = "1";
  std::string text = "(declare-const Y_0 Real)\n(assert (>= Y_0 10))\n(assert (<= Y_0 10))\n";
  for (int i = 0; i < 20; ++i) {
    if (i > 0) ones += ", 1";
    text += "(declare-const X_" + std::to_string(i) + " Real)\n(assert (>= X_" + std::to_string(i) +
            " -1))\n(assert (<= X_" + std::to_string(i) + " 1))\n";
  }
  Model m = build(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,20] x) => (float[1,1] y) <float[20,1] w = {)" +
                  ones + R"(}> {
      s = Sign(x)
      y = MatMul(s, w)
    })");
  auto s = parse_vnnlib(text, "p.vnnlib");
  ASSERT_TRUE(s.ok()) << s.error().str();
  auto r = verify(m, *s, {Method::kCrown}, {2, 0});
  ASSERT_TRUE(r.ok()) << r.error().str();
  ASSERT_TRUE(r->falsified);
  double y = 0;
  for (double v : r->counterexample) y += v > 0 ? 1 : (v < 0 ? -1 : 0);
  EXPECT_GE(y, 10);
  EXPECT_LE(y, 10);
}

// CROWN is exact on y = x - x, so the whole box suffices for the same property.
TEST(VerifyTest, CrownNeedsNoSplitWhereItsBoundsAreExact) {
  Model m = build(kZero);
  auto r = verify(m, spec("(assert (>= Y_0 1))"), {Method::kCrown}, {7, 0});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->verified);
  EXPECT_EQ(r->boxes, 1);
}

// y = [x, w x] for x in [-1, 1] (a linear model, on which CROWN is exact).
Model scaled_pair(double w) {
  return build(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,1] x) => (float[1,2] y) <float[1,2] w = {1, )" +
               std::to_string(w) + R"(}> {
      y = MatMul(x, w)
    })");
}

// x in [-1, 1], outputs Y_0 and Y_1, and `constraints`.
Spec pair_spec(const std::string& constraints) { return test::box_spec({-1}, {1}, 2, constraints); }

// Whether CROWN proves `s` on `m` without splitting (one bound computation), and IBP does not.
void expect_crown_proves_at_once(const Model& m, const Spec& s) {
  auto crown = verify(m, s, {Method::kCrown});
  ASSERT_TRUE(crown.ok()) << crown.error().str();
  EXPECT_TRUE(crown->verified);
  EXPECT_EQ(crown->boxes, 1);
  auto ibp = verify(m, s, {Method::kIbp});
  ASSERT_TRUE(ibp.ok());
  EXPECT_FALSE(ibp->verified);
}

// y = [x, -x]; unsafe: y0 <= -0.5 and y1 <= -0.5 (x <= -0.5 and x >= 0.5: no such x). Neither
// constraint alone is refuted over the box (each y_i reaches -1), but their average
// (y0 + y1) / 2 = 0 exceeds the average right-hand side -0.5 everywhere: CROWN's linear lower
// bounds of the two rows, weighted by the joint margin, prove the case without splitting. IBP
// bounds the average from y's interval, [-1, 1], and cannot.
TEST(VerifyTest, AnAverageOfConstraintsProvesWhatNoSingleOneCan) {
  expect_crown_proves_at_once(scaled_pair(-1), pair_spec("(assert (<= Y_0 -0.5))\n"
                                                         "(assert (<= Y_1 -0.5))\n"));
}

// The objective rows of a case of k constraints: the constraints, then for 3 <= k <= 5 the
// average of each pair, and for k >= 3 the average of all. Two constraints get no averaged row:
// the joint margin weighs their two rows per box (the test above).
TEST(VerifyTest, ObjectiveRowsAverageThreeToFiveConstraintsInPairs) {
  const Mat one = internal::row_weights(1), two = internal::row_weights(2);
  ASSERT_EQ(one.rows(), 1);
  EXPECT_EQ(one(0, 0), 1.0);
  ASSERT_EQ(two.rows(), 2);
  EXPECT_TRUE(two.isIdentity());
  const Mat three = internal::row_weights(3);
  ASSERT_EQ(three.rows(), 7);
  EXPECT_TRUE(three.topRows(3).isIdentity());
  Mat averages(4, 3);
  averages << 0.5, 0.5, 0, 0.5, 0, 0.5, 0, 0.5, 0.5, 1.0 / 3, 1.0 / 3, 1.0 / 3;
  EXPECT_TRUE(three.bottomRows(4).isApprox(averages));
  const Mat six = internal::row_weights(6);  // past five: the average of all only
  ASSERT_EQ(six.rows(), 7);
  EXPECT_TRUE(six.row(6).isApprox(Vec::Constant(6, 1.0 / 6).transpose()));
}

// y = [x, -3x]; unsafe: y0 <= -0.5 and y1 <= -1.5 (x <= -0.5 and x >= 0.5: no such x). Each
// constraint alone is met somewhere, and so is their average: (y0 + y1) / 2 = -x has minimum -1,
// exactly the average right-hand side (a margin of 0, not a proof). With weights 3/4 and 1/4 the
// combination is 0.75 x - 0.75 x = 0 against -0.375 - 0.375 = -0.75: a margin of 0.75. CROWN's
// linear lower bounds combined with the weights that the joint margin finds prove the case
// without splitting; IBP (no linear bounds) leaves it open.
TEST(VerifyTest, WeightedConstraintsProveWhatTheirAverageCannot) {
  const Model m = scaled_pair(-3);
  expect_crown_proves_at_once(m, pair_spec("(assert (<= Y_0 -0.5))\n(assert (<= Y_1 -1.5))\n"));
  // y0 <= -0.5 and y1 <= 1.5 are met together at x = -0.5: no weights prove that case.
  auto open =
      verify(m, pair_spec("(assert (<= Y_0 -0.5))\n(assert (<= Y_1 1.5))\n"), {Method::kCrown});
  ASSERT_TRUE(open.ok());
  EXPECT_FALSE(open->verified);
}

// ReLU splits. test::kNet1, y = relu(x1 + x2) + relu(x1 - x2), for x in [-1, 1]^2 (true maximum 2);
// unsafe: y >= 2.5. CROWN's upper lines give y <= 3 (engine_test.cc, Network 1), and alpha tunes
// only lower lines: open over the whole box. Both ReLU inputs h lie in [-2, 2] with score 1 (split
// scores: coefficient 1 times intercept 1); the first, h1, is split first.
//   h1 >= 0: relu(h1) = h1, y <= x1 + x2 + 0.5 (x1 - x2) + 1 <= 3, open; its h2 is split next:
//     h2 >= 0 too: y = 2 x1 <= 2, proved;  h2 <= 0: y = x1 + x2 <= 2, proved.
//   h1 <= 0: y <= 0.5 (x1 - x2) + 1 <= 2, proved.
// Bound computations: 1 (whole box) + 2 (h1's sides) + 2 (h2's, under h1 >= 0) = 5.
TEST(VerifyTest, ReluSplitsProveWhatTheWholeBoxCannot) {
  Model m = build(test::kNet1);
  const Spec s = test::box_spec({-1, -1}, {1, 1}, 1, "(assert (>= Y_0 2.5))\n");
  SplitOptions relu{5, 0};
  relu.branching = Branching::kRelu;
  for (Method method : {Method::kCrown, Method::kAlpha}) {
    auto whole = verify(m, s, {method});
    ASSERT_TRUE(whole.ok()) << whole.error().str();
    EXPECT_FALSE(whole->verified);
    auto split = verify(m, s, {method}, relu);
    ASSERT_TRUE(split.ok()) << split.error().str();
    EXPECT_TRUE(split->verified);
    EXPECT_FALSE(split->falsified);
    EXPECT_EQ(split->boxes, 5);
  }
  // One computation short: h2's sides do not fit.
  relu.max_boxes = 4;
  auto short_budget = verify(m, s, {Method::kCrown}, relu);
  ASSERT_TRUE(short_budget.ok());
  EXPECT_FALSE(short_budget->verified);
  EXPECT_EQ(short_budget->boxes, 3);
}

// y = Relu(x), x in [-1, 1], so y in [0, 1]. Three cases over the same box: y >= 2 and y <= -0.5
// are proved by the bounds, y >= 0.5 is not. IBP and CROWN bound the three in one computation
// (their intermediate bounds are the same), alpha tunes each case's slopes on its own: the
// verdicts are the same either way.
TEST(VerifyTest, CasesOverOneBoxShareOneBoundComputation) {
  Model m = build(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,1] x) => (float[1,1] y) {
      y = Relu(x)
    })");
  auto s = parse_vnnlib(
      "(declare-const X_0 Real)\n(declare-const Y_0 Real)\n"
      "(assert (>= X_0 -1))\n(assert (<= X_0 1))\n"
      "(assert (or (and (>= Y_0 2)) (and (<= Y_0 -0.5)) (and (>= Y_0 0.5))))\n",
      "p.vnnlib");
  ASSERT_TRUE(s.ok()) << s.error().str();
  ASSERT_EQ(s->cases.size(), 3u);
  for (Method method : {Method::kIbp, Method::kCrown, Method::kAlpha}) {
    auto r = verify(m, *s, {method});
    ASSERT_TRUE(r.ok()) << r.error().str();
    EXPECT_FALSE(r->verified);
    EXPECT_EQ(r->cases_proved, 2);
    EXPECT_EQ(r->boxes, method == Method::kAlpha ? 3 : 1);
  }
  // With splitting, the open case is falsified at the box's corner x = 1 (y = 1 >= 0.5).
  auto split = verify(m, *s, {Method::kCrown}, {100, 0});
  ASSERT_TRUE(split.ok()) << split.error().str();
  ASSERT_TRUE(split->falsified);
  EXPECT_GE(split->counterexample[0], 0.5);
}

}  // namespace
}  // namespace propdag

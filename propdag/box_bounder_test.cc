// The search through a BoxBounder (verify.h), the interface batched engines implement: with the
// Eigen engine behind it, one box per call, it makes the Eigen search's bound computations; a
// large input's whole box bounded once more with full CROWN by such a bounder.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/testing.h"
#include "propdag/engine.h"
#include "propdag/test_util.h"
#include "propdag/verify.h"
#include "propdag/vnnlib.h"

namespace propdag {
namespace {

// A BoxBounder on the Eigen engine, one box per call: linear_bounds with each box's carried node
// bounds as BoundsIn::node_bounds. Counts its calls and keeps the last refine budget.
class EigenBounder : public BoxBounder {
 public:
  explicit EigenBounder(const Model& model) : model_(model) {}
  int calls = 0;
  double budget = 0;
  int batch() const override { return 1; }
  common::Result<std::vector<Interval>> bound(const std::vector<Interval>& boxes,
                                              const std::vector<Mat>& c, const Options& options,
                                              std::vector<Mat>* lower_coef,
                                              std::vector<std::vector<Interval>>* node_bounds,
                                              std::vector<Vec>* lower_bias) override {
    ++calls;
    budget = options.refine_budget;
    std::vector<Interval> out;
    if (lower_coef != nullptr) lower_coef->assign(boxes.size(), Mat());
    if (lower_bias != nullptr) lower_bias->assign(boxes.size(), Vec());
    for (size_t i = 0; i < boxes.size(); ++i) {
      BoundsIn in;
      in.node_bounds = node_bounds != nullptr ? &(*node_bounds)[i] : nullptr;
      BoundsOut got;
      got.want.lower_coef = lower_coef != nullptr;
      got.want.node_bounds = node_bounds != nullptr;
      ASSIGN_OR_RETURN(Interval y, linear_bounds(model_, boxes[i], c, options, in, &got));
      if (lower_coef != nullptr) (*lower_coef)[i] = std::move(got.lower_coef);
      if (lower_bias != nullptr) (*lower_bias)[i] = std::move(got.lower_bias);
      if (node_bounds != nullptr) (*node_bounds)[i] = std::move(got.node_bounds);
      out.push_back(std::move(y));
    }
    return out;
  }

 private:
  const Model& model_;
};

// ACAS Xu 1_1 prop_2 (holds), CROWN: the search through a BoxBounder carries node bounds from a
// box to its halves as the search without one does, so with the Eigen engine behind it, one box
// per call, it makes the same bound computations (3,131, the count that carrying makes short:
// more than 40,000 without it, propdag/torch/README.md). Clipped by its lower biases: 970 both.
TEST(VerifyTest, BoxBounderCarriesNodeBoundsAsTheSearchDoes) {
  const std::string dir = common::testing::vnncomp_dir();
  if (dir.empty()) GTEST_SKIP() << "no VNN-COMP benchmarks";
  auto model = Model::load(dir + "/acasxu_2023/onnx/ACASXU_run2a_1_1_batch_2000.onnx.gz");
  ASSERT_TRUE(model.ok()) << model.error().str();
  auto s = read_vnnlib(dir + "/acasxu_2023/vnnlib/prop_2.vnnlib.gz");
  ASSERT_TRUE(s.ok()) << s.error().str();
  SplitOptions split{20000, 0};
  split.clip_boxes = false;
  // One part (verify.h: threads), the search a BoxBounder's bounds go through (it takes none).
  split.part_boxes = std::numeric_limits<int64_t>::max();
  split.probe_boxes = 0;  // a search without a bounder only (CaseSearch::probe)
  auto plain = verify(*model, *s, {Method::kCrown}, split);
  ASSERT_TRUE(plain.ok()) << plain.error().str();
  EigenBounder bounder(*model);
  auto through = verify(*model, *s, {Method::kCrown}, split, &bounder);
  ASSERT_TRUE(through.ok()) << through.error().str();
  EXPECT_TRUE(plain->verified);
  EXPECT_TRUE(through->verified);
  EXPECT_EQ(through->boxes, plain->boxes);
  EXPECT_EQ(plain->boxes, 3131);
  split.clip_boxes = true;
  auto clipped = verify(*model, *s, {Method::kCrown}, split);
  ASSERT_TRUE(clipped.ok()) << clipped.error().str();
  EXPECT_TRUE(clipped->verified);
  EXPECT_EQ(clipped->boxes, 970);  // boxes cut to where the case can hold, splits chosen so
  auto clipped_through = verify(*model, *s, {Method::kCrown}, split, &bounder);
  ASSERT_TRUE(clipped_through.ok()) << clipped_through.error().str();
  EXPECT_TRUE(clipped_through->verified);
  EXPECT_EQ(clipped_through->boxes, clipped->boxes);
}

// test::wide_network1 (20 inputs in [-1, 1]: large). At budget 260 CROWN refines h1 (83 a row:
// 3 + w1's 60 entries + x's 20) and leaves h2 (98 a row) to IBP. A bound t halfway between that
// lower bound of y and full CROWN's: the whole box's budgeted bound leaves y > t open, and one
// more bound of it with full CROWN (SplitOptions::full_crown) proves it, before any split.
using test::wide_network1;

Options budget_260() {
  Options budgeted{Method::kCrown};
  budgeted.refine_budget = 260;
  budgeted.refine_stable_rows = true;  // as verify() bounds
  return budgeted;
}

// y's bounds on the box [-1, 1]^20 at that budget (`cut`) and with full CROWN.
void cut_and_full(const Model& m, const Options& budgeted, Interval* cut, Interval* full) {
  const Interval box{Vec::Constant(20, -1), Vec::Constant(20, 1)};
  auto c = output_bounds(m, box, budgeted);
  auto f = output_bounds(m, box, {Method::kCrown});
  ASSERT_TRUE(c.ok() && f.ok());
  *cut = c->front(), *full = f->front();
}

TEST(VerifyTest, LargeInputsGetOneFullCrownBoundBeforeSplitting) {
  Model m = wide_network1();
  const Options budgeted = budget_260();
  Interval cut, full;
  ASSERT_NO_FATAL_FAILURE(cut_and_full(m, budgeted, &cut, &full));
  const double lo_cut = cut.lo[0], lo_full = full.lo[0];
  ASSERT_LT(lo_cut, lo_full - 0.1);
  char rhs[64];
  std::snprintf(rhs, sizeof rhs, "(assert (<= Y_0 %.17g))\n", (lo_cut + lo_full) / 2);
  const Spec spec = test::box_spec(std::vector<double>(20, -1), std::vector<double>(20, 1), 1, rhs);
  EigenBounder bounder(m);
  SplitOptions split{2, 0};
  split.clip_boxes = false;  // else the whole box, clipped, is bounded again
  auto without = verify(m, spec, budgeted, split);
  ASSERT_TRUE(without.ok()) << without.error().str();
  EXPECT_FALSE(without->verified);
  EXPECT_FALSE(without->falsified);
  split.full_crown = [&bounder]() -> BoxBounder* { return &bounder; };
  auto with = verify(m, spec, budgeted, split);
  ASSERT_TRUE(with.ok()) << with.error().str();
  EXPECT_TRUE(with->verified);
  EXPECT_EQ(bounder.calls, 1);
  EXPECT_TRUE(std::isinf(bounder.budget));
  EXPECT_EQ(with->boxes, 2);
  // Without a budget that can cut a pass short, the whole box's bounds are full CROWN already:
  // no second bound, even where they leave the case open (y > lo_full + 0.001).
  std::snprintf(rhs, sizeof rhs, "(assert (<= Y_0 %.17g))\n", lo_full + 1e-3);
  const Spec beyond =
      test::box_spec(std::vector<double>(20, -1), std::vector<double>(20, 1), 1, rhs);
  auto unbudgeted = verify(m, beyond, {Method::kCrown}, split);
  ASSERT_TRUE(unbudgeted.ok()) << unbudgeted.error().str();
  EXPECT_FALSE(unbudgeted->verified);
  EXPECT_EQ(bounder.calls, 1);
}

// The same network, two cases over its box: y <= t and y >= u, t and u each halfway between the
// budgeted bound and full CROWN's. Both need the full bound, which they get from one call.
TEST(VerifyTest, CasesOverOneBoxShareOneFullCrownBound) {
  Model m = wide_network1();
  const Options budgeted = budget_260();
  Interval c, f;
  ASSERT_NO_FATAL_FAILURE(cut_and_full(m, budgeted, &c, &f));
  ASSERT_LT(c.lo[0], f.lo[0] - 0.1);
  ASSERT_GT(c.hi[0], f.hi[0] + 0.1);
  char rhs[160];
  std::snprintf(rhs, sizeof rhs, "(assert (or (and (<= Y_0 %.17g)) (and (>= Y_0 %.17g))))\n",
                (c.lo[0] + f.lo[0]) / 2, (c.hi[0] + f.hi[0]) / 2);
  const Spec spec = test::box_spec(std::vector<double>(20, -1), std::vector<double>(20, 1), 1, rhs);
  ASSERT_EQ(spec.cases.size(), 2u);
  EigenBounder bounder(m);
  SplitOptions split{2, 0};
  split.full_crown = [&bounder]() -> BoxBounder* { return &bounder; };
  auto r = verify(m, spec, budgeted, split);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_TRUE(r->verified);
  EXPECT_EQ(r->cases_proved, 2);
  EXPECT_EQ(bounder.calls, 1);
  EXPECT_TRUE(std::isinf(bounder.budget));
}

}  // namespace
}  // namespace propdag

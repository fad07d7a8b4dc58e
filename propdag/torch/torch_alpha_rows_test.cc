// alpha in the torch engine when a verifier's rows carry goals (Options::goal): rows taken one at a
// time where all of them do not fit Options::chunk_entries, closest to their goal first, and no
// more tuning once every box is proved. On ACAS Xu 3_3 with prop_2's box cut in four.
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "propdag/engine.h"
#include "propdag/torch/torch_engine.h"
#include "propdag/torch/torch_test_util.h"

namespace propdag::torch_engine {
namespace {

namespace fs = std::filesystem;
using torch_test::engine_for;

Options alpha_options(double chunk_entries, const Vec* goal) {
  Options o;
  o.method = Method::kAlpha;
  o.refine_budget = 2e8;
  o.chunk_entries = chunk_entries;
  o.goal = goal;
  return o;
}

// Four boxes: prop_2's box cut in four along its widest dimension.
Boxes quarters(const Interval& box) {
  Eigen::Index wide = 0;
  (box.hi - box.lo).maxCoeff(&wide);
  Boxes out{box.lo.transpose().replicate(4, 1), box.hi.transpose().replicate(4, 1)};
  const double step = (box.hi[wide] - box.lo[wide]) / 4;
  for (int i = 0; i < 4; ++i) {
    out.lo(i, wide) = box.lo[wide] + step * i;
    out.hi(i, wide) = i == 3 ? box.hi[wide] : box.lo[wide] + step * (i + 1);
  }
  return out;
}

// ACAS Xu 3_3 and prop_2's box, the box cut in four, the torch engine, and CROWN's bounds of the
// five outputs over the four boxes.
class TorchAlphaRows : public ::testing::Test {
 protected:
  void SetUp() override {
    shared_ = torch_test::load_acasxu(VNNCOMP_BENCHMARKS, "3_3", "prop_2");
    if (!shared_) GTEST_SKIP() << "shared benchmarks absent";
    boxes_ = quarters(shared_->second.hull());
    engine_ = engine_for(shared_->first);
    Options crown_options = alpha_options(1e9, nullptr);
    crown_options.method = Method::kCrown;
    auto crown = engine_->linear_bounds(boxes_, c_, crown_options);
    ASSERT_TRUE(crown.ok()) << crown.error().str();
    crown_ = std::move(*crown);
  }

  std::optional<std::pair<Model, Spec>> shared_;
  Boxes boxes_;
  const std::vector<Mat> c_ = {Mat::Identity(5, 5)};
  std::unique_ptr<Engine> engine_;
  Boxes crown_;
};

TEST_F(TorchAlphaRows, RowsTakenOneAtATimeTowardTheirGoals) {
  const Model& model = shared_->first;
  // Every row at once (all fit): the reference.
  auto all = engine_->linear_bounds(boxes_, c_, alpha_options(1e9, nullptr));
  ASSERT_TRUE(all.ok()) << all.error().str();
  // About 600 coefficients per box and row: 1,000 holds one row of one box, not five.
  const double one_row = 1000;
  // Without a goal, rows that do not all fit are not tuned: CROWN's bounds.
  auto untuned = engine_->linear_bounds(boxes_, c_, alpha_options(one_row, nullptr));
  ASSERT_TRUE(untuned.ok()) << untuned.error().str();
  EXPECT_TRUE(untuned->lo.isApprox(crown_.lo, 1e-12));
  // Goals out of reach: every row tuned, one at a time, each as in the call with every row.
  const Vec far = Vec::Constant(5, std::numeric_limits<double>::infinity());
  std::vector<Mat> coef;
  auto each = engine_->linear_bounds(boxes_, c_, alpha_options(one_row, &far), &coef);
  ASSERT_TRUE(each.ok()) << each.error().str();
  for (int k = 0; k < 4; ++k)
    torch_test::expect_close(each->lo.row(k).transpose(), all->lo.row(k).transpose(), 1e-9,
                             "box " + std::to_string(k));
  // Bounds and coefficients as the Eigen engine's alpha gives them, box by box.
  ASSERT_EQ(coef.size(), 4u);
  for (int k = 0; k < 4; ++k) {
    const Interval box{boxes_.lo.row(k).transpose(), boxes_.hi.row(k).transpose()};
    BoundsOut ref;
    ref.want.lower_coef = true;
    auto y = linear_bounds(model, box, c_, alpha_options(1e9, nullptr), {}, &ref);
    ASSERT_TRUE(y.ok()) << y.error().str();
    const std::string what = "box " + std::to_string(k);
    torch_test::expect_close(each->lo.row(k).transpose(), y->lo, 1e-9, what);
    for (Eigen::Index r = 0; r < 5; ++r)
      torch_test::expect_close(coef[static_cast<size_t>(k)].row(r).transpose(),
                               ref.lower_coef.row(r).transpose(), 1e-9, what + " coefficients");
  }
  // The row that alpha tightens most on box 0, with a goal halfway between CROWN's bound and
  // alpha's, the others with goals far above theirs (their margins smaller): that row alone is
  // tuned, until its bound passes the goal; the others keep CROWN's.
  Eigen::Index best = 0;
  (all->lo.row(0) - crown_.lo.row(0)).maxCoeff(&best);
  const double gain = all->lo(0, best) - crown_.lo(0, best);
  ASSERT_GT(gain, 1e-3);
  Vec goal = crown_.lo.row(0).transpose().array() + 1e3;
  goal[best] = crown_.lo(0, best) + gain / 2;
  const Boxes first{boxes_.lo.topRows(1), boxes_.hi.topRows(1)};
  auto toward = engine_->linear_bounds(first, c_, alpha_options(one_row, &goal));
  ASSERT_TRUE(toward.ok()) << toward.error().str();
  for (Eigen::Index r = 0; r < 5; ++r) {
    if (r == best) {
      EXPECT_GT(toward->lo(0, r), goal[r]);
      EXPECT_LT(toward->lo(0, r), all->lo(0, r));  // stopped at the goal
    } else {
      EXPECT_DOUBLE_EQ(toward->lo(0, r), crown_.lo(0, r)) << "row " << r;
    }
  }
  // A goal CROWN already meets: no row is tuned.
  Vec met = crown_.lo.row(0).transpose().array() + 1e3;
  met[best] = crown_.lo(0, best) - 1;
  auto proved = engine_->linear_bounds(first, c_, alpha_options(1e9, &met));
  ASSERT_TRUE(proved.ok()) << proved.error().str();
  EXPECT_TRUE(proved->lo.row(0).isApprox(crown_.lo.row(0), 1e-12));
}

// Goals that order the rows last to first, all of them fitting at once and none reached: every
// row tuned together in that order, each bound and coefficient row landing on its own row, as
// without goals.
TEST_F(TorchAlphaRows, RowsTakenOutOfOrderKeepTheirPlaces) {
  std::vector<Mat> free_coef, goal_coef;
  auto free = engine_->linear_bounds(boxes_, c_, alpha_options(1e9, nullptr), &free_coef);
  ASSERT_TRUE(free.ok()) << free.error().str();
  // Margins over the goals -1000 + 100 r: the last row first.
  const double top = crown_.lo.maxCoeff();
  Vec goal(5);
  for (Eigen::Index r = 0; r < 5; ++r) goal[r] = top + 1e3 - 100.0 * static_cast<double>(r);
  ASSERT_LT(free->lo.maxCoeff(), goal.minCoeff());
  auto ordered = engine_->linear_bounds(boxes_, c_, alpha_options(1e9, &goal), &goal_coef);
  ASSERT_TRUE(ordered.ok()) << ordered.error().str();
  ASSERT_EQ(goal_coef.size(), free_coef.size());
  for (int k = 0; k < 4; ++k) {
    const std::string what = "box " + std::to_string(k);
    torch_test::expect_close(ordered->lo.row(k).transpose(), free->lo.row(k).transpose(), 1e-9,
                             what);
    for (Eigen::Index r = 0; r < 5; ++r)
      torch_test::expect_close(goal_coef[static_cast<size_t>(k)].row(r).transpose(),
                               free_coef[static_cast<size_t>(k)].row(r).transpose(), 1e-9,
                               what + " coefficients");
  }
}

// Options::alpha_last_nodes on full CROWN over prop_2's box: the last two refined nodes' bounds
// lie within CROWN's and hold at sampled points (their values from IBP on the point's box), and
// the outputs' alpha bounds are within plain alpha's, tighter in sum, and hold at those points.
TEST_F(TorchAlphaRows, LastNodesTunedStayWithinCrownAndHold) {
  const Interval box = shared_->second.hull();
  const Boxes one = torch_test::one(box);
  Options plain = alpha_options(1e9, nullptr);
  plain.refine_budget = std::numeric_limits<double>::infinity();
  Options last = plain;
  last.alpha_last_nodes = 2;
  std::vector<Boxes> crown_nodes, tuned_nodes;
  auto a = engine_->linear_bounds(one, c_, plain, nullptr, &crown_nodes);
  auto t = engine_->linear_bounds(one, c_, last, nullptr, &tuned_nodes);
  ASSERT_TRUE(a.ok()) << a.error().str();
  ASSERT_TRUE(t.ok()) << t.error().str();
  ASSERT_EQ(tuned_nodes.size(), crown_nodes.size());
  EXPECT_TRUE((t->lo.array() >= a->lo.array() - 1e-12).all());
  EXPECT_GT(t->lo.sum(), a->lo.sum() + 1e-3);
  int narrowed = 0;  // nodes whose summed width alpha narrowed: the two, and some after them
  for (size_t n = 0; n < tuned_nodes.size(); ++n) {
    const Boxes &tn = tuned_nodes[n], &cn = crown_nodes[n];
    if (tn.lo.size() == 0) continue;
    EXPECT_TRUE((tn.lo.array() >= cn.lo.array() - 1e-12).all()) << "node " << n;
    EXPECT_TRUE((tn.hi.array() <= cn.hi.array() + 1e-12).all()) << "node " << n;
    narrowed += (tn.hi - tn.lo).sum() < (cn.hi - cn.lo).sum() - 1e-6;
  }
  EXPECT_GE(narrowed, 2);
  Options ibp;
  ibp.method = Method::kIbp;
  std::mt19937 rng(5);
  for (int i = 0; i < 200; ++i) {
    Vec x(box.size());
    for (Eigen::Index j = 0; j < x.size(); ++j)
      x[j] = std::uniform_real_distribution<double>(box.lo[j], box.hi[j])(rng);
    std::vector<Boxes> at;
    auto y = engine_->linear_bounds(torch_test::one({x, x}), c_, ibp, nullptr, &at);
    ASSERT_TRUE(y.ok()) << y.error().str();
    for (Eigen::Index o = 0; o < 5; ++o)
      ASSERT_GE(y->hi(0, o), t->lo(0, o) - 1e-9) << "output " << o;
    for (size_t n = 0; n < at.size(); ++n) {
      if (tuned_nodes[n].lo.size() == 0 || at[n].lo.size() == 0) continue;
      ASSERT_TRUE((at[n].hi.array() >= tuned_nodes[n].lo.array() - 1e-9).all()) << "node " << n;
      ASSERT_TRUE((at[n].lo.array() <= tuned_nodes[n].hi.array() + 1e-9).all()) << "node " << n;
    }
  }
}

}  // namespace
}  // namespace propdag::torch_engine

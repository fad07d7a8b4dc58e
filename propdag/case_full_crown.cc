// CaseSearch's full CROWN bound of the whole box (one case's, or several cases' at once), and
// whether its parts are bounded with full CROWN too.
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "propdag/case_search.h"
#include "propdag/crown.h"

namespace propdag::internal {
namespace {

// The intermediate nodes nearest the outputs whose bounds alpha tunes in the whole box's full
// CROWN bound (Options::alpha_last_nodes). cGAN 32x32x1 prop_3, whose cases need the output in
// (0.28824, 0.33824): [0.287876, 0.339088] with none, [0.288005, 0.336765] with one, [0.289136,
// 0.335532] with two (21.2 and 23.3 s against 20 s on the CPU).
constexpr int kFullCrownTunedNodes = 2;
// CaseSearch::full_pays: the parts of a small input are bounded with full CROWN when the whole
// box's full CROWN bound misses by less than this share of what the refine budget's missed by.
// cGAN 32x32x3 prop_1's case y >= 0.25901, slimmed: -0.0025 against -1,516 (-8,737 on the model
// as stored): the budget's bounds are IBP's in all but name.
constexpr double kFullGap = 0.25;

// `inner` with every call's options those of a full CROWN bound: no refine budget, alpha also
// on the last nodes.
class FullCrown : public BoxBounder {
 public:
  explicit FullCrown(BoxBounder& inner) : inner_(inner) {}
  int batch() const override { return inner_.batch(); }
  common::Result<std::vector<Interval>> bound(const std::vector<Interval>& boxes,
                                              const std::vector<Mat>& c, const Options& options,
                                              std::vector<Mat>* lower_coef,
                                              std::vector<std::vector<Interval>>* node_bounds,
                                              std::vector<Vec>* lower_bias) override {
    Options full = options;
    full.refine_budget = std::numeric_limits<double>::infinity();
    full.alpha_last_nodes = kFullCrownTunedNodes;
    // Only the rows whose bounds straddle 0 change the bounds (stable ReLU-like rows are exact
    // under IBP's bounds): the rest keep those.
    full.refine_stable_rows = false;
    return inner_.bound(boxes, c, full, lower_coef, node_bounds, lower_bias);
  }

 private:
  BoxBounder& inner_;
};

}  // namespace

bool CaseSearch::full_pays() const {
  return full_bounder_ != nullptr && budget_margin_ < 0 && full_margin_ < 0 &&
         full_margin_ > kFullGap * budget_margin_;
}

bool CaseSearch::wants_full_crown() const {
  if (full_done_ || !split_.full_crown || !whole_ || options_.method == Method::kIbp ||
      evaluator_ != nullptr || out_of_time())
    return false;
  std::vector<double> rows;
  for (const Mat& c : objective_) rows.push_back(static_cast<double>(c.rows()));
  return budget_may_bind(model_, options_, rows);
}

common::Result<bool> CaseSearch::full_crown_whole_box() {
  if (full_done_) return whole_ && proved(*whole_);
  if (!wants_full_crown()) return false;
  full_done_ = true;
  BoxBounder* inner = split_.full_crown();
  if (inner == nullptr) return false;
  full_bounder_ = std::make_unique<FullCrown>(*inner);
  budget_margin_ = margin(*whole_);
  BoxBounder* const bounder = bounder_;
  bounder_ = full_bounder_.get();
  common::Result<Bounds> b = bound(case_.box, &*whole_);
  bounder_ = bounder;
  if (!b.ok()) return b.error();
  if (proved(*b)) return true;
  full_margin_ = margin(*b);
  whole_ = std::move(*b);
  return false;
}

common::Status CaseSearch::full_crown_together(const std::vector<CaseSearch*>& cases) {
  if (cases.size() < 2) return {};
  for (const CaseSearch* c : cases)
    if (!c->wants_full_crown()) return {};
  CaseSearch& first = *cases.front();
  BoxBounder* inner = first.split_.full_crown();
  if (inner == nullptr) return {};
  FullCrown full(*inner);
  const Stacked s = stacked(cases);
  Options options = first.options_;
  options.budget_rows = s.most;
  // Goals out of reach: one case's row past its goal proves that case only, so alpha tunes every
  // row (as many at a time as fit).
  const Vec never = Vec::Constant(s.offsets.back(), std::numeric_limits<double>::infinity());
  options.goal = &never;
  std::vector<Mat> coef;
  std::vector<Vec> bias;
  std::vector<std::vector<Interval>> nodes(1);
  if (first.carry_nodes_) nodes.front() = first.whole_->nodes;
  ASSIGN_OR_RETURN(std::vector<Interval> y,
                   full.bound({first.case_.box}, s.objective, options, &coef,
                              first.carry_nodes_ ? &nodes : nullptr, &bias));
  for (size_t i = 0; i < cases.size(); ++i) {
    CaseSearch& c = *cases[i];
    const Eigen::Index at = s.offsets[i], rows = s.offsets[i + 1] - at;
    Bounds& w = *c.whole_;  // what held before holds still
    c.budget_margin_ = c.margin(w);
    w.y.lo = w.y.lo.cwiseMax(y.front().lo.segment(at, rows));
    w.y.hi = w.y.hi.cwiseMin(y.front().hi.segment(at, rows));
    if (!coef.empty()) {
      // The coefficients and biases clip_box reads must come from one bound.
      w.coef = coef.front().middleRows(at, rows);
      w.bias = bias.empty() || bias.front().size() != y.front().lo.size()
                   ? Vec()
                   : Vec(bias.front().segment(at, rows));
    }
    if (first.carry_nodes_) w.nodes = nodes.front();
    c.full_done_ = true;
    c.full_margin_ = c.margin(w);
    c.full_bounder_ = std::make_unique<FullCrown>(*inner);
  }
  ++first.boxes_;  // one bound computation served them all
  return {};
}

}  // namespace propdag::internal

// CaseSearch's bound computations: a box's bounds (the Eigen engine's linear_bounds, or the
// BoxBounder's batches) and the whole-box bounds several cases share.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "propdag/case_search.h"
#include "propdag/crown.h"

namespace propdag::internal {
namespace {

// CaseSearch::bound's sampling of alpha's gain under input splitting. Proved by alpha's bounds
// and not by CROWN's, of the sampled halves: ACAS Xu 4_2 prop_2 23%, 1_1 prop_6 4%; lsnc
// quadrotor2d_state_2's Lyapunov case 2 of 16,000 (0.01%), where alpha costs 1.6x CROWN's time
// per half and CROWN alone proves the case in 43 s.
constexpr int64_t kAlphaSampleEvery = 16;
// Once tuning has stopped, whether it would pay again is sampled less often: a tuned half costs
// up to the alpha steps' passes of a CROWN half (torch engine on lsnc: 48 s with every 16th
// tuned, against 24 s with CROWN alone).
constexpr int64_t kAlphaPausedSampleEvery = 128;
constexpr int64_t kAlphaMinSamples = 100;
constexpr double kAlphaMinGain = 0.01;
// SplitOptions::alpha_intermediate: a large input's case tunes its boxes' intermediate bounds
// once it has spent this many bound computations undecided. Tuning them costs about 10-20x a
// box's alpha bound, and most cases are decided by their first few boxes: ml4acopf_2023 118_ieee
// prop3 and prop4 (216 and 236 cases, one bound each) took 14.2 s and 24.6 s with every box
// tuned so, against 1.6 s and 1.2 s; cora mnist-set img0 (9 cases) 5.1 s against 0.4 s.
constexpr int64_t kTunedNodesAfter = 32;

}  // namespace

CaseSearch::Stacked CaseSearch::stacked(const std::vector<CaseSearch*>& cases) {
  Stacked s;
  s.objective.resize(cases.front()->objective_.size());
  s.offsets = {0};
  for (const CaseSearch* c : cases) {
    const Eigen::Index rows = c->objective_.empty() ? 0 : c->objective_.front().rows();
    s.most = std::max(s.most, rows);
    for (size_t o = 0; o < s.objective.size(); ++o) {
      const Mat& part = c->objective_[o];
      Mat& all = s.objective[o];
      const Eigen::Index cols = part.cols() > 0 ? part.cols() : all.cols();
      Mat grown = Mat::Zero(s.offsets.back() + rows, cols);
      if (all.size() > 0) grown.topRows(all.rows()) = all;
      if (part.size() > 0) grown.bottomRows(rows) = part;
      all = std::move(grown);
    }
    s.offsets.push_back(s.offsets.back() + rows);
  }
  return s;
}

bool CaseSearch::shares_bounds() const {
  return options_.method != Method::kAlpha && !relu_splits_;
}

common::Status CaseSearch::bound_together(const std::vector<CaseSearch*>& cases) {
  if (cases.empty()) return {};
  const CaseSearch& first = *cases.front();
  const Stacked s = stacked(cases);
  const std::vector<Mat>& objective = s.objective;
  const std::vector<Eigen::Index>& offsets = s.offsets;
  const Eigen::Index most = s.most;
  Bounds b;
  BoundsOut got;
  if (first.bounder_ != nullptr) {  // one box through the BoxBounder
    Options options = first.options_;
    options.budget_rows = most;
    std::vector<Mat> coef;
    std::vector<Vec> bias;
    std::vector<std::vector<Interval>> nodes(1);
    const bool linear = options.method != Method::kIbp;
    ASSIGN_OR_RETURN(
        std::vector<Interval> y,
        first.bounder_->bound({first.case_.box}, objective, options, linear ? &coef : nullptr,
                              first.carry_nodes_ ? &nodes : nullptr, linear ? &bias : nullptr));
    b.y = std::move(y.front());
    if (!coef.empty()) b.coef = std::move(coef.front());
    if (!bias.empty()) got.lower_bias = std::move(bias.front());
    if (first.carry_nodes_ && !nodes.empty()) b.nodes = std::move(nodes.front());
  } else {
    BoundsIn in;
    in.budget_rows = most;
    got.want.lower_coef = first.options_.method != Method::kIbp;
    got.want.node_bounds = first.carry_nodes_;
    ASSIGN_OR_RETURN(
        b.y, linear_bounds(first.model_, first.case_.box, objective, first.options_, in, &got));
    b.coef = std::move(got.lower_coef);
    b.nodes = std::move(got.node_bounds);
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const Eigen::Index at = offsets[i], rows = offsets[i + 1] - offsets[i];
    Bounds mine;
    mine.y = {b.y.lo.segment(at, rows), b.y.hi.segment(at, rows)};
    if (b.coef.rows() > 0) mine.coef = b.coef.middleRows(at, rows);
    if (got.lower_bias.size() == b.y.lo.size()) {
      mine.bias = got.lower_bias.segment(at, rows);
      mine.joint = cases[i]->joint_margin(mine.coef, mine.bias, first.case_.box);
    }
    mine.nodes = b.nodes;
    cases[i]->whole_ = std::move(mine);
  }
  ++cases.front()->boxes_;  // one bound computation served them all
  return {};
}

common::Result<CaseSearch::Bounds> CaseSearch::bound(const Interval& box, const Bounds* from,
                                                     const std::vector<NeuronSplit>* splits) {
  if (bounder_ != nullptr) {
    ASSIGN_OR_RETURN(std::vector<Bounds> all, bound_all({box}, {from}));
    return std::move(all.front());
  }
  // ReLU splits' multipliers are tuned with the slopes: alpha stays on there.
  if (options_.method != Method::kAlpha || from == nullptr || splits != nullptr)
    return bound_once(box, from, splits, options_.method == Method::kAlpha);
  const bool tune = alpha_pays();
  if (!tune) ++untuned_;
  ASSIGN_OR_RETURN(Bounds b, bound_once(box, from, splits, tune));
  if (!sample_now(tune)) return b;
  ASSIGN_OR_RETURN(Bounds other, bound_once(box, from, splits, !tune));
  sampled(b, std::move(other), tune);
  return b;
}

void CaseSearch::sampled(Bounds& kept, Bounds&& other, bool tuned) {
  const Bounds& with = tuned ? kept : other;
  const Bounds& without = tuned ? other : kept;
  AlphaSamples& samples = alpha_samples();
  ++samples.sampled;
  if (proves(with) && !proves(without)) ++samples.only;
  if (proves(without) && !proves(with)) ++samples.crown_only;
  // Both hold on the box.
  kept.y.lo = kept.y.lo.cwiseMax(other.y.lo);
  kept.y.hi = kept.y.hi.cwiseMin(other.y.hi);
  kept.joint = std::max(kept.joint, other.joint);
  if (!tuned) kept.slopes = std::move(other.slopes);  // the halves' tuning starts from them
}

bool CaseSearch::sample_now(bool tuning) {
  return ++split_halves_ % (tuning ? kAlphaSampleEvery : kAlphaPausedSampleEvery) == 0;
}

bool CaseSearch::alpha_pays() const {
  const AlphaSamples& samples = alpha_samples();
  const int64_t sampled = samples.sampled, only = samples.only, crown_only = samples.crown_only;
  // Tuned slopes (warm-started from the box a half was split from) can also prove less than
  // CROWN's: tuning stops while they do so as often as they prove more.
  return sampled < kAlphaMinSamples ||
         (static_cast<double>(only) >= kAlphaMinGain * static_cast<double>(sampled) &&
          only > crown_only);
}

common::Result<CaseSearch::Bounds> CaseSearch::bound_once(const Interval& box, const Bounds* from,
                                                          const std::vector<NeuronSplit>* splits,
                                                          bool tune) {
  ++boxes_;
  return compute(box, from, splits, tune,
                 tune || options_.method != Method::kAlpha ? options_ : untuned_options_);
}

common::Result<CaseSearch::Bounds> CaseSearch::compute(const Interval& box, const Bounds* from,
                                                       const std::vector<NeuronSplit>* splits,
                                                       bool tune, const Options& options) const {
  const bool alpha = tune;
  BoundsIn in;
  in.goal = &rhs_;
  in.splits = splits;
  if (from != nullptr) {  // what the part this one was split from reached
    if (alpha) in.slopes = &from->slopes;
    if (carry_nodes_) in.node_bounds = &from->nodes;
    if (relu_splits_ && alpha) in.split_multipliers = &from->multipliers;
  }
  BoundsOut got;
  got.want.lower_coef = options_.method != Method::kIbp;
  got.want.slopes = alpha;
  got.want.node_bounds = carry_nodes_;
  got.want.split_scores = relu_splits_;
  got.want.split_multipliers = relu_splits_ && alpha;
  Bounds b;
  // Products' planes are tuned beside a CROWN bound whose coefficients steer the splits and
  // clipping of a box left open: alpha's steer them worse on lsnc, and tuned planes make alpha
  // pay on every box (quadrotor2d_state_2: 25 k boxes with CROWN's planes, 1.6 M tuned alone,
  // 3,040 tuned beside CROWN; _3: 2.4 M, 807 k, 423 k).
  if (alpha && splits == nullptr && split_.tune_planes && small() && integer_dims_.empty() &&
      products_) {
    Options tuned = options;
    tuned.alpha_planes = true;
    got.want.node_bounds = true;
    ASSIGN_OR_RETURN(b.y, linear_bounds(model_, box, objective_, tuned, in, &got));
    if (!(margin_row(b).first > 0)) {
      // Its lines clip the box beside CROWN's: quadrotor2d_state_2 / _1 / _4 / _5 took 2,329 /
      // 49,220 / 34,435 / 735 boxes as stored, against 3,075 / 60,834 / 43,602 / 1,033 with
      // CROWN's alone.
      b.tuned_coef = std::move(got.lower_coef);
      b.tuned_bias = std::move(got.lower_bias);
      // The tuned bound's intermediate bounds are CROWN's (alpha tunes the output's lines
      // only): CROWN takes them as they are and runs its final passes alone. CROWN on IBP's
      // intermediate bounds steers differently: quadrotor2d_state_1 took 43,864 boxes slimmed
      // against 60,662 here, but 82,288 as stored against 60,834.
      Options crown = options;
      crown.method = Method::kCrown;
      crown.refine_intermediate = false;
      crown.report = nullptr;  // its nodes' bounds are the tuned bound's, reported there
      BoundsIn in_crown = in;
      in_crown.slopes = nullptr;
      in_crown.node_bounds = &got.node_bounds;
      BoundsOut steer;
      steer.want.lower_coef = true;
      ASSIGN_OR_RETURN(Interval y, linear_bounds(model_, box, objective_, crown, in_crown, &steer));
      intersect(b.y, y.lo, y.hi);
      got.lower_coef = std::move(steer.lower_coef);
      got.lower_bias = std::move(steer.lower_bias);
    }
  } else if (alpha && splits == nullptr && split_.alpha_intermediate && !small() &&
             boxes_ > kTunedNodesAfter) {
    Options tuned = options;
    tuned.alpha_intermediate = true;
    ASSIGN_OR_RETURN(b.y, linear_bounds(model_, box, objective_, tuned, in, &got));
  } else {
    ASSIGN_OR_RETURN(b.y, linear_bounds(model_, box, objective_, options, in, &got));
  }
  // A box its rows prove needs no combination of them.
  if (!(margin(b) > 0)) {
    b.joint = std::max(joint_margin(got.lower_coef, got.lower_bias, box),
                       joint_margin(b.tuned_coef, b.tuned_bias, box));
  }
  b.coef = std::move(got.lower_coef);
  b.bias = std::move(got.lower_bias);
  b.slopes = std::move(got.slopes);
  if (carry_nodes_) b.nodes = std::move(got.node_bounds);
  b.scores = std::move(got.split_scores);
  b.multipliers = std::move(got.split_multipliers);
  if (from != nullptr) {  // what holds on the part this one was split from holds on it too
    b.y.lo = b.y.lo.cwiseMax(from->y.lo);
    b.y.hi = b.y.hi.cwiseMin(from->y.hi);
  }
  return b;
}

common::Result<std::vector<CaseSearch::Bounds>> CaseSearch::bound_all(
    const std::vector<Interval>& boxes, const std::vector<const Bounds*>& from) {
  std::vector<Bounds> out;
  out.reserve(boxes.size());
  if (bounder_ == nullptr && workers_ != nullptr && boxes.size() > 1)
    return bound_on_workers(boxes, from);
  if (bounder_ == nullptr) {
    for (size_t i = 0; i < boxes.size(); ++i) {
      ASSIGN_OR_RETURN(Bounds b, bound(boxes[i], from[i]));
      out.push_back(std::move(b));
    }
    return out;
  }
  Options options = options_;
  options.goal = &rhs_;  // alpha stops tuning a box once some row proves it
  // Full CROWN's parts (full_pays) are all tuned: they are few, and each costs what the whole
  // box's bound did.
  const bool halves = options_.method == Method::kAlpha && !full_mode() &&
                      std::all_of(from.begin(), from.end(), [](auto* f) { return f != nullptr; });
  if (!halves) return batched(boxes, from, options);
  // As bound() does one at a time: tuned while it pays, sampled both ways.
  Options untuned = untuned_options_;
  untuned.goal = &rhs_;
  const bool tune = alpha_pays();
  ASSIGN_OR_RETURN(out, batched(boxes, from, tune ? options : untuned));
  if (!tune) untuned_ += static_cast<int64_t>(boxes.size());
  std::vector<size_t> picked;
  std::vector<Interval> again;
  std::vector<const Bounds*> again_from;
  for (size_t i = 0; i < boxes.size(); ++i)
    if (sample_now(tune))
      picked.push_back(i), again.push_back(boxes[i]), again_from.push_back(from[i]);
  if (picked.empty()) return out;
  ASSIGN_OR_RETURN(std::vector<Bounds> other, batched(again, again_from, tune ? untuned : options));
  for (size_t j = 0; j < picked.size(); ++j) sampled(out[picked[j]], std::move(other[j]), tune);
  return out;
}

common::Result<std::vector<CaseSearch::Bounds>> CaseSearch::batched(
    const std::vector<Interval>& boxes, const std::vector<const Bounds*>& from,
    const Options& options) {
  std::vector<Bounds> out;
  out.reserve(boxes.size());
  const auto batch = static_cast<size_t>(per_call());
  for (size_t at = 0; at < boxes.size(); at += batch) {
    const size_t end = std::min(boxes.size(), at + batch);
    const std::vector<Interval> chunk(boxes.begin() + static_cast<std::ptrdiff_t>(at),
                                      boxes.begin() + static_cast<std::ptrdiff_t>(end));
    std::vector<Mat> coef;
    std::vector<Vec> bias;
    std::vector<std::vector<Interval>> nodes(end - at);
    for (size_t i = at; carry_nodes_ && i < end; ++i)
      if (from[i] != nullptr) nodes[i - at] = from[i]->nodes;
    const bool linear = options_.method != Method::kIbp;
    ASSIGN_OR_RETURN(std::vector<Interval> y,
                     bounder_->bound(chunk, objective_, options, linear ? &coef : nullptr,
                                     carry_nodes_ ? &nodes : nullptr, linear ? &bias : nullptr));
    for (size_t i = at; i < end; ++i) {
      Bounds b;
      b.y = std::move(y[i - at]);
      if (i - at < coef.size()) b.coef = std::move(coef[i - at]);
      if (i - at < bias.size() && bias[i - at].size() == b.y.lo.size()) {
        b.bias = std::move(bias[i - at]);
        if (!(margin(b) > 0)) b.joint = joint_margin(b.coef, b.bias, boxes[i]);
      }
      if (i - at < nodes.size()) b.nodes = std::move(nodes[i - at]);
      if (from[i] != nullptr) {  // what holds on the box this one was split from holds here
        b.y.lo = b.y.lo.cwiseMax(from[i]->y.lo);
        b.y.hi = b.y.hi.cwiseMin(from[i]->y.hi);
      }
      out.push_back(std::move(b));
    }
    boxes_ += static_cast<int64_t>(end - at);
  }
  return out;
}

int64_t CaseSearch::per_call() const {
  if (bounder_ != nullptr) return std::max(1, bounder_->batch());
  return workers_ != nullptr ? workers_->size() : 1;
}

}  // namespace propdag::internal

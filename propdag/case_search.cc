#include "propdag/case_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

#include "propdag/attack.h"
#include "propdag/objective.h"
#include "propdag/point_search.h"

namespace propdag::internal {
namespace {

constexpr Eigen::Index kLookaheadDims = 16;
// Falsification by search before splitting: sampled points, pattern searches started, and the
// time it may take (at most this, and at most a tenth of --timeout).
constexpr int kSamples = 10000;
constexpr size_t kStarts = 20;
// Larger inputs are sampled only (a pattern search steps every dimension): where gradients vanish
// (sign activations) descent gets nowhere, and random points of the box are what finds
// counterexamples: on a sign network's 2,700-input properties, 0.7-4.6% of the points (half
// corners, half uniform) were counterexamples where any were found in 1,000. A property with
// many cases samples each case for this long, so it stays short.
constexpr double kSearchSeconds = 1.0;
// Then gradient descent (any input size): starts, Adam steps per start, and step size relative
// to the box, for at most the same time.
constexpr int kDescentStarts = 20;
constexpr int kDescentSteps = 100;
constexpr double kDescentRate = 0.02;
// While splitting, a PGD attack (attack.h) this often (seconds) and at most a tenth of the time,
// each taking at most kSearchSeconds (and a tenth of --timeout). Every 5 s, at most a fifth,
// left 4 of ACAS Xu's 45 prop_1 instances open at 20 s on the loaded VM (130 / 46 / 10).
constexpr double kAttackEvery = 10.0;
// Splitting small inputs: one search per dimension ratio, taking turns of this many boxes.
constexpr double kRatios[] = {0, 4, 16};
constexpr int64_t kSliceBoxes = 1000;
// Boxes keep every node's bounds for their halves when the model has at most this many elements
// in all (each open box holds two doubles per element: 2 MiB at most).
constexpr int64_t kCarryElements = int64_t{1} << 17;

int64_t elements(const Model& model) {
  int64_t n = 0;
  for (int node = 0; node < model.dag().size(); ++node) n += model.numel(node);
  return n;
}

bool has_relus(const Model& model) {
  for (int node = 0; node < model.dag().size(); ++node)
    if (model.op(node) != nullptr && model.op(node)->linear_on_each_side_of_zero()) return true;
  return false;
}

}  // namespace

CaseSearch::CaseSearch(const Model& model, const SpecCase& c, const Options& options,
                       const SplitOptions& split, Clock::time_point deadline, BoxBounder* bounder)
    : model_(model),
      case_(c),
      options_(options),
      split_(split),
      deadline_(deadline),
      objective_(objective_of(model, c)),
      rhs_(rhs_of(c)),
      free_dims_((c.box.hi.array() > c.box.lo.array()).count()),
      carry_nodes_(options.method != Method::kIbp && split.carry_bounds &&
                   elements(model) <= kCarryElements),
      relu_splits_(bounder == nullptr && options.method != Method::kIbp &&
                   split.branching == Branching::kRelu && has_relus(model)),
      bounder_(bounder) {}

bool CaseSearch::shares_bounds() const {
  return options_.method != Method::kAlpha && !relu_splits_;
}

common::Status CaseSearch::bound_together(const std::vector<CaseSearch*>& cases) {
  if (cases.empty()) return {};
  const CaseSearch& first = *cases.front();
  std::vector<Mat> objective(first.objective_.size());
  std::vector<Eigen::Index> offsets = {0};
  Eigen::Index most = 0;
  for (const CaseSearch* c : cases) {
    const Eigen::Index rows = c->objective_.empty() ? 0 : c->objective_.front().rows();
    most = std::max(most, rows);
    for (size_t o = 0; o < objective.size(); ++o) {
      const Mat& part = c->objective_[o];
      Mat& all = objective[o];
      const Eigen::Index cols = part.cols() > 0 ? part.cols() : all.cols();
      Mat grown = Mat::Zero(offsets.back() + rows, cols);
      if (all.size() > 0) grown.topRows(all.rows()) = all;
      if (part.size() > 0) grown.bottomRows(rows) = part;
      all = std::move(grown);
    }
    offsets.push_back(offsets.back() + rows);
  }
  Bounds b;
  BoundsOut got;
  if (first.bounder_ != nullptr) {  // one box through the BoxBounder (no joint margins there)
    Options options = first.options_;
    options.budget_rows = most;
    std::vector<Mat> coef;
    std::vector<std::vector<Interval>> nodes(1);
    ASSIGN_OR_RETURN(std::vector<Interval> y,
                     first.bounder_->bound({first.case_.box}, objective, options,
                                           options.method != Method::kIbp ? &coef : nullptr,
                                           first.carry_nodes_ ? &nodes : nullptr));
    b.y = std::move(y.front());
    if (!coef.empty()) b.coef = std::move(coef.front());
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
    if (got.lower_bias.size() == b.y.lo.size())
      mine.joint =
          cases[i]->joint_margin(mine.coef, got.lower_bias.segment(at, rows), first.case_.box);
    mine.nodes = b.nodes;
    cases[i]->whole_ = std::move(mine);
  }
  ++cases.front()->boxes_;  // one bound computation served them all
  return {};
}

common::Result<Verdict> CaseSearch::start() {
  Bounds b;
  if (whole_) {
    b = std::move(*whole_);
    whole_.reset();
  } else {
    ASSIGN_OR_RETURN(b, bound(case_.box));
  }
  if (proved(b)) return Verdict::kProved;
  if (split_.max_boxes > 1 && !out_of_time()) {
    ASSIGN_OR_RETURN(bool hit, find_counterexample(case_.box, b));
    if (hit) return Verdict::kFalsified;
  }
  whole_ = std::move(b);
  return Verdict::kOpen;
}

common::Result<Verdict> CaseSearch::search() {
  if (split_.max_boxes <= 1 || out_of_time() || !whole_) return Verdict::kOpen;
  bool hit = false;
  // Large inputs: descent first (its few starts are cheap, and it often succeeds at once).
  if (small()) {
    ASSIGN_OR_RETURN(hit, local_search(case_.box));
  }
  if (!hit) {
    ASSIGN_OR_RETURN(hit, descent(case_.box));
  }
  if (!hit && !small()) {
    ASSIGN_OR_RETURN(hit, local_search(case_.box));
  }
  return hit ? Verdict::kFalsified : Verdict::kOpen;
}

// Small inputs get one depth-first search per entry of kRatios, run in turns of kSliceBoxes
// bound computations, each resuming where it stopped; the first to finish decides. Which choice
// of dimensions proves a case soonest varies from case to case (ACAS Xu 4_6 prop_1 takes 3.9k
// boxes with every dimension a candidate and 70k with ratio 16, 2_5 prop_1 about 6k with ratio
// 16 and more than 80k with every dimension), and taking turns costs at most kRatios' size
// times the best one.
common::Result<Verdict> CaseSearch::run() {
  if (split_.max_boxes <= 1) return Verdict::kOpen;
  next_attack_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(kAttackEvery));
  if (relu_splits_) return relu_search();
  ASSIGN_OR_RETURN(integer_dims_, find_integer_dims());
  if (!small() || !integer_dims_.empty()) {  // integer splits do not depend on the ratio
    Search only{0, {Open{case_.box, whole_}}};
    return depth_first(only, split_.max_boxes);
  }
  std::vector<Search> searches;
  for (double ratio : kRatios) searches.push_back({ratio, {Open{case_.box, whole_}}});
  for (;;) {
    for (Search& search : searches) {
      ASSIGN_OR_RETURN(Verdict v, depth_first(search, kSliceBoxes));
      if (v != Verdict::kRoundOver) return v;
    }
  }
}

common::Result<CaseSearch::Bounds> CaseSearch::bound(const Interval& box, const Bounds* from,
                                                     const std::vector<NeuronSplit>* splits) {
  if (bounder_ != nullptr) {
    ASSIGN_OR_RETURN(std::vector<Bounds> all, bound_all({box}, {from}));
    return std::move(all.front());
  }
  ++boxes_;
  const bool alpha = options_.method == Method::kAlpha;
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
  ASSIGN_OR_RETURN(b.y, linear_bounds(model_, box, objective_, options_, in, &got));
  b.joint = joint_margin(got.lower_coef, got.lower_bias, box);
  b.coef = std::move(got.lower_coef);
  b.slopes = std::move(got.slopes);
  b.nodes = std::move(got.node_bounds);
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
  if (bounder_ == nullptr) {
    for (size_t i = 0; i < boxes.size(); ++i) {
      ASSIGN_OR_RETURN(Bounds b, bound(boxes[i], from[i]));
      out.push_back(std::move(b));
    }
    return out;
  }
  const auto batch = static_cast<size_t>(per_call());
  for (size_t at = 0; at < boxes.size(); at += batch) {
    const size_t end = std::min(boxes.size(), at + batch);
    const std::vector<Interval> chunk(boxes.begin() + static_cast<std::ptrdiff_t>(at),
                                      boxes.begin() + static_cast<std::ptrdiff_t>(end));
    std::vector<Mat> coef;
    std::vector<std::vector<Interval>> nodes(end - at);
    for (size_t i = at; carry_nodes_ && i < end; ++i)
      if (from[i] != nullptr) nodes[i - at] = from[i]->nodes;
    ASSIGN_OR_RETURN(std::vector<Interval> y,
                     bounder_->bound(chunk, objective_, options_,
                                     options_.method != Method::kIbp ? &coef : nullptr,
                                     carry_nodes_ ? &nodes : nullptr));
    for (size_t i = at; i < end; ++i) {
      Bounds b;
      b.y = std::move(y[i - at]);
      if (i - at < coef.size()) b.coef = std::move(coef[i - at]);
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
  return bounder_ != nullptr ? std::max(1, bounder_->batch()) : 1;
}

std::pair<double, Eigen::Index> CaseSearch::margin_row(const Bounds& b) const {
  double best = -std::numeric_limits<double>::infinity();
  Eigen::Index row = 0;
  for (Eigen::Index r = 0; r < b.y.lo.size(); ++r) {
    if (b.y.lo[r] - rhs_[r] > best) best = b.y.lo[r] - rhs_[r], row = r;
  }
  return {best, row};
}

double CaseSearch::joint_margin(const Mat& coef, const Vec& bias, const Interval& box) const {
  constexpr int kSteps = 50;
  constexpr double kRate = 1.0;
  double best = -std::numeric_limits<double>::infinity();
  std::vector<Eigen::Index> rows;  // constraints with a finite linear lower bound take part
  for (Eigen::Index r = 0; r < bias.size() && r < rhs_.size(); ++r)
    if (std::isfinite(bias[r])) rows.push_back(r);
  if (rows.size() < 2 || coef.rows() != bias.size() || coef.cols() != box.size()) return best;
  const auto k = static_cast<Eigen::Index>(rows.size());
  Mat a(k, coef.cols());
  Vec slack(k);
  for (Eigen::Index i = 0; i < k; ++i)
    a.row(i) = coef.row(rows[i]), slack[i] = bias[rows[i]] - rhs_[rows[i]];
  // Exponentiated-gradient ascent over the simplex. At each lambda the box's corner that
  // minimizes the combination gives its exact minimum (the bound) and a supergradient.
  Vec lambda = Vec::Constant(k, 1.0 / static_cast<double>(k));
  for (int step = 0; step < kSteps && !(best > 0); ++step) {
    const Vec w = a.transpose() * lambda;
    const Vec corner = (w.array() >= 0).select(box.lo, box.hi);
    const Vec g = a * corner + slack;
    best = std::max(best, lambda.dot(g));
    const double scale = g.cwiseAbs().maxCoeff();
    if (!(scale > 0) || !std::isfinite(scale)) break;
    const double rate = kRate / (scale * std::sqrt(step + 1.0));
    lambda = (lambda.array() * (rate * g.array()).exp()).matrix();
    lambda /= lambda.sum();
  }
  return best;
}

bool CaseSearch::small() const { return free_dims_ <= kLookaheadDims; }

common::Result<bool> CaseSearch::find_counterexample(const Interval& box, const Bounds& b,
                                                     bool centre) {
  bool hit = false;
  if (centre) {
    ASSIGN_OR_RETURN(hit, counterexample_at((box.lo + box.hi) * 0.5));
  }
  for (Eigen::Index r = 0; !hit && r < b.coef.rows(); ++r) {
    Vec corner = (b.coef.row(r).transpose().array() > 0).select(box.lo, box.hi);
    ASSIGN_OR_RETURN(hit, counterexample_at(corner));
  }
  return hit;
}

common::Result<double> CaseSearch::violation(const Vec& x, Interval* at) {
  Options point = options_;
  point.method = Method::kIbp;  // exact on a one-point box, up to rounding
  ASSIGN_OR_RETURN(Interval y, linear_bounds(model_, {x, x}, objective_, point));
  if (at != nullptr) *at = y;
  double worst = -std::numeric_limits<double>::infinity();
  for (Eigen::Index r = 0; r < static_cast<Eigen::Index>(case_.unsafe.size()); ++r) {
    const double v = y.hi[r] - case_.unsafe[r].rhs;
    if (!(v <= worst)) worst = v;  // NaN counts as a miss
  }
  return worst;
}

common::Result<bool> CaseSearch::counterexample_at(const Vec& x) {
  ASSIGN_OR_RETURN(double v, violation(x));
  return v <= 0 && found(x);
}

bool CaseSearch::found(Vec x) {
  counterexample_ = std::move(x);
  return true;
}

double CaseSearch::search_seconds(double cap) const {
  if (split_.seconds <= 0) return cap;
  const double left = std::chrono::duration<double>(deadline_ - Clock::now()).count();
  return std::max(0.0, std::min({cap, 0.1 * split_.seconds, left}));
}

common::Result<bool> CaseSearch::descent(const Interval& box) {
  const auto k = static_cast<Eigen::Index>(case_.unsafe.size());
  std::vector<Mat> constraints;
  for (const Mat& c : objective_) constraints.push_back(c.rows() > 0 ? Mat(c.topRows(k)) : c);
  Options point = options_;
  point.method = Method::kCrown;
  point.refine_intermediate = false;  // IBP's bounds are exact on a one-point box
  Rows rows = [&](const Vec& x) -> common::Result<RowsAt> {
    RowsAt at;
    BoundsOut got;
    got.want.lower_coef = true;
    ASSIGN_OR_RETURN(Interval y, linear_bounds(model_, {x, x}, constraints, point, {}, &got));
    at.grad = std::move(got.lower_coef);
    at.g = y.lo - rhs_.head(k);
    return at;
  };
  const double seconds = search_seconds(kSearchSeconds);
  ASSIGN_OR_RETURN(std::optional<Vec> x,
                   gradient_search(
                       box, rows, [this](const Vec& p) { return violation(p); }, kDescentStarts,
                       kDescentSteps, kDescentRate, seconds));
  return x && found(std::move(*x));
}

common::Result<bool> CaseSearch::local_search(const Interval& box) {
  const double seconds = search_seconds(kSearchSeconds);
  ASSIGN_OR_RETURN(std::optional<Vec> x, point_search(
                                             box, [this](const Vec& p) { return violation(p); },
                                             kSamples, small() ? kStarts : 0, seconds));
  return x && found(std::move(*x));
}

common::Result<bool> CaseSearch::attack_while_splitting(const Interval& top) {
  const bool whole = attacks_ % 2 == 0;
  AttackOptions options;
  options.seconds = search_seconds(kSearchSeconds);
  options.seed += static_cast<uint64_t>(++attacks_);
  const Clock::time_point started = Clock::now();
  ASSIGN_OR_RETURN(std::optional<Vec> x,
                   pgd_attack(model_, whole ? case_.box : top, target_of({&case_}), options,
                              [this](const Vec& p) -> common::Result<bool> {
                                ASSIGN_OR_RETURN(double v, violation(p));
                                return v <= 0;
                              }));
  // The next one after kAttackEvery seconds of splitting, and at least 9x this one's time.
  const auto took = Clock::now() - started;
  next_attack_ = Clock::now() + std::max<Clock::duration>(
                                    9 * took, std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(kAttackEvery)));
  return x && found(std::move(*x));
}

}  // namespace propdag::internal

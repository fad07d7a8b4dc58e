#include "propdag/case_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

#include "propdag/attack.h"
#include "propdag/clip.h"
#include "propdag/crown.h"
#include "propdag/objective.h"

namespace propdag::internal {
namespace {

constexpr Eigen::Index kLookaheadDims = 16;
// Where the network has a nonlinear op other than a ReLU-like one (sin, cos, products, sigmoid),
// small inputs are split by one search, not one per kRatios entry, among the dimensions at least
// 1/kSmoothRatio as wide (relative to the case's box) as the widest, at the one steepest() ranks
// first, bounding only its halves. Bound computations, alpha at the VNN-COMP tool's settings,
// lsnc quadrotor2d_state_3 / _1 / _4 / _2: 9.71 M / 749 k / 654 k / 68.9 k with the three
// searches and two dimensions looked ahead -> 2.17 M / 242 k / 167 k / 24.8 k (224 s -> 52 s on
// _3); ratio 4: 2.57 M on _3, 16: 2.46 M, 2: 4.70 M, 0 (always the steepest): _2 open after
// 3.3 M; ratio 4 looking two dimensions ahead: 3.81 M. On ACAS Xu (ReLU only) the lookahead
// tries every dimension: two of five left 6 of 186 instances open at 116 s, all five none.
constexpr Eigen::Index kSmoothLookahead = 1;
constexpr double kSmoothRatio = 8;
// While splitting, a PGD attack (attack.h) this often (seconds) and at most a tenth of the time,
// each taking at most search_seconds() (1 s, a tenth of --timeout). Every 5 s, at most a fifth,
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

// A nonlinear op that is not linear on each side of 0 (not ReLU-like).
bool has_smooth_ops(const Model& model) {
  for (int node = 0; node < model.dag().size(); ++node) {
    const BoundOp* op = model.op(node);
    if (op != nullptr && op->nonlinear() && !op->linear_on_each_side_of_zero()) return true;
  }
  return false;
}

// min over `box` of t (a.row(0) . x + slack[0]) + (1 - t) (a.row(1) . x + slack[1]): each
// dimension at the end its combined coefficient's sign selects (none where it is 0, so that an
// infinite end adds no NaN).
double two_row_min(const Mat& a, const Vec& slack, const Interval& box, double t) {
  double v = t * slack[0] + (1 - t) * slack[1];
  for (Eigen::Index j = 0; j < a.cols(); ++j) {
    const double w = t * a(0, j) + (1 - t) * a(1, j);
    if (w != 0) v += w * (w > 0 ? box.lo[j] : box.hi[j]);
  }
  return v;
}

// Whether some op of `model` has products' second planes (BoundOp::has_second_relax).
bool has_products(const Model& model) {
  for (int n = 0; n < model.dag().size(); ++n)
    if (model.op(n) != nullptr && model.op(n)->has_second_relax()) return true;
  return false;
}

}  // namespace

// two_row_min is concave and piecewise linear in t, with its kinks where some dimension's
// combined coefficient is 0, so its maximum over [0, 1] lies at 0, 1 or one of those t, and
// (concave) the sorted candidates rise to it and then fall.
double two_row_margin(const Mat& a, const Vec& slack, const Interval& box) {
  std::vector<double> t = {0, 1};
  for (Eigen::Index j = 0; j < a.cols(); ++j) {
    const double d = a(1, j) - a(0, j);  // w(t) = a(1, j) - t d
    if (d == 0) continue;
    const double at = a(1, j) / d;
    if (at > 0 && at < 1) t.push_back(at);
  }
  std::sort(t.begin(), t.end());
  size_t lo = 0, hi = t.size() - 1;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (two_row_min(a, slack, box, t[mid]) < two_row_min(a, slack, box, t[mid + 1]))
      lo = mid + 1;
    else
      hi = mid;
  }
  return two_row_min(a, slack, box, t[lo]);
}

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
      smooth_(has_smooth_ops(model)),
      products_(has_products(model)),
      lookahead_dims_(smooth_ ? std::min(free_dims_, kSmoothLookahead) : free_dims_),
      carry_nodes_(options.method != Method::kIbp && split.carry_bounds &&
                   elements(model) <= kCarryElements),
      relu_splits_(bounder == nullptr && options.method != Method::kIbp &&
                   split.branching == Branching::kRelu && has_relus(model)),
      bounder_(bounder),
      small_model_(elements(model) <= kCarryElements),
      untuned_options_(options) {
  untuned_options_.method = Method::kCrown;
}

common::Result<Verdict> CaseSearch::start() {
  Bounds b;
  if (whole_) {
    b = std::move(*whole_);
    whole_.reset();
  } else if (evaluator_ != nullptr && split_.max_boxes > 1) {
    // Where shapes vary, the search splits the box into cells and decides each by its run
    // (integer_step): the whole box's bounds neither prove the case nor steer the search, so
    // IBP's do. cctsdb_yolo patch-1's CROWN bound of its box took 11 of its 24 s.
    Options ibp = options_;
    ibp.method = Method::kIbp;
    ++boxes_;
    ASSIGN_OR_RETURN(b.y, linear_bounds(model_, case_.box, objective_, ibp));
  } else {
    ASSIGN_OR_RETURN(b, bound(case_.box));
  }
  // Where shapes vary, bounds prove nothing alone: the search goes on to evaluate the cells.
  if ((evaluator_ == nullptr || split_.max_boxes <= 1) && proved(b)) return Verdict::kProved;
  if (split_.max_boxes > 1 && !out_of_time()) {
    ASSIGN_OR_RETURN(bool hit, find_counterexample(case_.box, b));
    if (hit) return Verdict::kFalsified;
  }
  whole_ = std::move(b);
  return Verdict::kOpen;
}

// Small inputs get one depth-first search per entry of kRatios, run in turns of kSliceBoxes
// bound computations, each resuming where it stopped; the first to finish decides. Which choice
// of dimensions proves a case soonest varies from case to case (ACAS Xu 4_6 prop_1 takes 3.9k
// boxes with every dimension a candidate and 70k with ratio 16, 2_5 prop_1 about 6k with ratio
// 16 and more than 80k with every dimension), and taking turns costs at most kRatios' size
// times the best one. Networks with smooth nonlinear ops get one search (kSmoothRatio).
// With `turn`, run() returns kRoundOver after about that many bound computations, and the next
// call resumes (verify() takes turns over a property's open cases).
common::Result<Verdict> CaseSearch::run(int64_t turn) {
  if (split_.max_boxes <= 1) return Verdict::kOpen;
  const int64_t turn_start = boxes_;
  if (!run_started_) {
    run_started_ = true;
    next_attack_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(kAttackEvery));
    if (relu_splits_) return relu_search();  // in one turn
    ASSIGN_OR_RETURN(integer_dims_, find_integer_dims());
    if (evaluator_ != nullptr) {
      ASSIGN_OR_RETURN(cell_dims_, find_cell_dims());
    }
    // A small input whose budget cuts passes short (a large network): its whole box too.
    ASSIGN_OR_RETURN(bool proved_whole, full_crown_whole_box());
    if (proved_whole) return Verdict::kProved;
    if (!small() || !integer_dims_.empty()) {
      // Integer splits do not depend on the ratio: one search.
      start_workers();
      searches_.push_back({0, {Open{case_.box, whole_}}});
    } else if (parallel()) {
      parallel_ = true;
    } else if (full_pays()) {
      bounder_ = full_bounder_.get();
      lookahead_dims_ = std::min<Eigen::Index>(free_dims_, 1);
      searches_.push_back({kSmoothRatio, {Open{case_.box, whole_}}});
    } else if (smooth_) {
      searches_.push_back({kSmoothRatio, {Open{case_.box, whole_}}});
    } else {
      for (double ratio : kRatios) searches_.push_back({ratio, {Open{case_.box, whole_}}});
    }
  }
  if (relu_splits_) return Verdict::kOpen;  // relu_search ended open
  if (parallel_) return run_parallel(turn);
  if (searches_.size() == 1) {
    for (;;) {
      ASSIGN_OR_RETURN(Verdict v,
                       depth_first(searches_.front(), turn > 0 ? turn : split_.max_boxes));
      // Without a turn, depth_first may still end one past the budget (a clipped box's bounds
      // computed again): the next call stops at the budget.
      if (v != Verdict::kRoundOver || turn > 0) return v;
    }
  }
  for (;;) {
    for (Search& search : searches_) {
      ASSIGN_OR_RETURN(Verdict v, depth_first(search, kSliceBoxes));
      if (v != Verdict::kRoundOver) return v;
    }
    if (out_of_time()) return Verdict::kOpen;
    if (turn > 0 && boxes_ - turn_start >= turn) return Verdict::kRoundOver;
  }
}

bool CaseSearch::small() const { return free_dims_ <= kLookaheadDims; }

common::Result<bool> CaseSearch::attack_while_splitting(const Interval& top) {
  const bool whole = attacks_ % 2 == 0;
  AttackOptions options;
  options.seconds = search_seconds();
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

// The margins read from a box's bounds: per constraint, and of a positive combination of the
// constraints.

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
  if (k == 2) return two_row_margin(a, slack, box);
  // Exponentiated-gradient ascent over the simplex. At each lambda the box's corner that
  // minimizes the combination gives its exact minimum (the bound) and a supergradient.
  Vec lambda = Vec::Constant(k, 1.0 / static_cast<double>(k));
  Vec w(a.cols()), corner(a.cols()), g(k);
  for (int step = 0; step < kSteps && !(best > 0); ++step) {
    w.noalias() = a.transpose() * lambda;
    corner = (w.array() >= 0).select(box.lo, box.hi);
    g.noalias() = a * corner;
    g += slack;
    best = std::max(best, lambda.dot(g));
    const double scale = g.cwiseAbs().maxCoeff();
    if (!(scale > 0) || !std::isfinite(scale)) break;
    const double rate = kRate / (scale * std::sqrt(step + 1.0));
    lambda.array() *= (rate * g.array()).exp();
    lambda /= lambda.sum();
  }
  return best;
}

}  // namespace propdag::internal

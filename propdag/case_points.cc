// CaseSearch's searches for counterexamples: points of the whole box (its centre, CROWN's
// corners), and before any split sampling, pattern search and gradient descent.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "propdag/attack.h"
#include "propdag/case_search.h"
#include "propdag/point_search.h"

namespace propdag::internal {
namespace {

// Falsification by search before splitting: sampled points, pattern searches started, and the
// time it may take (at most this, and at most a tenth of --timeout).
constexpr int kSamples = 10000;
constexpr size_t kStarts = 20;
constexpr int kSampleChunk = 256;  // samples evaluated together (fewer for large models)
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

// The batched searches' evaluator over `box`: the attack's (PointGradient), where every run has
// the static shapes and the case's constraints are one matrix (target_of); else none.
std::optional<PointGradient> batch_points(const Model& model, const Interval& box, bool shapes_vary,
                                          const AttackTarget& target) {
  if (shapes_vary || target.c.size() != 1) return std::nullopt;
  common::Result<PointGradient> made = PointGradient::make(model, box);
  if (!made.ok()) return std::nullopt;
  return std::move(*made);
}

// g(p, r) = c_r . y_p - rhs_r for the points' outputs y (points x outputs).
Mat constraint_values(const AttackTarget& target, const Mat& y) {
  return (y * target.c.front().transpose()).rowwise() - target.rhs.front().transpose();
}

}  // namespace

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
  if (evaluator_ != nullptr) {  // shapes may vary: the run at x must meet the case
    common::Result<Vec> y = evaluator_->outputs(x);
    if (!y.ok() || judge(*y) != Judged::kViolated) return false;
  }
  counterexample_ = std::move(x);
  return true;
}

double CaseSearch::search_seconds() const {
  if (split_.seconds <= 0) return kSearchSeconds;
  const double left = std::chrono::duration<double>(deadline_ - Clock::now()).count();
  return std::max(0.0, std::min({kSearchSeconds, 0.1 * split_.seconds, left}));
}

common::Result<bool> CaseSearch::descent(const Interval& box) {
  const double seconds = search_seconds();
  const Violation miss = [this](const Vec& p) { return violation(p); };
  // The starts stepped together, with the attack's gradients (attack.h: PointGradient).
  const AttackTarget target = target_of({&case_});
  std::optional<PointGradient> points = batch_points(model_, box, evaluator_ != nullptr, target);
  if (points) {
    const Mat& c = target.c.front();
    BatchRows rows = [&](const Mat& x) -> common::Result<BatchRowsAt> {
      BatchRowsAt at;
      ASSIGN_OR_RETURN(Mat y, points->forward(x));
      at.g = constraint_values(target, y);
      Mat dy = Mat::Zero(y.rows(), y.cols());
      for (Eigen::Index p = 0; p < y.rows(); ++p)
        for (Eigen::Index r = 0; r < c.rows(); ++r)
          if (at.g(p, r) > 0) dy.row(p) += c.row(r);
      at.grad = points->backward(dy);
      return at;
    };
    ASSIGN_OR_RETURN(
        std::optional<Vec> x,
        batched_gradient_search(box, rows, miss, kDescentStarts, kDescentSteps, kDescentRate,
                                seconds, point_rows(model_, kDescentStarts)));
    return x && found(std::move(*x));
  }
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
  ASSIGN_OR_RETURN(std::optional<Vec> x, gradient_search(box, rows, miss, kDescentStarts,
                                                         kDescentSteps, kDescentRate, seconds));
  return x && found(std::move(*x));
}

common::Result<bool> CaseSearch::local_search(const Interval& box) {
  const double seconds = search_seconds();
  // The samples go through the model a chunk at a time (affine ops as one product for all).
  const AttackTarget target = target_of({&case_});
  std::optional<PointGradient> points = batch_points(model_, box, evaluator_ != nullptr, target);
  Violations batch;
  if (points) {
    batch = [&](const Mat& x) -> common::Result<Vec> {
      ASSIGN_OR_RETURN(Mat y, points->forward(x));
      const Mat g = constraint_values(target, y);
      Vec worst = Vec::Constant(x.rows(), -std::numeric_limits<double>::infinity());
      for (Eigen::Index k = 0; k < g.rows(); ++k)
        for (Eigen::Index r = 0; r < g.cols(); ++r)
          if (!(g(k, r) <= worst[k])) worst[k] = g(k, r);  // NaN counts as a miss
      return worst;
    };
  }
  ASSIGN_OR_RETURN(std::optional<Vec> x,
                   point_search(
                       box, [this](const Vec& p) { return violation(p); }, kSamples,
                       small() ? kStarts : 0, seconds, batch, point_rows(model_, kSampleChunk)));
  return x && found(std::move(*x));
}

}  // namespace propdag::internal

// CaseSearch's input splitting: depth first over boxes, each halved along one dimension. Each
// round splits the topmost open boxes, as many as one bound call takes the halves of (one box
// without a BoxBounder), so a batched engine bounds them together.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "propdag/case_search.h"
#include "propdag/clip.h"

namespace propdag::internal {
namespace {

// clip_and_bound: a clipped box is bounded again while at most this share of its volume is left,
// up to kRebounds times in a row.
// lsnc quadrotor2d_state_2 under the VNN-COMP tool's settings: 491,144 bound computations in
// 41.8 s without clipping, 232,020 in 20.1 s clipping alone, 137,502 in 12.8 s with 0.7 and 3,
// 119,834 in 11.2 s with 0.9 and 10 (a second clipping pass over the rows: no fewer).
constexpr double kReboundKept = 0.9;
constexpr int kRebounds = 10;
// choose(): a split is chosen by the volume its clipped halves keep when some candidate's keep
// less than this share of the box (else by the margins of its halves). lsnc
// quadrotor2d_state_2: 119,834 -> 102,020 bound computations; _5: 16,948 -> 9,124; ACAS Xu 4_2
// prop_2 under alpha: 94,883 -> 77,482.
constexpr double kClipChoice = 0.999;

}  // namespace

common::Result<Verdict> CaseSearch::depth_first(Search& search, int64_t slice) {
  const int64_t slice_start = boxes_;
  std::vector<Open>& open = search.open;
  const int64_t cost = 2 * lookahead_cost();
  while (!open.empty()) {
    if (Clock::now() >= next_attack_ && !out_of_time()) {
      ASSIGN_OR_RETURN(bool hit, attack_while_splitting(open.back().box));
      if (hit) return Verdict::kFalsified;
    }
    std::vector<Open> picked;  // this round's boxes: bounded, not proved
    std::vector<Open> again;   // batched bounders: this round's clipped boxes to bound again
    while (!open.empty() &&
           static_cast<int64_t>(picked.size() + again.size()) < splits_per_round()) {
      if (!integer_dims_.empty()) {
        ASSIGN_OR_RETURN(Step step, integer_step(open));
        if (step == Step::kFalsified) return Verdict::kFalsified;
        if (step == Step::kOutOfTime) return Verdict::kOpen;
        if (step == Step::kNext) {
          search.started = true;
          continue;
        }
      }
      if (!open.back().bounds) RETURN_IF_ERROR(bound_top(open));
      Open next = std::move(open.back());
      open.pop_back();
      if (proved(*next.bounds)) continue;
      const int64_t planned =
          cost * static_cast<int64_t>(picked.size()) + static_cast<int64_t>(again.size()) + 1;
      const bool room =
          boxes_ + planned <= split_.max_boxes && boxes_ - slice_start + planned <= slice;
      ASSIGN_OR_RETURN(Clipped clipped, clip_and_bound(next, room));
      if (clipped == Clipped::kProved) continue;
      if (clipped == Clipped::kAgain) {
        again.push_back(std::move(next));
        continue;
      }
      const int64_t next_boxes = static_cast<int64_t>(open.size()) +
                                 cost * static_cast<int64_t>(picked.size() + 1) +
                                 static_cast<int64_t>(again.size());
      // A turn ends where this box would take it past `slice`, but not before its first split:
      // a stack taller than the slice (batched bounders' rounds push many halves) would
      // otherwise end every turn without one, and the search would never move.
      const bool first_of_turn = picked.empty() && boxes_ == slice_start;
      if (boxes_ - slice_start + next_boxes > slice && !first_of_turn) {
        open.push_back(std::move(next));
        if (picked.empty()) {
          for (Open& o : again) open.push_back(std::move(o));
          return Verdict::kRoundOver;
        }
        break;
      }
      if (search.started) {
        ASSIGN_OR_RETURN(bool hit, find_counterexample(next.box, *next.bounds));
        if (hit) return Verdict::kFalsified;
      }
      search.started = true;
      if (boxes_ + next_boxes > split_.max_boxes || out_of_time()) {
        // What is left stays on the stack (left_open() hands it on).
        budget_spent_ = !out_of_time();
        open.push_back(std::move(next));
        for (Open& o : picked) open.push_back(std::move(o));
        for (Open& o : again) open.push_back(std::move(o));
        return Verdict::kOpen;
      }
      picked.push_back(std::move(next));
    }
    if (picked.empty() && again.empty()) continue;
    ASSIGN_OR_RETURN(std::vector<Halves> parts, split_all(picked, search.ratio, again));
    if (parts.size() < picked.size()) {  // a point, as far as doubles go
      for (Open& o : again) open.push_back(std::move(o));
      return Verdict::kOpen;
    }
    // The first box's halves end on top; of each box's, the one closer to a counterexample
    // (smaller margin) first.
    for (size_t i = parts.size(); i-- > 0;) {
      Halves& halves = parts[i];
      if (halves.first.bounds && halves.second.bounds &&
          margin(*halves.first.bounds) > margin(*halves.second.bounds))
        std::swap(halves.first, halves.second);
      open.push_back(std::move(halves.second));
      open.push_back(std::move(halves.first));
    }
    // Bounded again, on top: taken next, in the order they were taken this round.
    for (size_t i = again.size(); i-- > 0;) open.push_back(std::move(again[i]));
  }
  return unprovable_ ? Verdict::kOpen : Verdict::kProved;
}

bool clip_box(Interval& box, const Mat& coef, const Vec& bias, const Vec& rhs) {
  const Eigen::Index n = box.lo.size();
  if (coef.cols() != n || coef.rows() != bias.size()) return true;
  Interval out = box;
  for (Eigen::Index r = 0; r < rhs.size() && r < bias.size(); ++r) {
    const double t = rhs[r] - bias[r];  // a . x <= t
    if (!std::isfinite(t)) continue;
    Vec least(n);  // each term's minimum over the box
    for (Eigen::Index d = 0; d < n; ++d) {
      const double a = coef(r, d);
      least[d] = a == 0 ? 0 : a * (a > 0 ? out.lo[d] : out.hi[d]);
    }
    const double all = least.sum();
    if (!std::isfinite(all)) continue;
    // No x of the box meets the row (by more than the rounding of the sum).
    if (all - t > 1e-12 * (std::abs(t) + least.cwiseAbs().sum())) return false;
    for (Eigen::Index d = 0; d < n; ++d) {
      const double a = coef(r, d);
      if (a == 0) continue;
      const double width = out.hi[d] - out.lo[d];
      // a x_d <= t - (the other terms' minimum), widened against rounding.
      const double end = (t - (all - least[d])) / a, slack = 1e-9 * width;
      if (!std::isfinite(end)) continue;
      if (a > 0 && end + slack < out.hi[d]) out.hi[d] = std::max(out.lo[d], end + slack);
      if (a < 0 && end - slack > out.lo[d]) out.lo[d] = std::min(out.hi[d], end - slack);
    }
  }
  box = std::move(out);
  return true;
}

std::optional<double> CaseSearch::clip(Interval& box, const Bounds& b) const {
  // Integer dimensions are cut at integers, and a point evaluator decides cells: boxes keep
  // their ends there.
  if (!split_.clip_boxes || b.bias.size() == 0 || !integer_dims_.empty() || evaluator_ != nullptr)
    return 1;
  const Vec before = box.hi - box.lo;
  if (!clip_box(box, b.coef, b.bias, rhs_)) return std::nullopt;
  if (b.tuned_bias.size() > 0 && !clip_box(box, b.tuned_coef, b.tuned_bias, rhs_))
    return std::nullopt;
  double kept = 1;
  for (Eigen::Index d = 0; d < before.size(); ++d)
    if (before[d] > 0) kept *= (box.hi[d] - box.lo[d]) / before[d];
  return kept;
}

common::Result<CaseSearch::Clipped> CaseSearch::clip_and_bound(Open& o, bool room) {
  std::optional<double> kept = clip(o.box, *o.bounds);
  if (!kept) {
    proved_by_bounds_ = true;
    return Clipped::kProved;
  }
  if (bounder_ != nullptr) {
    // A batched bounder's call costs about as much for one box as for many: the round's
    // clipped boxes are bounded again together.
    const bool again = *kept <= kReboundKept && o.rebounds < kRebounds && room && !out_of_time();
    return again ? Clipped::kAgain : Clipped::kOpen;
  }
  for (int i = 0; *kept <= kReboundKept && i < kRebounds && !out_of_time(); ++i) {
    ASSIGN_OR_RETURN(Bounds b, bound(o.box, &*o.bounds));
    o.bounds = std::move(b);
    if (proved(*o.bounds)) return Clipped::kProved;
    kept = clip(o.box, *o.bounds);
    if (!kept) {
      proved_by_bounds_ = true;
      return Clipped::kProved;
    }
  }
  return Clipped::kOpen;
}

int64_t CaseSearch::splits_per_round() const {
  const int64_t halves = small() ? 2 * lookahead_dims_ : 2;
  return std::max<int64_t>(1, per_call() / std::max<int64_t>(1, halves));
}

common::Status CaseSearch::bound_top(std::vector<Open>& open) {
  std::vector<Open*> todo;
  // With integer dimensions, only boxes within one cell of each: the others are split at an
  // integer unbounded (integer_step).
  for (size_t i = open.size(); i-- > 0 && static_cast<int64_t>(todo.size()) < per_call();)
    if (!open[i].bounds && (integer_dims_.empty() || !integer_cut(open[i].box)))
      todo.push_back(&open[i]);
  std::vector<Interval> boxes;
  boxes.reserve(todo.size());
  for (const Open* o : todo) boxes.push_back(o->box);
  ASSIGN_OR_RETURN(std::vector<Bounds> b,
                   bound_all(boxes, std::vector<const Bounds*>(boxes.size(), nullptr)));
  for (size_t i = 0; i < todo.size(); ++i) todo[i]->bounds = std::move(b[i]);
  return {};
}

common::Result<std::vector<CaseSearch::Halves>> CaseSearch::split_all(
    const std::vector<Open>& boxes, double ratio, std::vector<Open>& again) {
  // Every box's candidate dimensions; their halves are bounded in one bound_all call (larger
  // inputs' only when they carry node bounds, which the box's narrow now).
  const bool bounded = small() || carry_nodes_;
  std::vector<std::vector<Eigen::Index>> dims;
  std::vector<Interval> parts;
  std::vector<const Bounds*> from;
  for (const Open& o : boxes) {
    dims.push_back(candidates(o.box, *o.bounds, ratio));
    if (dims.back().empty()) return std::vector<Halves>();
    for (Eigen::Index d : dims.back()) {
      auto [low, high] = halves(o.box, d);
      parts.push_back(std::move(low));
      parts.push_back(std::move(high));
    }
    from.resize(parts.size(), &*o.bounds);
  }
  const size_t halves_end = parts.size();
  std::vector<Bounds> b;
  if (bounded) {
    for (const Open& o : again) parts.push_back(o.box), from.push_back(&*o.bounds);
    ASSIGN_OR_RETURN(b, bound_all(parts, from));
  } else if (!again.empty()) {
    std::vector<Interval> boxes_again;
    std::vector<const Bounds*> from_again;
    for (const Open& o : again) boxes_again.push_back(o.box), from_again.push_back(&*o.bounds);
    ASSIGN_OR_RETURN(b, bound_all(boxes_again, from_again));
    b.insert(b.begin(), halves_end, Bounds());
  }
  for (size_t k = 0; k < again.size(); ++k) {
    again[k].bounds = std::move(b[halves_end + k]);
    ++again[k].rebounds;
  }
  std::vector<Halves> out;
  size_t first = 0;  // where the current box's halves start in parts
  for (size_t i = 0; i < boxes.size(); ++i) {
    const size_t j = bounded ? choose(boxes[i].box, *boxes[i].bounds, dims[i], b, first) : 0;
    const size_t at = first + 2 * j;
    Halves h{Open{std::move(parts[at]), std::nullopt},
             Open{std::move(parts[at + 1]), std::nullopt}};
    if (bounded) h.first.bounds = std::move(b[at]), h.second.bounds = std::move(b[at + 1]);
    out.push_back(std::move(h));
    first += 2 * dims[i].size();
  }
  return out;
}

std::vector<Eigen::Index> CaseSearch::candidates(const Interval& box, const Bounds& b,
                                                 double ratio) const {
  if (!small()) {
    const Eigen::Index dim = steepest(box, b);
    if (!splittable(box, dim)) return {};
    return {dim};
  }
  const Vec width = box.hi - box.lo;
  Vec relative_width(box.lo.size());
  for (Eigen::Index d = 0; d < box.lo.size(); ++d)
    relative_width[d] = splittable(box, d) ? width[d] / (case_.box.hi[d] - case_.box.lo[d]) : 0;
  const double narrowest = ratio > 0 ? relative_width.maxCoeff() / ratio : 0;
  std::vector<Eigen::Index> dims;
  for (Eigen::Index d = 0; d < box.lo.size(); ++d)
    if (splittable(box, d) && relative_width[d] >= narrowest) dims.push_back(d);
  if (static_cast<Eigen::Index>(dims.size()) <= lookahead_dims_ || b.coef.size() == 0) return dims;
  // The lookahead_dims_ steepest: by |the closest row's coefficient| x width, then by index.
  const Vec slope = b.coef.row(margin_row(b).second).transpose().cwiseAbs();
  std::vector<std::pair<double, Eigen::Index>> ranked;
  ranked.reserve(dims.size());
  for (Eigen::Index d : dims) ranked.emplace_back(-slope[d] * width[d], d);
  std::sort(ranked.begin(), ranked.end());
  dims.clear();
  for (Eigen::Index i = 0; i < lookahead_dims_; ++i) dims.push_back(ranked[i].second);
  std::sort(dims.begin(), dims.end());
  return dims;
}

// Where clipping cuts some candidate's halves (below kClipChoice of the box), the split whose
// clipped halves keep the least volume. Else the one whose worse half has the larger margin,
// unless no split improves on the box's own margin: then the dimension that is widest relative
// to the case's box, so that no dimension is halved forever while another one stays whole.
size_t CaseSearch::choose(const Interval& box, const Bounds& b,
                          const std::vector<Eigen::Index>& dims, const std::vector<Bounds>& parts,
                          size_t first) const {
  if (!small()) return 0;
  // The split whose halves, clipped by their bounds, keep the least of the box's volume.
  double least = kClipChoice;
  std::optional<size_t> pick;
  for (size_t j = 0; j < dims.size(); ++j) {
    auto [lo, hi] = halves(box, dims[j]);
    const double kept = 0.5 * (clip(lo, parts[first + 2 * j]).value_or(0) +
                               clip(hi, parts[first + 2 * j + 1]).value_or(0));
    if (kept < least) least = kept, pick = j;
  }
  if (pick) return *pick;
  const double before = margin(b);
  double best_score = -std::numeric_limits<double>::infinity(), widest = -1;
  std::optional<size_t> best;
  size_t widest_at = 0;
  for (size_t j = 0; j < dims.size(); ++j) {
    const Eigen::Index d = dims[j];
    const double score = std::min(margin(parts[first + 2 * j]), margin(parts[first + 2 * j + 1]));
    const double relative = (box.hi[d] - box.lo[d]) / (case_.box.hi[d] - case_.box.lo[d]);
    if (relative > widest) widest = relative, widest_at = j;
    if (best && !(score > best_score)) continue;
    best_score = score;
    best = j;
  }
  if (best && !(best_score > before)) return widest_at;
  return *best;
}

// Against always the widest dimension: benchmarks/RESULTS.md, stop 22.
Eigen::Index CaseSearch::steepest(const Interval& box, const Bounds& b) const {
  Vec width = box.hi - box.lo;
  for (Eigen::Index d = 0; d < width.size(); ++d)
    if (!splittable(box, d)) width[d] = 0;  // as narrow as doubles allow
  Eigen::Index dim = 0;
  width.maxCoeff(&dim);
  if (b.coef.size() == 0) return dim;
  const Vec slope = b.coef.row(margin_row(b).second).transpose().cwiseAbs();
  Eigen::Index steep = 0;
  if ((slope.array() * width.array()).maxCoeff(&steep) > 0) dim = steep;
  return dim;
}

bool CaseSearch::splittable(const Interval& box, Eigen::Index dim) {
  const double mid = 0.5 * (box.lo[dim] + box.hi[dim]);
  return box.lo[dim] < mid && mid < box.hi[dim];
}

std::pair<Interval, Interval> CaseSearch::halves(const Interval& box, Eigen::Index dim) {
  const double mid = 0.5 * (box.lo[dim] + box.hi[dim]);
  Interval low = box, high = box;
  low.hi[dim] = mid;
  high.lo[dim] = mid;
  return {std::move(low), std::move(high)};
}

}  // namespace propdag::internal

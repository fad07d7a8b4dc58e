// CaseSearch's input splitting: depth first over boxes, each halved along one dimension.
#include <algorithm>
#include <limits>
#include <utility>

#include "propdag/case_search.h"

namespace propdag::internal {

common::Result<Verdict> CaseSearch::depth_first(Search& search, int64_t slice) {
  const int64_t slice_start = boxes_;
  std::vector<Open>& open = search.open;
  while (!open.empty()) {
    Open next = std::move(open.back());
    open.pop_back();
    if (!next.bounds) {
      ASSIGN_OR_RETURN(next.bounds, bound(next.box));
    }
    if (margin(*next.bounds) > 0) continue;
    const int64_t next_boxes = static_cast<int64_t>(open.size()) + 2 * lookahead_cost();
    if (boxes_ - slice_start + next_boxes > slice) {
      open.push_back(std::move(next));
      return Verdict::kRoundOver;
    }
    if (search.started) {
      ASSIGN_OR_RETURN(bool hit, find_counterexample(next.box, *next.bounds));
      if (hit) return Verdict::kFalsified;
    }
    search.started = true;
    if (boxes_ + next_boxes > split_.max_boxes || out_of_time()) return Verdict::kOpen;
    ASSIGN_OR_RETURN(auto parts, split(next.box, *next.bounds, search.ratio));
    if (!parts) return Verdict::kOpen;  // a point, as far as doubles go
    auto& halves = *parts;
    // Depth first, into the half closer to a counterexample (smaller margin) first.
    if (halves.first.bounds && halves.second.bounds &&
        margin(*halves.first.bounds) > margin(*halves.second.bounds))
      std::swap(halves.first, halves.second);
    open.push_back(std::move(halves.second));
    open.push_back(std::move(halves.first));
  }
  return Verdict::kProved;
}

common::Result<std::optional<CaseSearch::Halves>> CaseSearch::split(const Interval& box,
                                                                    const Bounds& b, double ratio) {
  const Vec width = box.hi - box.lo;
  if (!small()) {
    const Eigen::Index dim = steepest(box, b);
    if (!splittable(box, dim)) return std::optional<Halves>();
    if (carry_nodes_) {  // bounded now, while this box's bounds are at hand to narrow theirs
      ASSIGN_OR_RETURN(Halves h, bounded_halves(box, dim, b));
      return std::optional<Halves>(std::move(h));
    }
    auto [low, high] = halves(box, dim);
    return std::optional<Halves>(
        Halves{Open{std::move(low), std::nullopt}, Open{std::move(high), std::nullopt}});
  }
  std::optional<Halves> best;
  double best_score = -std::numeric_limits<double>::infinity();
  // Every candidate's halves; the split kept is the one whose worse half has the larger margin,
  // unless no split improves on the box's own margin: then the dimension that is widest relative
  // to the case's box, so that no dimension is halved forever while another one stays whole.
  const double before = margin(b);
  double widest = -1;
  std::optional<Halves> widest_halves;
  Vec relative_width(box.lo.size());
  for (Eigen::Index d = 0; d < box.lo.size(); ++d)
    relative_width[d] = splittable(box, d) ? width[d] / (case_.box.hi[d] - case_.box.lo[d]) : 0;
  const double narrowest = ratio > 0 ? relative_width.maxCoeff() / ratio : 0;
  for (Eigen::Index d = 0; d < box.lo.size(); ++d) {
    if (!splittable(box, d) || relative_width[d] < narrowest) continue;
    ASSIGN_OR_RETURN(Halves h, bounded_halves(box, d, b));
    const double score = std::min(margin(*h.first.bounds), margin(*h.second.bounds));
    const double relative = relative_width[d];
    if (relative > widest) {
      widest = relative;
      widest_halves = h;  // a copy: `best` may take h too
    }
    if (best && !(score > best_score)) continue;
    best_score = score;
    best = std::move(h);
  }
  if (best && !(best_score > before)) return widest_halves;
  return best;
}

common::Result<CaseSearch::Halves> CaseSearch::bounded_halves(const Interval& box, Eigen::Index dim,
                                                              const Bounds& b) {
  auto [low, high] = halves(box, dim);
  ASSIGN_OR_RETURN(Bounds bl, bound(low, &b));
  ASSIGN_OR_RETURN(Bounds bh, bound(high, &b));
  return Halves{Open{std::move(low), std::move(bl)}, Open{std::move(high), std::move(bh)}};
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

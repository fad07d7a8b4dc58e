// Options::alpha_intermediate: an intermediate node's refined bounds tuned as alpha-CROWN tunes
// an objective. Each refined row r of the node gives two objective rows, e_r and -e_r, whose
// tuned lower bounds are a lower bound of the row and minus an upper bound of it; each is the
// best bound seen over the steps, each step's bound valid for every tuned slope in its range, so
// the narrowed bounds hold wherever CROWN's do and are never wider.
#include <algorithm>
#include <vector>

#include "propdag/crown.h"

namespace propdag::internal {

void Crown::tune_rows(int node, const std::vector<Eigen::Index>& rows, Interval& refined) {
  const auto count = static_cast<Eigen::Index>(rows.size());
  if (count == 0 || options_.past_deadline()) return;
  const double pass = row_cost(node) * static_cast<double>(count);
  if (pass * std::max(options_.alpha_steps, 1) > options_.refine_budget) return;
  const Dag& dag = model_.dag();
  std::vector<int> scratch;
  double widest = 1;
  for (int n : dag.backward_schedule(node, scratch))
    widest = std::max<double>(widest, static_cast<double>(model_.numel(n)));
  // Rows per call such that one coefficient matrix of the pass (2 x rows x widest) stays within
  // Options::chunk_entries.
  const auto chunk =
      std::max<Eigen::Index>(1, static_cast<Eigen::Index>(options_.chunk_entries / (2 * widest)));
  const Eigen::Index n = model_.numel(node);
  for (Eigen::Index first = 0; first < count && !options_.past_deadline(); first += chunk) {
    const Eigen::Index k = std::min(chunk, count - first);
    Mat c = Mat::Zero(2 * k, n);
    for (Eigen::Index i = 0; i < k; ++i) {
      c(i, rows[first + i]) = 1;
      c(k + i, rows[first + i]) = -1;
    }
    const Vec lo = optimized_lower(node, c);
    for (Eigen::Index i = 0; i < k; ++i) {
      const Eigen::Index r = rows[first + i];
      // A NaN bound says nothing: std::max / std::min then keep CROWN's. Bounds that rounding
      // makes cross (a row exact up to rounding) are swapped, as intersect() does.
      const double l = std::max(refined.lo[r], lo[i]), h = std::min(refined.hi[r], -lo[k + i]);
      refined.lo[r] = std::min(l, h);
      refined.hi[r] = std::max(l, h);
    }
  }
}

}  // namespace propdag::internal

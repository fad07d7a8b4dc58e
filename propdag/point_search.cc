#include "propdag/point_search.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <utility>
#include <vector>

namespace propdag::internal {

common::Result<std::optional<Vec>> point_search(const Interval& box, const Violation& violation,
                                                int samples, size_t starts, double seconds) {
  using Clock = std::chrono::steady_clock;
  const Eigen::Index n = box.lo.size();
  const auto stop = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(seconds));
  int64_t evaluations = 0;
  auto late = [&] { return ++evaluations % 64 == 0 && Clock::now() >= stop; };
  std::mt19937_64 rng(20241124);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::pair<double, Vec>> points;
  for (int k = 0; k < samples; ++k) {
    Vec x(n);
    for (Eigen::Index d = 0; d < n; ++d) {
      const double u = unit(rng);
      const double r = k % 2 == 1 ? unit(rng) : 0.5;
      x[d] = r < 0.25 ? box.lo[d] : r >= 0.75 ? box.hi[d] : box.lo[d] + u * (box.hi[d] - box.lo[d]);
    }
    ASSIGN_OR_RETURN(double v, violation(x));
    if (v <= 0) return std::optional<Vec>(std::move(x));
    points.emplace_back(v, std::move(x));
    if (late()) break;
  }
  starts = std::min(starts, points.size());
  std::partial_sort(points.begin(), points.begin() + static_cast<std::ptrdiff_t>(starts),
                    points.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const Vec width = box.hi - box.lo;
  for (size_t s = 0; s < starts; ++s) {
    auto [v, x] = points[s];
    for (double step = 0.25; step > 1e-6;) {
      bool moved = false;
      for (Eigen::Index d = 0; d < n; ++d) {
        for (double sign : {1.0, -1.0}) {
          Vec y = x;
          y[d] = std::clamp(x[d] + sign * step * width[d], box.lo[d], box.hi[d]);
          if (y[d] == x[d]) continue;
          ASSIGN_OR_RETURN(double vy, violation(y));
          if (vy <= 0) return std::optional<Vec>(std::move(y));
          if (late()) return std::optional<Vec>();
          if (vy < v) v = vy, x = std::move(y), moved = true;
        }
      }
      if (!moved) step *= 0.5;
    }
  }
  return std::optional<Vec>();
}

}  // namespace propdag::internal

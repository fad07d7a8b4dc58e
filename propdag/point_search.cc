#include "propdag/point_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

namespace propdag::internal {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

Vec sample(const Interval& box, int k, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Vec x(box.lo.size());
  for (Eigen::Index d = 0; d < x.size(); ++d) {
    const double u = unit(rng);
    const double r = k % 2 == 1 ? unit(rng) : 0.5;
    x[d] = r < 0.25 ? box.lo[d] : r >= 0.75 ? box.hi[d] : box.lo[d] + u * (box.hi[d] - box.lo[d]);
  }
  return x;
}

common::Result<std::optional<Vec>> point_search(const Interval& box, const Violation& violation,
                                                int samples, size_t starts, double seconds,
                                                const Violations& batch, Eigen::Index chunk) {
  const Eigen::Index n = box.lo.size();
  const auto stop = after(seconds);
  int64_t evaluations = 0;
  auto late = [&] { return ++evaluations % 64 == 0 && Clock::now() >= stop; };
  std::mt19937_64 rng(20241124);
  std::vector<std::pair<double, Vec>> points;
  if (!batch) chunk = 1;
  chunk = std::max<Eigen::Index>(chunk, 1);
  for (int k = 0; k < samples;) {
    const Eigen::Index m = std::min<Eigen::Index>(chunk, samples - k);
    Mat x(m, n);
    for (Eigen::Index i = 0; i < m; ++i) x.row(i) = sample(box, k++, rng).transpose();
    Vec v(m);
    if (batch) {
      ASSIGN_OR_RETURN(v, batch(x));
    } else {
      ASSIGN_OR_RETURN(v[0], violation(x.row(0).transpose()));
    }
    bool over = false;
    for (Eigen::Index i = 0; i < m; ++i) {
      Vec p = x.row(i).transpose();
      if (v[i] <= 0 && batch) {
        ASSIGN_OR_RETURN(v[i], violation(p));  // confirmed one point at a time
      }
      if (v[i] <= 0) return std::optional<Vec>(std::move(p));
      points.emplace_back(v[i], std::move(p));
      over = late() || over;
    }
    if (over) break;
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

common::Result<std::optional<Vec>> gradient_search(const Interval& box, const Rows& rows,
                                                   const Violation& violation, int starts,
                                                   int steps, double rate, double seconds) {
  constexpr double kBeta1 = 0.9, kBeta2 = 0.999;
  const auto stop = after(seconds);
  const Eigen::Index n = box.lo.size();
  const Vec width = box.hi - box.lo;
  std::mt19937_64 rng(20251125);
  for (int s = 0; s < starts; ++s) {
    Vec x = sample(box, s, rng);
    Vec m = Vec::Zero(n), v = Vec::Zero(n);
    double beta1_t = 1, beta2_t = 1;
    for (int t = 0; t < steps; ++t) {
      if (Clock::now() >= stop) return std::optional<Vec>();
      ASSIGN_OR_RETURN(RowsAt at, rows(x));
      if (at.g.size() > 0 && at.g.maxCoeff() <= 0) {
        ASSIGN_OR_RETURN(double miss, violation(x));
        if (miss <= 0) return std::optional<Vec>(std::move(x));
      }
      Vec grad = Vec::Zero(n);  // of sum_r max(0, g_r), in box-scaled coordinates
      for (Eigen::Index r = 0; r < at.g.size(); ++r)
        if (at.g[r] > 0) grad += at.grad.row(r).transpose();
      grad = grad.cwiseProduct(width);
      if (!grad.allFinite() || grad.isZero()) break;  // nothing to follow from here
      m = kBeta1 * m + (1 - kBeta1) * grad;
      v = kBeta2 * v + (1 - kBeta2) * grad.cwiseAbs2();
      beta1_t *= kBeta1, beta2_t *= kBeta2;
      const Vec move = (m / (1 - beta1_t)).cwiseQuotient((v / (1 - beta2_t)).cwiseSqrt());
      for (Eigen::Index d = 0; d < n; ++d) {
        if (width[d] > 0 && std::isfinite(move[d]))
          x[d] = std::clamp(x[d] - rate * move[d] * width[d], box.lo[d], box.hi[d]);
      }
    }
  }
  return std::optional<Vec>();
}

common::Result<std::optional<Vec>> batched_gradient_search(const Interval& box,
                                                           const BatchRows& rows,
                                                           const Violation& violation, int starts,
                                                           int steps, double rate, double seconds,
                                                           Eigen::Index chunk) {
  constexpr double kBeta1 = 0.9, kBeta2 = 0.999;
  const auto stop = after(seconds);
  const Eigen::Index n = box.lo.size();
  const Vec width = box.hi - box.lo;
  std::mt19937_64 rng(20251125);  // gradient_search's starting points, in its order
  chunk = std::max<Eigen::Index>(chunk, 1);
  for (int first = 0; first < starts;) {
    const Eigen::Index m = std::min<Eigen::Index>(chunk, starts - first);
    Mat x(m, n);
    for (Eigen::Index i = 0; i < m; ++i) x.row(i) = sample(box, first++, rng).transpose();
    Mat mean = Mat::Zero(m, n), square = Mat::Zero(m, n);
    std::vector<bool> moving(static_cast<size_t>(m), true);
    double beta1_t = 1, beta2_t = 1;
    for (int t = 0; t < steps; ++t) {
      if (Clock::now() >= stop) return std::optional<Vec>();
      ASSIGN_OR_RETURN(BatchRowsAt at, rows(x));
      for (Eigen::Index i = 0; i < m; ++i) {
        if (!moving[static_cast<size_t>(i)] || at.g.cols() == 0 || at.g.row(i).maxCoeff() > 0)
          continue;
        Vec p = x.row(i).transpose();
        ASSIGN_OR_RETURN(double miss, violation(p));
        if (miss <= 0) return std::optional<Vec>(std::move(p));
      }
      beta1_t *= kBeta1, beta2_t *= kBeta2;
      bool any = false;
      for (Eigen::Index i = 0; i < m; ++i) {
        if (!moving[static_cast<size_t>(i)]) continue;
        const Vec grad = at.grad.row(i).transpose().cwiseProduct(width);
        if (!grad.allFinite() || grad.isZero()) {  // nothing to follow from here
          moving[static_cast<size_t>(i)] = false;
          continue;
        }
        any = true;
        mean.row(i) = kBeta1 * mean.row(i) + (1 - kBeta1) * grad.transpose();
        square.row(i) = kBeta2 * square.row(i) + (1 - kBeta2) * grad.cwiseAbs2().transpose();
        const Vec move =
            (mean.row(i).transpose() / (1 - beta1_t))
                .cwiseQuotient((square.row(i).transpose() / (1 - beta2_t)).cwiseSqrt());
        for (Eigen::Index d = 0; d < n; ++d) {
          if (width[d] > 0 && std::isfinite(move[d]))
            x(i, d) = std::clamp(x(i, d) - rate * move[d] * width[d], box.lo[d], box.hi[d]);
        }
      }
      if (!any) break;
    }
  }
  return std::optional<Vec>();
}

}  // namespace propdag::internal

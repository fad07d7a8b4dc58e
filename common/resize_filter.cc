#include "common/resize_filter.h"

#include <algorithm>
#include <cmath>

namespace common {

namespace {

double cubic_weight(double t, double a) {
  t = std::fabs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

void normalize(std::vector<ResizeTap>& taps) {
  double total = 0;
  for (const ResizeTap& t : taps) total += t.weight;
  if (total == 0) return;
  for (ResizeTap& t : taps) t.weight /= total;
}

}  // namespace

std::vector<ResizeTap> antialias_taps(bool cubic, double x, int64_t in, double scale,
                                      double cubic_a, bool exclude_outside) {
  const double s = std::min(scale, 1.0);
  // The filter covers offsets start .. 1 - start from the position below x (ratio in (0, 1]).
  const auto start = static_cast<int64_t>(std::floor((cubic ? -2.0 : -1.0) / s)) + 1;
  const int64_t n = 2 - 2 * start;
  const double below = std::floor(x);
  const bool whole = x == below;
  const double ratio = whole ? 1.0 : x - below;
  const int64_t base = static_cast<int64_t>(below) - (whole ? 1 : 0);
  // The n nearest positions of the input padded by ceil(n / 2) edge copies on each side.
  const int64_t pad = (n + 1) / 2;
  const int64_t first = std::clamp(base + start, -pad, in + pad - n);
  std::vector<ResizeTap> taps;
  for (int64_t k = 0; k < n; ++k) {
    const double t = s * (static_cast<double>(start + k) - ratio);
    taps.push_back({first + k, cubic ? cubic_weight(t, cubic_a) : std::max(0.0, 1 - std::fabs(t))});
  }
  normalize(taps);
  if (exclude_outside) {
    for (ResizeTap& t : taps) {
      if (t.index < 0 || t.index >= in) t.weight = 0;
    }
    normalize(taps);
  }
  for (ResizeTap& t : taps) t.index = std::clamp<int64_t>(t.index, 0, in - 1);
  return taps;
}

}  // namespace common

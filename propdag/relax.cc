#include "propdag/relax.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace propdag {
namespace {

// Margin added to shifted lines so that rounding in f never makes them cross the curve.
constexpr double kSlack = 1e-12;

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Lines of slope k bracketing f on [l, u]; `crit` lists the points where f'(x) = k.
template <class F>
Lines parallel_lines(F f, double l, double u, double k, std::initializer_list<double> crit) {
  double lo = std::min(f(l) - k * l, f(u) - k * u), hi = std::max(f(l) - k * l, f(u) - k * u);
  for (double x : crit) {
    if (!(x > l && x < u)) continue;
    lo = std::min(lo, f(x) - k * x);
    hi = std::max(hi, f(x) - k * x);
  }
  double slack =
      kSlack * (1.0 + std::abs(lo) + std::abs(hi) + std::abs(k) * (std::abs(l) + std::abs(u)));
  return {k, lo - slack, k, hi + slack, k, k};
}

}  // namespace

Lines constant_lines(double lo, double hi) { return {0, lo, 0, hi, 0, 0}; }

Lines leaky_relu_lines(double l, double u, double alpha) {
  if (l >= 0) return {1, 0, 1, 0, 1, 1};
  if (u <= 0) return {alpha, 0, alpha, 0, alpha, alpha};
  double k = (u - alpha * l) / (u - l);
  double lower = u > -l ? 1.0 : alpha;
  return {lower, 0, k, u - k * u, alpha, 1};
}

Lines sigmoid_lines(double l, double u) {
  if (!(u - l > 1e-9)) return constant_lines(sigmoid(l), sigmoid(u));
  double k = (sigmoid(u) - sigmoid(l)) / (u - l);
  // sigmoid'(x) = s (1 - s) = k  <=>  s = (1 +- sqrt(1 - 4k)) / 2.
  double d = std::sqrt(std::max(0.0, 1.0 - 4.0 * k));
  double s1 = (1.0 + d) / 2.0, s2 = (1.0 - d) / 2.0;
  auto logit = [](double s) { return std::log(s / (1.0 - s)); };
  return parallel_lines(sigmoid, l, u, k, {logit(s1), logit(s2)});
}

Lines tanh_lines(double l, double u) {
  auto f = [](double x) { return std::tanh(x); };
  if (!(u - l > 1e-9)) return constant_lines(f(l), f(u));
  double k = (f(u) - f(l)) / (u - l);
  // tanh'(x) = 1 - t^2 = k  <=>  t = +-sqrt(1 - k).
  double t = std::sqrt(std::max(0.0, 1.0 - k));
  return parallel_lines(f, l, u, k, {std::atanh(t), -std::atanh(t)});
}

}  // namespace propdag

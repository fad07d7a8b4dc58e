// Falsification attempts used by `propdag verify` before it splits: sampling and pattern search
// over a small input box, and gradient descent over any box. Not installed.
#pragma once

#include <functional>
#include <optional>
#include <random>

#include "common/error.h"
#include "propdag/op.h"

namespace propdag::internal {

/// Sample k of `box`: uniform for even k; for odd k each coordinate is at its lower bound or its
/// upper bound a quarter of the time each, and uniform otherwise.
Vec sample(const Interval& box, int k, std::mt19937_64& rng);

/// By how much a point misses being a counterexample: <= 0 for one.
using Violation = std::function<common::Result<double>(const Vec&)>;
/// Violation at each row of x (points x inputs) in one evaluation, which may round otherwise.
using Violations = std::function<common::Result<Vec>(const Mat&)>;

/// Samples `samples` points of `box` (fixed seed): every other one uniform, the rest with each
/// coordinate at its lower bound, at its upper bound (a quarter of the time each) or uniform in
/// between. Counterexamples often lie along a face of the box (ACAS Xu 1_9 prop_7's: mostly with
/// X_0 within 0.4% of its width of its least value), where uniform points all but miss them. Then
/// runs a pattern search from the best `starts` points: each dimension is stepped by +-step (a
/// quarter of its width at first), any move that lowers the violation is kept, and the step halves
/// when none does. Returns the first point whose violation is <= 0, or nothing once the searches
/// end or `seconds` have passed. With `batch`, the samples are evaluated `chunk` at a time by it,
/// and a point it finds is returned once `violation` confirms it.
common::Result<std::optional<Vec>> point_search(const Interval& box, const Violation& violation,
                                                int samples, size_t starts, double seconds,
                                                const Violations& batch = nullptr,
                                                Eigen::Index chunk = 1);

/// A case's constraint values at x, g_r(x) = c_r . y(x) - rhs_r (x is a counterexample when every
/// one is <= 0), and their gradients (one row per constraint; zero where unknown).
struct RowsAt {
  Vec g;
  Mat grad;
};
using Rows = std::function<common::Result<RowsAt>(const Vec&)>;

/// Gradient descent on sum_r max(0, g_r(x)) from `starts` points of `box` (fixed seed; uniform
/// and face samples in turn, as in point_search): `steps` projected Adam steps each, in
/// coordinates scaled to the box (a step moves each coordinate by at most about `rate` of its
/// width). Minimizing the sum of the violated constraints moves all of them at once, where the
/// pattern search's single-coordinate moves stall at the ridges where two constraints are equal.
/// A point whose values are all <= 0 is confirmed by `violation` before it is returned. Nothing
/// once the starts end or `seconds` have passed.
common::Result<std::optional<Vec>> gradient_search(const Interval& box, const Rows& rows,
                                                   const Violation& violation, int starts,
                                                   int steps, double rate, double seconds);

/// Constraint values at each point (points x constraints) and, per point, the gradient of the
/// sum of its positive ones (points x inputs).
struct BatchRowsAt {
  Mat g;
  Mat grad;
};
using BatchRows = std::function<common::Result<BatchRowsAt>(const Mat&)>;

/// gradient_search with its starts stepped side by side, `chunk` at a time (the same starting
/// points and steps, each with its own Adam state): of a step, the first point in start order
/// whose values are all <= 0 and that `violation` confirms is returned.
common::Result<std::optional<Vec>> batched_gradient_search(const Interval& box,
                                                           const BatchRows& rows,
                                                           const Violation& violation, int starts,
                                                           int steps, double rate, double seconds,
                                                           Eigen::Index chunk);

}  // namespace propdag::internal

// A falsification attempt by sampling and pattern search over a small input box, used by
// `propdag verify` before it splits. Not installed.
#pragma once

#include <functional>
#include <optional>

#include "common/error.h"
#include "propdag/op.h"

namespace propdag::internal {

/// By how much a point misses being a counterexample: <= 0 for one.
using Violation = std::function<common::Result<double>(const Vec&)>;

/// Samples `samples` points of `box` (fixed seed): every other one uniform, the rest with each
/// coordinate at its lower bound, at its upper bound (a quarter of the time each) or uniform in
/// between. Counterexamples often lie along a face of the box (ACAS Xu 1_9 prop_7's: mostly with
/// X_0 within 0.4% of its width of its least value), where uniform points all but miss them. Then
/// runs a pattern search from the best `starts` points: each dimension is stepped by +-step (a
/// quarter of its width at first), any move that lowers the violation is kept, and the step halves
/// when none does. Returns the first point whose violation is <= 0, or nothing once the searches
/// end or `seconds` have passed.
common::Result<std::optional<Vec>> point_search(const Interval& box, const Violation& violation,
                                                int samples, size_t starts, double seconds);

}  // namespace propdag::internal

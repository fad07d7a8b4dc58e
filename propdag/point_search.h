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

/// Samples `samples` uniform points of `box` (fixed seed), then runs a pattern search from the
/// best `starts` of them: each dimension is stepped by +-step (a quarter of its width at first),
/// any move that lowers the violation is kept, and the step halves when none does. Returns the
/// first point whose violation is <= 0, or nothing once the searches end or `seconds` have
/// passed.
common::Result<std::optional<Vec>> point_search(const Interval& box, const Violation& violation,
                                                int samples, size_t starts, double seconds);

}  // namespace propdag::internal

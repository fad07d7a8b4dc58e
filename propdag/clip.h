// Cutting a box down by linear lower bounds (the search's clipping: case_search.h). Not installed.
#pragma once

#include "propdag/engine.h"

namespace propdag::internal {

// The smallest box within `box` that holds every x of it with coef.row(r) . x + bias[r] <= rhs[r]
// for each row r < rhs.size() whose bias is finite, one row at a time (each row's other terms at
// their minimum over the box), each cut widened outward by a relative 1e-9 of the dimension's
// width against rounding. False, with `box` unchanged, when some row excludes every x of it (its
// least value over the box above rhs by more than 1e-12 of the terms' magnitude).
bool clip_box(Interval& box, const Mat& coef, const Vec& bias, const Vec& rhs);

}  // namespace propdag::internal

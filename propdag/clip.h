// What linear lower bounds of a case's constraints say about a box (the search's clipping and
// joint margins: case_search.h). Not installed.
#pragma once

#include "propdag/engine.h"

namespace propdag::internal {

// The smallest box within `box` that holds every x of it with coef.row(r) . x + bias[r] <= rhs[r]
// for each row r < rhs.size() whose bias is finite, one row at a time (each row's other terms at
// their minimum over the box), each cut widened outward by a relative 1e-9 of the dimension's
// width against rounding. False, with `box` unchanged, when some row excludes every x of it (its
// least value over the box above rhs by more than 1e-12 of the terms' magnitude).
bool clip_box(Interval& box, const Mat& coef, const Vec& bias, const Vec& rhs);

// max over t in [0, 1] of the minimum over `box` of t (a.row(0) . x + slack[0]) + (1 - t)
// (a.row(1) . x + slack[1]), exactly (a has two rows): positive when no x of the box has both
// rows' functions <= 0 (CaseSearch::joint_margin for two constraints).
double two_row_margin(const Mat& a, const Vec& slack, const Interval& box);

}  // namespace propdag::internal

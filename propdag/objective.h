// The objective rows `propdag verify` bounds for one case of a property. Not installed.
#pragma once

#include <vector>

#include "propdag/model.h"
#include "propdag/vnnlib.h"

namespace propdag::internal {

/// Weights of the objective rows over a case's k constraints: each constraint alone, then (for
/// 3 <= k <= 5) the average of each pair, and (k >= 3) the average of all (two constraints are
/// combined per box by CaseSearch::joint_margin instead). A point of the unsafe
/// set meets every constraint c_r . y <= rhs_r, so it meets every such average too: a box is safe
/// once one row's lower bound exceeds its right-hand side. An average can prove that when no
/// single constraint can, because its own relaxation is bounded at one point of the box.
Mat row_weights(Eigen::Index k);

/// The objective rows of one case (row_weights times its constraints; the first k rows are the
/// constraints themselves), one matrix per graph output.
std::vector<Mat> objective_of(const Model& model, const SpecCase& c);

/// Their right-hand sides.
Vec rhs_of(const SpecCase& c);

}  // namespace propdag::internal

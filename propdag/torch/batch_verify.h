// `propdag verify --engine torch`: input-splitting branch and bound that hands the engine up to
// K open boxes per call. Not installed.
#pragma once

#include "common/error.h"
#include "propdag/torch/torch_engine.h"
#include "propdag/verify.h"

namespace propdag::torch_engine {

/// For each case: the objective rows of objective.h bounded over the case's box; a box is proved
/// when some row's lower bound exceeds its right-hand side. Open boxes are kept on a stack; each
/// call bounds up to `batch` of them at once, checks the centre of each box left open for a
/// counterexample (the network evaluated at that point in float64 by the Eigen engine: every
/// constraint's upper value must meet it) and halves it along the dimension where the best row's
/// lower bound changes most (|coefficient| x width; else the widest relative to the case's box).
/// split.max_boxes bounds per case (1: the whole box only), split.seconds for the whole property.
common::Result<VerifyResult> verify_batched(Engine& engine, const Model& model, const Spec& spec,
                                            const Options& options, const SplitOptions& split,
                                            int batch);

}  // namespace propdag::torch_engine

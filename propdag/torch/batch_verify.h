// `propdag verify --engine torch`: verify()'s search with its bounds computed by the torch
// engine, up to K boxes per call. Not installed.
#pragma once

#include <memory>

#include "common/error.h"
#include "propdag/torch/torch_engine.h"
#include "propdag/verify.h"

namespace propdag::torch_engine {

/// A BoxBounder on `engine`, up to `batch` boxes per call (the model outlives it).
std::unique_ptr<BoxBounder> box_bounder(Engine& engine, const Model& model, int batch);

/// propdag::verify (the same search: bounds, point searches, input splitting) with every bound
/// computation on `engine`, up to `batch` boxes per call (verify.h: BoxBounder). Counterexamples
/// are checked in float64 on the Eigen engine, as without it. SplitOptions::full_crown, when not
/// set, uses the same engine.
common::Result<VerifyResult> verify_batched(Engine& engine, const Model& model, const Spec& spec,
                                            const Options& options, const SplitOptions& split,
                                            int batch);

}  // namespace propdag::torch_engine

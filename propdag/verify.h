// Sound, incomplete verification of a VNN-LIB property from bounds.
#pragma once

#include "common/error.h"
#include "propdag/engine.h"
#include "propdag/model.h"
#include "propdag/vnnlib.h"

namespace propdag {

struct VerifyResult {
  bool verified = false;  ///< every case was shown to contain no counterexample
  int cases = 0;
  int cases_proved = 0;
};

/// For each case of the spec, bounds every unsafe constraint c.y <= rhs over the case's box; the
/// case is safe when some constraint's lower bound exceeds rhs. `verified` only when all are.
common::Result<VerifyResult> verify(const Model& model, const Spec& spec, const Options& options);

}  // namespace propdag

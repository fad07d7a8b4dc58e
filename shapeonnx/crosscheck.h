// Comparison of shapeonnx's shapes with ONNX's own C++ shape inference (used by tests and tools).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/graph.h"

namespace shapeonnx {

struct CrossCheck {
  int64_t compared = 0;    ///< values ONNX resolved to a fully static shape
  int64_t mismatches = 0;  ///< of those, how many differ from ours
  std::string first_mismatch;
  std::vector<std::string> mismatched;  ///< names of the values that differ, in ONNX's order
};

/// Runs ONNX shape inference (with data propagation) on `graph` as a model whose graph inputs have
/// the shapes shapeonnx chose and whose value_info is cleared, then compares every value ONNX
/// resolved statically with the shape in `graph`. ONNX failures count as nothing compared.
CrossCheck cross_check(const common::Graph& graph);

}  // namespace shapeonnx

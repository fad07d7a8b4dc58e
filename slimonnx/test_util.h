// Helpers for slimonnx's tests: slimming text models and comparing models under onnxruntime.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/graph.h"
#include "slimonnx/slim.h"

namespace slimonnx::testing {

/// Parses ONNX text, runs shapeonnx::infer and slimonnx::run; fails the test on error.
common::Graph slim_text(const std::string& text, const Options& options = {},
                        Report* report = nullptr);
/// The graph as ONNX text (graph printer) followed by one line per initializer with its values.
std::string graph_text(const common::Graph& graph);

/// Largest error of the second model against the first under onnxruntime (`python3 -m
/// vnncomp.compare`: the box centre and random points of the VNN-LIB box, else of [-1, 1]);
/// nullopt (with `why`) when the comparison failed.
std::optional<double> ort_max_error(const std::string& a, const std::string& b,
                                    const std::string& vnnlib, std::string* why);
/// One comparison of `ort_max_errors`: model b against reference a on the VNN-LIB box (or "").
struct ComparePair {
  std::string a, b, vnnlib;
};
/// What ort_max_error gives, for many pairs in one Python process (`vnncomp.compare --pairs`):
/// one result per pair, in order; a failed pair is nullopt with its message in `why`.
std::vector<std::optional<double>> ort_max_errors(const std::vector<ComparePair>& pairs,
                                                  std::vector<std::string>* why);
/// True when node and onnxruntime-node are installed.
bool ort_available();

}  // namespace slimonnx::testing

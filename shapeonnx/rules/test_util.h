// Test helpers for the shape rules: models in ONNX text syntax, inferred by shapeonnx and
// cross-checked against ONNX's own C++ shape inference.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/graph.h"

namespace shapeonnx::testing {

/// A model header for the default domain at `opset`, to prepend to a graph in text syntax.
std::string header(int opset);

/// Parses `text` (ONNX text syntax), converts it to the IR and runs shapeonnx::infer.
common::Result<common::Graph> infer_text(std::string_view text);

/// dtype and dims of every value that ONNX's shape inference (data propagation on) resolves to a
/// static shape. Node-level inference errors are ignored (the value is then simply absent).
struct OnnxShape {
  common::DType dtype = common::DType::kUndefined;
  common::Dims dims;
};
std::map<std::string, OnnxShape> onnx_shapes(std::string_view text);

/// How far ONNX's inference is asked to agree.
enum class OnnxCheck {
  kAll,      ///< ONNX must resolve every expected value to the same dtype and shape
  kPartial,  ///< values ONNX 1.12 resolves must agree, but it may leave some unresolved
  kNone,     ///< not checked (opsets ONNX 1.12 does not know, or where it departs from onnxruntime)
};

/// Infers `text` and expects each listed value to have the given dims (from the spec's formula,
/// computed by hand in the test); every value shapeonnx typed must also agree with ONNX's
/// inference wherever ONNX resolves it. Returns the graph for further checks.
common::Graph expect_shapes(std::string_view text,
                            const std::map<std::string, common::Dims>& expected,
                            OnnxCheck cross = OnnxCheck::kAll);

/// Expects inference of `text` to fail with a message that contains `needle`.
void expect_error(std::string_view text, std::string_view needle);

}  // namespace shapeonnx::testing

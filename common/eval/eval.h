// A small CPU evaluator for constant folding and shape-tensor propagation (no LibTorch).
#pragma once

#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/graph.h"
#include "common/tensor.h"

namespace common {

/// True if `evaluate` has a kernel for this op (default ONNX domain).
bool can_evaluate(std::string_view op_type);

/// Computes a node's outputs from constant inputs. `inputs[i]` is null for an omitted optional
/// input. `opset` selects attribute-vs-input forms. Errors name the node (via graph.error).
/// Results follow ONNX semantics (broadcasting, negative axes, clamped Slice bounds, ...), computed
/// in the node's element type (float ops in float, not double, so folding is bit-faithful).
Result<std::vector<Tensor>> evaluate(const Graph& graph, const Node& node,
                                     const std::vector<const Tensor*>& inputs);

/// Numpy-style broadcast of two shapes; nullopt if incompatible.
std::optional<Dims> broadcast_shapes(const Dims& a, const Dims& b);

}  // namespace common

// Static shape inference: every value gets a concrete shape; shape-tensor values are propagated.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/error.h"
#include "common/graph.h"

namespace shapeonnx {

struct Options {
  /// Size given to a symbolic, 0 or -1 leading input dim (the batch).
  int64_t batch_size = 1;
  /// Full shapes for named inputs, overriding what the model declares.
  std::map<std::string, common::Dims> input_shapes;
  /// Contents of graph inputs known in advance (shape parameters fed as inputs, as in the ONNX
  /// backend tests); their shapes come from the tensors.
  std::map<std::string, common::Tensor> input_values;
};

/// Fills dtype, shape and (for small integer tensors and constants) the known value of every
/// value in the graph, node by node in topological order. Fails with the node and op when a rule
/// is missing or the inputs contradict the op.
common::Status infer(common::Graph& graph, const Options& options = {});

/// Number of non-initializer values and how many of them have a static shape.
struct Stats {
  int64_t values = 0;
  int64_t static_values = 0;
};
Stats stats(const common::Graph& graph);

}  // namespace shapeonnx

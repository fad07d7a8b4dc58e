// Static shape inference: every value gets a concrete shape; shape-tensor values are propagated.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/graph.h"
#include "shapeonnx/custom_ops.h"

namespace shapeonnx {

struct Options {
  /// Size given to a symbolic, 0 or -1 leading input dim (the batch).
  int64_t batch_size = 1;
  /// Full shapes for named inputs, overriding what the model declares.
  std::map<std::string, common::Dims> input_shapes;
  /// Contents of graph inputs known in advance (shape parameters fed as inputs, as in the ONNX
  /// backend tests); their shapes come from the tensors.
  std::map<std::string, common::Tensor> input_values;
  /// Resolve sequence and optional graph inputs and outputs into tensors (unpack_ports in
  /// control_flow/control_flow.h). The graph's interface changes, so only a tool that packs them
  /// again (torchonnx's forward takes lists) asks for it; otherwise such ports are an error.
  bool unpack_ports = false;
  /// Length of each sequence input (element shapes: `input_shapes` of the same name, else the
  /// declared element shape).
  std::map<std::string, int64_t> sequence_lengths;
  /// Shapes of each element of a sequence input, one per element; overrides the above.
  std::map<std::string, std::vector<common::Dims>> sequence_inputs;
  /// Optional inputs that hold no value; the others hold a tensor (or a sequence).
  std::set<std::string> absent_inputs;
  /// Ops of other domains the caller computes itself: their outputs get the declared types.
  CustomOps custom_ops;
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

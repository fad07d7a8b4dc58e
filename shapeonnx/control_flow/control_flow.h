// Compile-time expansion of ONNX control flow (If, Loop, Scan) into plain nodes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/graph.h"
#include "shapeonnx/infer.h"

namespace shapeonnx {

/// Two values that must end up with the same static shape: the branches an If with a run-time
/// condition chooses between through Where. Check them after inference.
struct SameShape {
  std::string node;  ///< the If node
  std::string output, then_value, else_value;
};
using SameShapePairs = std::vector<SameShape>;

/// Replaces every If, Loop and Scan of the default domain, nested ones included, by copies of
/// their bodies, so that the graph has static structure:
/// - If with a condition known at compile time becomes the chosen branch; with a run-time
///   condition, both branches and a Where per output (recorded in `same_shape`).
/// - Loop is unrolled; its trip count and every iteration's condition must be known at compile
///   time (from initializers, inputs' static shapes, or values computed from them).
/// - Scan is unrolled over its static sequence length (opset 8 batched form included).
/// Values computed before a control-flow node are inferred with `options` to learn trip counts and
/// sequence lengths. Copies are named `<node>/<tag>/<name>`. Errors name the node and op.
common::Status expand_control_flow(common::Graph& graph, const Options& options,
                                   SameShapePairs* same_shape);

/// Replaces sequence and optional graph inputs (graph.port_types) by the tensors they hold:
/// a sequence input by one input per element (its length and element shapes from `options`), a
/// present optional by its tensor, an absent one (options.absent_inputs) by nothing. The interface
/// in ONNX order is recorded in graph.packed_inputs; expand_control_flow then resolves what reads
/// them and records sequence/optional outputs in graph.packed_outputs.
common::Status unpack_ports(common::Graph& graph, const Options& options);

/// True if the graph has an If, Loop or Scan node.
bool has_control_flow(const common::Graph& graph);

/// The op types the expansion replaces (If, Loop, Scan and the sequence ops), sorted; tools that
/// run it count them as supported.
const std::vector<std::string>& expanded_ops();
/// Whether a node of this domain and op type is replaced by the expansion.
bool is_expanded(std::string_view domain, std::string_view op_type);

/// For the command-line tools: with `unroll`, expands control flow, infers shapes and checks the
/// If pairs; without, fails on the first If/Loop/Scan with a hint to pass --unroll. Sequence and
/// optional graph inputs/outputs are unpacked when options.unpack_ports asks, else an error.
common::Status infer_with_control_flow(common::Graph& graph, const Options& options, bool unroll);

/// Fails, naming the If node's output, when a pair recorded by expand_control_flow has different
/// or non-static shapes after inference.
common::Status check_same_shapes(const common::Graph& graph, const SameShapePairs& same_shape);

}  // namespace shapeonnx

// Internals of the control-flow expansion (control_flow.h): parsed bodies and the per-node
// expander.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/graph.h"
#include "shapeonnx/control_flow.h"

namespace shapeonnx::detail {

constexpr int64_t kMaxIterations = 100000;
constexpr size_t kMaxNodes = 2000000;

// A subgraph attribute, parsed: its nodes (Constants as initializers), formal inputs, outputs.
struct Body {
  std::string attr;
  std::vector<common::Node> nodes;
  std::map<std::string, common::Tensor> initializers;
  std::vector<std::string> inputs, outputs;
};

common::Result<Body> parse_body(const common::Graph& graph, const common::Node& node,
                                const std::string& attr);

// Renames references to enclosing-scope values inside a nested graph (and its own nested graphs).
void rename_refs(onnx::GraphProto& g, const std::map<std::string, std::string>& renames,
                 std::set<std::string> local);

// Sequence values expanded so far: the tensors each one holds, in order.
using Sequences = std::map<std::string, std::vector<std::string>>;

/// The sequence op types (SequenceConstruct, SequenceAt, SplitToSequence, ...).
const std::set<std::string, std::less<>>& sequence_ops();
bool is_sequence_op(const common::Node& node);

// The nodes that replace one If/Loop/Scan. `prefix` is the graph before it, inferred.
common::Status expand_node(common::Graph& graph, const common::Graph& prefix,
                           const common::Node& node, SameShapePairs* same_shape,
                           std::vector<common::Node>* out);

// The nodes that replace one sequence op (SequenceConstruct, SequenceAt, SplitToSequence, ...);
// sequences are lists of tensor values known at compile time, kept in `sequences`.
common::Status expand_sequence_node(common::Graph& graph, const common::Graph& prefix,
                                    const common::Node& node, Sequences* sequences,
                                    std::vector<common::Node>* out);

}  // namespace shapeonnx::detail

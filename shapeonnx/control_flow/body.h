// Internals of the control-flow expansion (control_flow.h): bodies and the per-node expander.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/graph.h"
#include "shapeonnx/control_flow/control_flow.h"

namespace shapeonnx::detail {

constexpr int64_t kMaxIterations = 100000;
constexpr size_t kMaxNodes = 2000000;

// A graph attribute, viewed: its nodes (Constants as initializers), formal inputs, outputs.
struct Body {
  std::string attr;
  std::shared_ptr<const common::Graph> graph;  ///< the attribute's own, shared

  const std::vector<common::Node>& nodes() const { return graph->nodes; }
  const std::map<std::string, common::Tensor>& initializers() const { return graph->initializers; }
  const std::vector<std::string>& inputs() const { return graph->inputs; }
  const std::vector<std::string>& outputs() const { return graph->outputs; }
};

common::Result<Body> parse_body(const common::Graph& graph, const common::Node& node,
                                const std::string& attr);

// Renames references to enclosing-scope values inside a nested graph (and its own nested graphs):
// names not defined in `g` or in `local` (the scopes between) are looked up in `renames`.
void rename_refs(common::Graph& g, const std::map<std::string, std::string>& renames,
                 std::set<std::string> local);

// Sequence and optional values expanded so far.
struct Sequences {
  /// A sequence: the tensors it holds, in order.
  std::map<std::string, std::vector<std::string>> lists;
  /// An optional: the tensor or sequence it holds, if any.
  std::map<std::string, std::optional<std::string>> optionals;

  bool count(const std::string& name) const {
    return lists.count(name) != 0 || optionals.count(name) != 0;
  }
};

/// The sequence and optional op types (SequenceConstruct, SequenceAt, SplitToSequence,
/// SequenceMap, Optional, OptionalGetElement, ...).
const std::set<std::string, std::less<>>& sequence_ops();
bool is_sequence_op(const common::Node& node);

// The nodes that replace one If/Loop/Scan. `prefix` is the graph before it, inferred.
common::Status expand_node(common::Graph& graph, const common::Graph& prefix,
                           const common::Node& node, SameShapePairs* same_shape,
                           std::vector<common::Node>* out);

// The nodes that replace one sequence or optional op (SequenceConstruct, SequenceAt,
// SplitToSequence, Optional, ...), or an Identity or Where (an If's choice) of sequences or
// optionals; sequences are lists of
// tensor values known at compile time and optionals hold a value or not, kept in `sequences`.
common::Status expand_sequence_node(common::Graph& graph, const common::Graph& prefix,
                                    const common::Node& node, Sequences* sequences,
                                    SameShapePairs* same_shape, std::vector<common::Node>* out);

}  // namespace shapeonnx::detail

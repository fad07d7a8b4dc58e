// The one op registry of propdag: ONNX op_type -> rule that builds the BoundOp of each output.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/graph.h"
#include "common/node_view.h"
#include "common/registry.h"
#include "propdag/op.h"

namespace propdag {

/// What a rule sees of one node: per input position, the shape and (when constant) the tensor.
/// Shapes and constants are the model's (folded values included), not the graph's records, so the
/// node is seen through common::NodeView only for its location (`view`, `error`).
struct OpContext {
  const common::Graph& graph;
  const common::Node& node;
  std::vector<std::optional<common::Dims>> shapes;  ///< nullopt for an omitted optional input
  std::vector<const common::Tensor*> constants;     ///< non-null for constant inputs
  int64_t opset = 13;

  bool present(size_t i) const { return i < shapes.size() && shapes[i].has_value(); }
  bool variable(size_t i) const { return present(i) && constants[i] == nullptr; }
  const common::Dims& shape(size_t i) const { return *shapes[i]; }
  common::NodeView view() const { return {graph, node}; }
  common::Error error(std::string message) const { return view().error(std::move(message)); }
};

/// One output of a node: its rule and its static shape.
struct OpOutput {
  std::unique_ptr<BoundOp> op;
  common::Dims shape;
};
using OpOutputs = std::vector<OpOutput>;
using OpRule = common::Result<OpOutputs> (*)(const OpContext&);

using OpRegistry = common::Registry<OpRule>;
/// Every rule, by op type of the default domain.
const OpRegistry& op_rules();
/// The rule for an op type of the default domain, or nullptr.
OpRule find_rule(std::string_view op_type);
/// Every op type with a rule, sorted.
std::vector<std::string> supported_ops();

// Registration, one function per op family file (ops/<family>.cc, ops/<family>_<part>.cc; the
// families of common/ADDING_AN_OP.md): each appends its (op type, rule) pairs, which
// op_rules() then adds to the registry in this order.
using RuleTable = std::vector<std::pair<std::string_view, OpRule>>;
void add_elementwise_rules(RuleTable& table);
void add_elementwise_nonlinear_rules(RuleTable& table);
void add_elementwise_compare_rules(RuleTable& table);
void add_activation_rules(RuleTable& table);
void add_linalg_rules(RuleTable& table);
void add_conv_rules(RuleTable& table);
void add_pool_rules(RuleTable& table);
void add_norm_rules(RuleTable& table);
void add_reduce_rules(RuleTable& table);
void add_shape_rules(RuleTable& table);
void add_index_rules(RuleTable& table);
void add_index_copy_rules(RuleTable& table);
void add_resize_rules(RuleTable& table);

}  // namespace propdag

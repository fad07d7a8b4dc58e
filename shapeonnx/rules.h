// The shape-rule registry: op_type -> rule. One file per op family registers its rules.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/graph.h"

namespace shapeonnx {

/// What a rule sees of one node: its inputs' dtypes, shapes and known values, and where to put
/// the outputs. Input shapes handed to a rule are always static (the driver checks first).
class InferContext {
 public:
  InferContext(common::Graph& graph, const common::Node& node);

  const common::Node& node() const { return node_; }
  const common::Graph& graph() const { return graph_; }
  int64_t opset() const { return opset_; }

  size_t num_inputs() const { return node_.inputs.size(); }
  size_t num_outputs() const { return node_.outputs.size(); }
  /// Input i present (not omitted).
  bool has_input(size_t i) const { return node_.has_input(i); }
  common::DType dtype(size_t i) const;
  const common::Dims& shape(size_t i) const;
  int64_t rank(size_t i) const { return static_cast<int64_t>(shape(i).size()); }
  /// Known content of input i (initializer or propagated value); null when unknown.
  const common::Tensor* value(size_t i) const;

  /// Sets output i's dtype and shape.
  void set_output(size_t i, common::DType dtype, common::Dims dims);
  /// Sets output i's dtype, shape and known content.
  void set_value(size_t i, common::Tensor value);

  /// An error at this node.
  common::Error error(std::string message) const;
  /// Normalizes a possibly negative axis for a given rank, or fails.
  common::Result<int64_t> axis(int64_t axis, int64_t rank) const;

 private:
  common::Graph& graph_;
  const common::Node& node_;
  int64_t opset_;
};

using ShapeRule = common::Status (*)(InferContext&);

/// The rule for an op of the default domain, or null.
ShapeRule find_rule(std::string_view op_type);
/// All op types that have rules, sorted.
std::vector<std::string> rule_ops();

/// Rule families (each defined in its own file) add their rules here.
struct RuleTable {
  std::vector<std::pair<std::string_view, ShapeRule>> entries;
  void add(std::string_view op, ShapeRule rule) { entries.emplace_back(op, rule); }
};
void register_elementwise_rules(RuleTable& table);
void register_tensor_rules(RuleTable& table);     // Reshape, Concat, Slice, Gather, Split, ...
void register_nn_rules(RuleTable& table);         // Conv, ConvTranspose, pools, BatchNorm, ...
void register_linalg_rules(RuleTable& table);     // MatMul, Gemm
void register_reduce_rules(RuleTable& table);     // Reduce*, ArgMax/ArgMin, Softmax, TopK
void register_generator_rules(RuleTable& table);  // Shape, Size, Constant*, Range, Resize, ...
void register_training_rules(RuleTable& table);   // Adagrad, Momentum, Adam

/// Ops outside the default domain that have rules (and lowerings): the optimizer steps of
/// ai.onnx.preview.training. Their op types do not collide with default-domain ones.
bool is_training_op(std::string_view domain, std::string_view op_type);

}  // namespace shapeonnx

// The shape-rule registry: op_type -> rule. One file per op family registers its rules.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/graph.h"
#include "common/node_view.h"
#include "common/registry.h"

namespace shapeonnx {

/// What a rule sees of one node (common::NodeView: its inputs' dtypes, shapes and known values)
/// and where to put the outputs. Input shapes handed to a rule are always static (the driver
/// checks first).
class InferContext : public common::NodeView {
 public:
  InferContext(common::Graph& graph, const common::Node& node);

  int64_t opset() const { return opset_; }

  /// Sets output i's dtype and shape.
  void set_output(size_t i, common::DType dtype, common::Dims dims);
  /// Sets output i's dtype, shape and known content.
  void set_value(size_t i, common::Tensor value);

  /// Normalizes a possibly negative axis for a given rank, or fails.
  common::Result<int64_t> axis(int64_t axis, int64_t rank) const;

 private:
  common::Graph& outputs_graph_;  ///< the graph again, writable: set_output records into it
  int64_t opset_;
};

using ShapeRule = common::Status (*)(InferContext&);

/// The rule for an op of the default domain, or null.
ShapeRule find_rule(std::string_view op_type);
/// All op types that have rules, sorted.
std::vector<std::string> rule_ops();

/// Rule families (each defined in its own file) add their rules here.
using ShapeRegistry = common::Registry<ShapeRule>;
void register_elementwise_rules(ShapeRegistry& table);
void register_tensor_rules(ShapeRegistry& table);     // Reshape, Concat, Slice, Gather, Split, ...
void register_nn_rules(ShapeRegistry& table);         // Conv, ConvTranspose, pools, BatchNorm, ...
void register_linalg_rules(ShapeRegistry& table);     // MatMul, Gemm
void register_reduce_rules(ShapeRegistry& table);     // Reduce*, ArgMax/ArgMin, Softmax, TopK
void register_generator_rules(ShapeRegistry& table);  // Shape, Size, Constant*, Range, Resize, ...
void register_training_rules(ShapeRegistry& table);   // Adagrad, Momentum, Adam

/// Ops outside the default domain that have rules (and lowerings): the optimizer steps of
/// ai.onnx.preview.training. Their op types do not collide with default-domain ones.
bool is_training_op(std::string_view domain, std::string_view op_type);

}  // namespace shapeonnx

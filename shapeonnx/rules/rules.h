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
void register_elementwise_rules(ShapeRegistry& table);  // unary, binary, Where, Cast, PRelu, ...
void register_activation_rules(ShapeRegistry& table);   // Relu, Sigmoid, ..., Softmax family
void register_shape_rules(ShapeRegistry& table);        // Reshape, Concat, Split, Identity, ...
void register_index_rules(ShapeRegistry& table);      // Slice, Gather*, Scatter*, Pad, OneHot, ...
void register_conv_rules(ShapeRegistry& table);       // Conv, ConvTranspose, DeformConv, Col2Im
void register_pool_rules(ShapeRegistry& table);       // MaxPool, AveragePool, Global*, MaxUnpool
void register_norm_rules(ShapeRegistry& table);       // BatchNormalization, LayerNorm, LRN, ...
void register_linalg_rules(ShapeRegistry& table);     // MatMul, Gemm, Einsum, Det
void register_quant_rules(ShapeRegistry& table);      // QuantizeLinear, MatMulInteger, ...
void register_reduce_rules(ShapeRegistry& table);     // Reduce*, ArgMax/ArgMin, TopK, CumSum
void register_generator_rules(ShapeRegistry& table);  // Shape, Size, Constant*, Range, Random*
void register_resize_rules(ShapeRegistry& table);     // Resize, Upsample, GridSample, ...
void register_recurrent_rules(ShapeRegistry& table);  // RNN, GRU, LSTM
void register_signal_rules(ShapeRegistry& table);     // windows, DFT, STFT, MelWeightMatrix
void register_training_rules(ShapeRegistry& table);   // Adagrad, Momentum, Adam, losses
void register_text_rules(ShapeRegistry& table);       // TfIdfVectorizer

/// Ops outside the default domain that have rules (and lowerings): the optimizer steps of
/// ai.onnx.preview.training. Their op types do not collide with default-domain ones.
bool is_training_op(std::string_view domain, std::string_view op_type);

}  // namespace shapeonnx

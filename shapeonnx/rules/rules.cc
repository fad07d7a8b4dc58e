#include "shapeonnx/rules/rules.h"

#include <utility>

#include "common/op_params.h"

namespace shapeonnx {

namespace {

const ShapeRegistry& registry() {
  static const ShapeRegistry table = [] {
    ShapeRegistry t;
    register_elementwise_rules(t);
    register_activation_rules(t);
    register_shape_rules(t);
    register_index_rules(t);
    register_conv_rules(t);
    register_pool_rules(t);
    register_norm_rules(t);
    register_linalg_rules(t);
    register_quant_rules(t);
    register_reduce_rules(t);
    register_generator_rules(t);
    register_resize_rules(t);
    register_recurrent_rules(t);
    register_signal_rules(t);
    register_training_rules(t);
    register_text_rules(t);
    return t;
  }();
  return table;
}

}  // namespace

InferContext::InferContext(common::Graph& graph, const common::Node& node)
    : NodeView(graph, node), outputs_graph_(graph), opset_(graph.opset(node.domain)) {}

void InferContext::set_output(size_t i, common::DType dtype, common::Dims dims) {
  if (i >= node().outputs.size() || node().outputs[i].empty()) return;
  common::Value& v = outputs_graph_.value(node().outputs[i]);
  v.dtype = dtype;
  v.shape = std::move(dims);
  v.dim_params.clear();
}

void InferContext::set_value(size_t i, common::Tensor value) {
  if (i >= node().outputs.size() || node().outputs[i].empty()) return;
  set_output(i, value.dtype, value.dims);
  outputs_graph_.value(node().outputs[i]).known = std::move(value);
}

common::Result<int64_t> InferContext::axis(int64_t axis, int64_t rank) const {
  return at(common::normalize_axis(axis, rank));
}

ShapeRule find_rule(std::string_view op_type) {
  const ShapeRule* rule = registry().find(op_type);
  return rule == nullptr ? nullptr : *rule;
}

std::vector<std::string> rule_ops() { return registry().names(); }

}  // namespace shapeonnx

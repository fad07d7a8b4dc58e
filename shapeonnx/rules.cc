#include "shapeonnx/rules.h"

#include <algorithm>
#include <unordered_map>

#include "common/op_params.h"

namespace shapeonnx {

namespace {

const common::Dims kNoDims;

using Registry = std::unordered_map<std::string_view, ShapeRule>;

const Registry& registry() {
  static const Registry table = [] {
    RuleTable t;
    register_elementwise_rules(t);
    register_tensor_rules(t);
    register_nn_rules(t);
    register_linalg_rules(t);
    register_reduce_rules(t);
    register_generator_rules(t);
    register_training_rules(t);
    return Registry(t.entries.begin(), t.entries.end());
  }();
  return table;
}

}  // namespace

InferContext::InferContext(common::Graph& graph, const common::Node& node)
    : graph_(graph), node_(node), opset_(graph.opset(node.domain)) {}

common::DType InferContext::dtype(size_t i) const {
  const common::Value* v = has_input(i) ? graph_.find(node_.inputs[i]) : nullptr;
  return v ? v->dtype : common::DType::kUndefined;
}

const common::Dims& InferContext::shape(size_t i) const {
  const common::Value* v = has_input(i) ? graph_.find(node_.inputs[i]) : nullptr;
  return v && v->shape ? *v->shape : kNoDims;
}

const common::Tensor* InferContext::value(size_t i) const {
  return has_input(i) ? graph_.constant(node_.inputs[i]) : nullptr;
}

void InferContext::set_output(size_t i, common::DType dtype, common::Dims dims) {
  if (i >= node_.outputs.size() || node_.outputs[i].empty()) return;
  common::Value& v = graph_.value(node_.outputs[i]);
  v.dtype = dtype;
  v.shape = std::move(dims);
  v.dim_params.clear();
}

void InferContext::set_value(size_t i, common::Tensor value) {
  if (i >= node_.outputs.size() || node_.outputs[i].empty()) return;
  set_output(i, value.dtype, value.dims);
  graph_.value(node_.outputs[i]).known = std::move(value);
}

common::Error InferContext::error(std::string message) const {
  return graph_.error(node_, std::move(message));
}

common::Result<int64_t> InferContext::axis(int64_t axis, int64_t rank) const {
  common::Result<int64_t> a = common::normalize_axis(axis, rank);
  if (!a.ok()) return error(a.error().message);
  return a;
}

ShapeRule find_rule(std::string_view op_type) {
  auto it = registry().find(op_type);
  return it == registry().end() ? nullptr : it->second;
}

std::vector<std::string> rule_ops() {
  std::vector<std::string> ops;
  for (const auto& [op, rule] : registry()) ops.emplace_back(op);
  std::sort(ops.begin(), ops.end());
  return ops;
}

}  // namespace shapeonnx

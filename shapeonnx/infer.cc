#include "shapeonnx/infer.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <limits>

#include "common/eval/eval.h"
#include "shapeonnx/affine.h"
#include "shapeonnx/rules/rules.h"

namespace shapeonnx {

namespace {

using common::Dims;
using common::Graph;
using common::Node;
using common::Status;

// Values are propagated only for small tensors: shape computations, not weights.
constexpr int64_t kMaxPropagatedElements = 1 << 12;

std::string dims_text(const Dims& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// Gives every graph input a concrete shape: overrides first, then the batch rule.
Status prepare_inputs(Graph& graph, const Options& options) {
  for (const auto& entry : options.input_shapes) {
    const std::string& name = entry.first;
    const bool known =
        std::find(graph.inputs.begin(), graph.inputs.end(), name) != graph.inputs.end() ||
        std::any_of(graph.packed_inputs.begin(), graph.packed_inputs.end(),
                    [&](const common::PackedPort& p) { return p.name == name; });
    if (!known)
      return graph.error("--input-shape names '" + name + "', which is not a graph input");
  }
  for (const std::string& name : graph.inputs) {
    common::Value& v = graph.value(name);
    v.known.reset();
    if (auto it = options.input_values.find(name); it != options.input_values.end()) {
      v.known = it->second;
      v.shape = it->second.dims;
      v.dim_params.clear();
      continue;
    }
    if (auto it = options.input_shapes.find(name); it != options.input_shapes.end()) {
      v.shape = it->second;
      v.dim_params.clear();
      continue;
    }
    if (!v.shape) return graph.error("input '" + name + "' has no shape; give --input-shape");
    for (size_t d = 0; d < v.shape->size(); ++d) {
      int64_t& dim = (*v.shape)[d];
      const bool symbolic = dim < 0 || (d < v.dim_params.size() && !v.dim_params[d].empty());
      if (d == 0 && (symbolic || dim == 0))
        dim = options.batch_size;
      else if (symbolic) {
        return graph.error("input '" + name + "' dim " + std::to_string(d) +
                           " is symbolic; give --input-shape " + name + "=...");
      }
    }
    v.dim_params.clear();
  }
  return {};
}

Status check_inputs_static(const Graph& graph, const Node& node) {
  for (const std::string& in : node.inputs) {
    if (in.empty()) continue;
    const common::Value* v = graph.find(in);
    if (!v || !v->is_static()) {
      return graph.error(node, "input '" + in + "' has no static shape");
    }
  }
  return {};
}

// Computes the outputs' contents with the evaluator when all inputs are small known tensors.
Status propagate_values(Graph& graph, const Node& node) {
  if (!common::can_evaluate(node.op_type)) return {};
  std::vector<const common::Tensor*> inputs;
  int64_t total = 0;
  for (const std::string& in : node.inputs) {
    const common::Tensor* t = in.empty() ? nullptr : graph.constant(in);
    if (!in.empty() && !t) return {};
    if (t) total += t->numel();
    inputs.push_back(t);
  }
  for (const std::string& out : node.outputs) {
    const common::Value* v = graph.find(out);
    if (!out.empty() &&
        (!v || v->known || common::num_elements(*v->shape) > kMaxPropagatedElements)) {
      return {};
    }
  }
  if (total > 16 * kMaxPropagatedElements) return {};
  // A kernel that declines (training-mode Dropout, ...) leaves the values unknown; a rule that
  // needs one of them later says so.
  auto evaluated = common::evaluate(graph, node, inputs);
  if (!evaluated.ok()) return {};
  std::vector<common::Tensor> results = std::move(evaluated).value();
  for (size_t i = 0; i < results.size() && i < node.outputs.size(); ++i) {
    if (node.outputs[i].empty()) continue;
    common::Value& v = graph.value(node.outputs[i]);
    if (results[i].dims != *v.shape) {
      return graph.error(node, "output '" + node.outputs[i] + "' computes to " +
                                   dims_text(results[i].dims) + " but its shape rule gives " +
                                   dims_text(*v.shape));
    }
    v.known = std::move(results[i]);
  }
  return {};
}

// A Slice whose starts and ends offset the same unknown index: infer its shape from the offsets
// (the extent for in-range indices), then forget them again.
Status infer_data_dependent_slice(Graph& graph, const Node& node, ShapeRule rule,
                                  const AffineValues& affine, bool& handled) {
  auto bounds = affine.slice_bounds(graph, node);
  handled = bounds.has_value();
  if (!handled) return {};
  const common::Dims dims{static_cast<int64_t>(bounds->first.size())};
  common::Value& starts = graph.value(node.inputs[1]);
  common::Value& ends = graph.value(node.inputs[2]);
  starts.known = common::Tensor::from_int64(bounds->first, dims);
  ends.known = common::Tensor::from_int64(bounds->second, dims);
  InferContext ctx(graph, node);
  Status s = rule(ctx);
  graph.value(node.inputs[1]).known.reset();
  graph.value(node.inputs[2]).known.reset();
  return s;
}

// Input and output counts against the op's ONNX schema for the model's opset: too few, too many,
// or a required input left empty. For opsets newer than the ONNX library knows, only the newest
// known schema's minimum input count is checked (ops gain inputs over versions, they do not lose
// required ones); the rules and handlers check the rest of what they read.
Status check_arity(const Graph& graph, const Node& node) {
  const std::string domain = node.domain == "ai.onnx" ? "" : node.domain;
  const int version = static_cast<int>(graph.opset(domain));
  const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto range = known.find(domain);
  if (range == known.end() || version < 1) return {};
  const bool newer = version > range->second.second;
  const onnx::OpSchema* schema =
      onnx::OpSchemaRegistry::Schema(node.op_type, newer ? range->second.second : version, domain);
  if (!schema) return {};
  auto present = [](const std::vector<std::string>& names) {
    size_t n = names.size();
    while (n > 0 && names[n - 1].empty()) --n;  // trailing empty names: omitted optionals
    return static_cast<int>(n);
  };
  auto count_text = [](int lo, int hi) {
    if (lo == hi) return std::to_string(lo);
    return hi == std::numeric_limits<int>::max() ? "at least " + std::to_string(lo)
                                                 : std::to_string(lo) + " to " + std::to_string(hi);
  };
  const int inputs = present(node.inputs), outputs = present(node.outputs);
  if (newer) {  // only the lower bound holds across versions
    if (inputs < schema->min_input()) {
      return graph.error(node, "takes at least " + std::to_string(schema->min_input()) +
                                   " inputs, got " + std::to_string(inputs));
    }
  } else {
    if (inputs < schema->min_input() || inputs > schema->max_input()) {
      return graph.error(node, "takes " + count_text(schema->min_input(), schema->max_input()) +
                                   " inputs (opset " + std::to_string(version) + "), got " +
                                   std::to_string(inputs));
    }
    if (outputs < schema->min_output() || outputs > schema->max_output()) {
      return graph.error(node, "has " + count_text(schema->min_output(), schema->max_output()) +
                                   " outputs (opset " + std::to_string(version) + "), got " +
                                   std::to_string(outputs));
    }
  }
  const auto& formal = schema->inputs();
  for (size_t i = 0; i < static_cast<size_t>(inputs) && i < formal.size(); ++i) {
    if (node.inputs[i].empty() && formal[i].GetOption() == onnx::OpSchema::Single) {
      return graph.error(node, "required input " + std::to_string(i) + " ('" + formal[i].GetName() +
                                   "') is missing");
    }
  }
  return {};
}

Status infer_node(Graph& graph, const Node& node, const AffineValues& affine,
                  const Options& options) {
  if (options.custom_ops.has(node)) {
    return infer_custom(graph, node, options.custom_ops, options.batch_size);
  }
  if (!node.domain.empty() && !is_training_op(node.domain, node.op_type)) {
    return graph.error(node, "unsupported domain '" + node.domain + "'");
  }
  RETURN_IF_ERROR(check_arity(graph, node));
  ShapeRule rule = find_rule(node.op_type);
  if (!rule) return graph.error(node, "unsupported op (no shape rule)");
  RETURN_IF_ERROR(check_inputs_static(graph, node));
  for (const std::string& out : node.outputs) {
    if (!out.empty()) graph.value(out).known.reset();
  }
  bool handled = false;
  RETURN_IF_ERROR(infer_data_dependent_slice(graph, node, rule, affine, handled));
  if (!handled) {
    InferContext ctx(graph, node);
    RETURN_IF_ERROR(rule(ctx));
  }
  for (const std::string& out : node.outputs) {
    if (out.empty()) continue;
    const common::Value& v = graph.value(out);
    if (!v.is_static()) return graph.error(node, "no static shape for output '" + out + "'");
    if (common::num_elements(*v.shape) < 0) {
      return graph.error(node,
                         "output '" + out + "' shape " + dims_text(*v.shape) + " overflows int64");
    }
  }
  return propagate_values(graph, node);
}

}  // namespace

Status infer(Graph& graph, const Options& options) {
  RETURN_IF_ERROR(prepare_inputs(graph, options));
  AffineValues affine;
  for (const Node& node : graph.nodes) {
    RETURN_IF_ERROR(infer_node(graph, node, affine, options));
    affine.update(graph, node);
  }
  for (const std::string& out : graph.outputs) {
    const common::Value* v = graph.find(out);
    if (!v || !v->is_static()) return graph.error("graph output '" + out + "' has no static shape");
  }
  return {};
}

Stats stats(const Graph& graph) {
  Stats s;
  auto count = [&](const std::string& name) {
    if (name.empty() || graph.is_initializer(name)) return;
    const common::Value* v = graph.find(name);
    ++s.values;
    if (v && v->is_static()) ++s.static_values;
  };
  for (const std::string& in : graph.inputs) count(in);
  for (const Node& n : graph.nodes) {
    for (const std::string& out : n.outputs) count(out);
  }
  return s;
}

}  // namespace shapeonnx

#include "shapeonnx/infer.h"

#include <algorithm>

#include "common/eval.h"
#include "shapeonnx/affine.h"
#include "shapeonnx/rules.h"

namespace shapeonnx {

namespace {

using common::Dims;
using common::Error;
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
  for (const auto& [name, dims] : options.input_shapes) {
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

Status infer_node(Graph& graph, const Node& node, const AffineValues& affine) {
  if (!node.domain.empty() && !is_training_op(node.domain, node.op_type)) {
    return graph.error(node, "unsupported domain '" + node.domain + "'");
  }
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
    RETURN_IF_ERROR(infer_node(graph, node, affine));
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

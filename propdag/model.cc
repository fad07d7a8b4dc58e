#include "propdag/model.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "common/eval/eval.h"
#include "common/onnx_io.h"
#include "common/op_params.h"
#include "propdag/crown.h"
#include "propdag/registry.h"
#include "propdag/relevance.h"

#ifdef PROPDAG_HAVE_SHAPEONNX
#include "shapeonnx/infer.h"
#endif

namespace propdag {
namespace {

using common::Dims;

common::Result<Dims> input_shape(const common::Graph& graph, const std::string& name) {
  const common::Value* v = graph.find(name);
  if (v == nullptr || !v->shape) return graph.error("input '" + name + "' has no shape");
  Dims dims = *v->shape;
  for (int64_t& d : dims)
    if (d <= 0) d = 1;
  return dims;
}

}  // namespace

common::Result<Model> Model::load(std::string_view path) {
  ASSIGN_OR_RETURN(common::Graph graph, common::load_graph(path));
  return build(std::move(graph));
}

int64_t Model::input_size() const {
  int64_t n = 0;
  for (int i : dag_.inputs()) n += numel(i);
  return n;
}

namespace {

// Every variable value gets bound vectors and per-element maps of its size: past 2^28 elements
// (2 GiB per vector of doubles) the shape is a damaged model's, not one to bound (a declared dim
// of 2^62 made Concat ask for a vector past max_size()).
common::Status check_size(const common::Graph& graph, const std::string& name, const Dims& shape) {
  double elements = 1;
  for (const int64_t d : shape) elements *= static_cast<double>(d);
  if (elements <= static_cast<double>(1 << 28)) return {};
  return graph.error("value '" + name + "' has more than 2^28 elements (propdag's limit)");
}

}  // namespace

namespace {

// Initializers read only by ops whose rules copy what they read into their own matrices (Gemm,
// MatMul, Add, Sub), listed under their last reader: freed once it has its op, so that a large
// weight is not held both as the graph's tensor and as the op's matrix.
std::vector<std::vector<std::string>> copied_constants(const common::Graph& graph) {
  static const std::set<std::string_view> kCopying = {"Gemm", "MatMul", "Add", "Sub"};
  std::map<std::string, std::pair<size_t, bool>> last;  // name -> last reader, all copying
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const common::Node& node = graph.nodes[n];
    const bool copying =
        (node.domain.empty() || node.domain == "ai.onnx") && kCopying.count(node.op_type) != 0;
    for (const std::string& in : node.inputs) {
      if (in.empty() || !graph.is_initializer(in)) continue;
      auto it = last.try_emplace(in, n, copying).first;
      it->second = {n, copying && it->second.second};
    }
  }
  std::vector<std::vector<std::string>> out(graph.nodes.size());
  for (const auto& [name, reader] : last) {
    const bool output =
        std::find(graph.outputs.begin(), graph.outputs.end(), name) != graph.outputs.end();
    if (reader.second && !output) out[reader.first].push_back(name);
  }
  return out;
}

}  // namespace

common::Result<Model> Model::build(common::Graph graph) {
#ifdef PROPDAG_HAVE_SHAPEONNX
  RETURN_IF_ERROR(shapeonnx::infer(graph));
#endif
  Model m;
  m.relevance_cache_ = std::make_shared<internal::RelevanceCache>();
  m.graph_ = std::move(graph);
  ASSIGN_OR_RETURN(m.dag_, Dag::build(m.graph_));
  m.ops_.resize(m.dag_.size());
  m.shapes_.resize(m.dag_.size());
  for (int i : m.dag_.inputs()) {
    ASSIGN_OR_RETURN(m.shapes_[i], input_shape(m.graph_, m.dag_.node(i).name));
    RETURN_IF_ERROR(check_size(m.graph_, m.dag_.node(i).name, m.shapes_[i]));
  }
  // Dag nodes of each graph node, by output index (-1: output not variable or unused).
  std::vector<std::vector<int>> produced(m.graph_.nodes.size());
  for (int i = 0; i < m.dag_.size(); ++i) {
    const DagNode& d = m.dag_.node(i);
    if (d.graph_node < 0) continue;
    auto& outs = produced[d.graph_node];
    if (outs.size() <= static_cast<size_t>(d.output_index)) outs.resize(d.output_index + 1, -1);
    outs[d.output_index] = i;
  }
  // A model whose shapes depend on input values is evaluated at points by common's evaluator
  // (point_eval.h), which reads every initializer: where a Slice's starts or ends are computed,
  // the releases wait until it is known whether they vary.
  const std::vector<std::vector<std::string>> release = copied_constants(m.graph_);
  bool may_vary = false;
  for (const common::Node& node : m.graph_.nodes)
    for (size_t i = 1; node.op_type == "Slice" && i < 3 && i < node.inputs.size(); ++i)
      may_vary = may_vary || !m.graph_.is_initializer(node.inputs[i]);
  std::vector<std::string> deferred;
  for (size_t n = 0; n < m.graph_.nodes.size(); ++n) {
    RETURN_IF_ERROR(m.add_node(n, produced[n]));
    for (const std::string& name : release[n]) {
      if (may_vary)
        deferred.push_back(name);
      else
        m.graph_.initializers.erase(name);
    }
  }
  if (m.value_dependent_shape_.empty())
    for (const std::string& name : deferred) m.graph_.initializers.erase(name);
  for (const Dims& shape : m.shapes_) m.numel_.push_back(common::num_elements(shape));
  m.crown_plan_ = std::make_shared<const internal::CrownPlan>(internal::make_crown_plan(m));
  return m;
}

// Per input position: shape and constant (folded values first, then graph constants).
common::Result<OpContext> Model::context(size_t n) const {
  const common::Node& node = graph_.nodes[n];
  OpContext ctx{graph_, node, {}, {}, graph_.opset("")};
  // No op with a bound rule takes its first input as optional; the rules read its shape.
  if (!node.inputs.empty() && node.inputs[0].empty())
    return graph_.error(node, "input 0 is missing");
  for (const std::string& in : node.inputs) {
    int d = in.empty() ? -1 : dag_.find(in);
    const common::Tensor* c = nullptr;
    if (!in.empty() && d < 0) {
      auto f = folded_.find(in);
      c = f != folded_.end() ? &f->second : graph_.constant(in);
      if (c == nullptr)
        return graph_.error(node, "input '" + in + "' is neither variable nor constant");
    }
    ctx.shapes.push_back(in.empty() ? std::nullopt
                                    : std::optional<Dims>(d >= 0 ? shapes_[d] : c->dims));
    ctx.constants.push_back(c);
  }
  return ctx;
}

common::Status Model::add_node(size_t n, const std::vector<int>& dag_nodes) {
  const common::Node& node = graph_.nodes[n];
  ASSIGN_OR_RETURN(OpContext ctx, context(n));
  if (dag_nodes.empty()) return fold(ctx);
  bool onnx_domain = node.domain.empty() || node.domain == "ai.onnx";
  OpRule rule = onnx_domain ? find_rule(node.op_type) : nullptr;
  if (rule == nullptr) return graph_.error(node, "no bound rule for op " + node.op_type);
  ASSIGN_OR_RETURN(OpOutputs outs, rule(ctx));
  if (node.op_type == "Slice" && (ctx.variable(1) || ctx.variable(2)) &&
      value_dependent_shape_.empty())
    value_dependent_shape_ = "node '" + node.name + "' (Slice)";
  for (size_t o = 0; o < dag_nodes.size(); ++o) {
    int d = dag_nodes[o];
    if (d < 0) continue;
    if (o >= outs.size())
      return graph_.error(node, "no bound rule for output " + std::to_string(o));
    RETURN_IF_ERROR(check_shape(node, node.outputs[o], outs[o].shape));
    ops_[d] = std::move(outs[o].op);
    shapes_[d] = std::move(outs[o].shape);
  }
  return {};
}

// The rule's output shape must be the one shape inference found (when it ran).
common::Status Model::check_shape(const common::Node& node, const std::string& name,
                                  const Dims& shape) const {
  RETURN_IF_ERROR(check_size(graph_, name, shape));
#ifdef PROPDAG_HAVE_SHAPEONNX
  const common::Value* v = graph_.find(name);
  if (v == nullptr || !v->is_static() || *v->shape == shape) return {};
  auto text = [](const Dims& d) {
    std::string s = "[";
    for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
    return s + "]";
  };
  return graph_.error(node, "bound rule gives '" + name + "' shape " + text(shape) +
                                ", shape inference " + text(*v->shape));
#else
  return {};
#endif
}

common::Status Model::fold(const OpContext& ctx) {
  const common::Node& node = ctx.node;
  if (node.op_type == "Shape") {
    Dims dims = *ctx.shapes[0];
    const common::DimRange range = common::shape_range(node, static_cast<int64_t>(dims.size()));
    Dims part(dims.begin() + range.begin, dims.begin() + range.end);
    folded_[node.outputs[0]] = common::Tensor::from_int64(part, {range.end - range.begin});
    return {};
  }
  if (node.op_type == "Size") {
    folded_[node.outputs[0]] =
        common::Tensor::from_int64({common::num_elements(*ctx.shapes[0])}, {});
    return {};
  }
  ASSIGN_OR_RETURN(std::vector<common::Tensor> values,
                   common::evaluate(ctx.graph, node, ctx.constants));
  for (size_t o = 0; o < values.size() && o < node.outputs.size(); ++o)
    folded_[node.outputs[o]] = std::move(values[o]);
  return {};
}

}  // namespace propdag

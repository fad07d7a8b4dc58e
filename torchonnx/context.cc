#include "torchonnx/context.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "torchonnx/pyfmt.h"

namespace torchonnx {

using common::DType;
using common::Tensor;

Context::Context(LowerState& state, int node_index)
    : NodeView(*state.graph, state.graph->nodes[node_index]), state_(state) {}

const Tensor* Context::constant(size_t i) const {
  return has_input(i) ? constant_value(node().inputs[i]) : nullptr;
}

const Tensor* Context::constant_value(const std::string& name) const {
  auto it = state_.operands.find(name);
  if (it != state_.operands.end() && !graph().is_initializer(name)) {
    // Produced by an emitted statement: not a compile-time constant even if propagated.
    const common::Value* v = graph().find(name);
    if (!v || !v->known) return nullptr;
  }
  return graph().constant(name);
}

bool Context::output_used(size_t i) const {
  const common::Node& owner = fused_ ? *fused_ : node();
  return i < owner.outputs.size() && !owner.outputs[i].empty() &&
         state_.live.count(owner.outputs[i]) != 0;
}

std::string Context::in(size_t i) {
  if (!has_input(i)) {
    if (!missing_input_) missing_input_ = i;
    return "None";
  }
  const std::string& name = node().inputs[i];
  auto it = state_.operands.find(name);
  if (it != state_.operands.end()) return it->second.expr;
  const Tensor* c = graph().constant(name);
  if (!c) return "None";  // the driver checks producers first; unreachable for valid graphs
  std::string expr = buffer(*c, "const");
  state_.operands[name] = Operand{expr, false};
  return expr;
}

bool Context::inlinable(size_t i) const {
  const Tensor* c = constant(i);
  return c && c->numel() == 1 && c->dtype != DType::kBool &&
         rank(i) <= static_cast<int64_t>(out_shape().size());
}

std::string Context::scalar_or_in(size_t i) {
  return inlinable(i) ? py_scalar(*constant(i)) : in(i);
}

bool Context::batched(size_t i) const {
  if (!has_input(i)) return false;
  auto it = state_.operands.find(node().inputs[i]);
  return it != state_.operands.end() && it->second.batched;
}

Operand Context::operand(size_t i) {
  const int axis = batch_axis(i);
  return Operand{in(i), axis == 0, axis > 0 ? axis : -1};
}

View Context::input_view(size_t i) {
  if (has_input(i)) {
    auto it = state_.views.find(node().inputs[i]);
    if (it != state_.views.end()) return it->second;
  }
  View v{in(i), shape(i), {}};
  for (int64_t d : v.dims) v.ranges.push_back({0, 1, d, false});
  return v;
}

void Context::set_view(size_t i, View view) {
  const common::Node& owner = fused_ ? *fused_ : node();
  if (i < owner.outputs.size() && !owner.outputs[i].empty())
    state_.views[owner.outputs[i]] = std::move(view);
}

int Context::batch_axis(size_t i) const {
  if (!has_input(i)) return -1;
  auto it = state_.operands.find(node().inputs[i]);
  if (it == state_.operands.end()) return -1;
  return it->second.batched ? 0 : it->second.moved;
}

int Context::probed(const std::string& value) const {
  if (!state_.batch_axes) return -2;
  auto it = state_.batch_axes->find(value);
  const common::Value* v = graph().find(value);
  // A value slimonnx rewrote under the same name may have another shape: trust the probe only
  // where the shapes agree.
  if (it == state_.batch_axes->end() || !v || !v->shape || *v->shape != it->second.dims) return -2;
  return it->second.axis;
}

int Context::probed_axis(size_t i) const {
  const common::Node& owner = fused_ ? *fused_ : node();
  return i < owner.outputs.size() ? probed(owner.outputs[i]) : -2;
}

int Context::probed_input_axis(size_t i) const {
  return has_input(i) ? probed(node().inputs[i]) : -2;
}

bool Context::any_batched() const {
  for (size_t i = 0; i < num_inputs(); ++i) {
    if (batched(i)) return true;
  }
  return false;
}

std::string Context::buffer(Tensor tensor, std::string_view hint, bool parameter) {
  std::string attr = state_.attrs.make(hint, true);
  if (state_.dry_run) std::string().swap(tensor.raw);
  state_.module.buffers.push_back(Buffer{attr, std::move(tensor), parameter});
  return "self." + attr;
}

std::string Context::layer(std::string_view kind, py::Expr ctor, std::vector<Param> params) {
  // A node that reads the same weight initializers as an earlier layer with the same constructor
  // and the same resulting tensors (a weight shared by several nodes, or by the copies of an
  // unrolled loop body) reuses that layer: one set of parameters, as in the ONNX graph.
  std::string sources;
  for (const std::string& in : node().inputs) {
    if (!in.empty() && graph().is_initializer(in)) sources += in + '\n';
  }
  if (!sources.empty()) {
    for (const Layer& l : state_.module.layers) {
      if (l.sources != sources || l.ctor.str() != ctor.str() || l.params.size() != params.size())
        continue;
      bool same = true;
      for (size_t i = 0; i < params.size() && same; ++i) {
        same = l.params[i].name == params[i].name && l.params[i].tensor == params[i].tensor;
      }
      if (same) return l.attr;
    }
  }
  std::string attr = state_.attrs.make(kind, true);
  if (state_.dry_run) {
    for (Param& p : params) std::string().swap(p.tensor.raw);
  }
  state_.module.layers.push_back(
      Layer{attr, std::move(ctor), std::move(params), std::move(sources)});
  return attr;
}

std::string Context::method(std::string_view hint, std::vector<std::string> params, std::string doc,
                            std::vector<std::string> lines, py::Namespaces uses) {
  std::string name = state_.attrs.make(hint, true);
  state_.module.methods.push_back(
      Method{name, std::move(params), std::move(doc), std::move(lines), uses});
  return "self." + name;
}

void Context::add_import(const std::string& module) {
  std::vector<std::string>& imports = state_.module.imports;
  if (std::find(imports.begin(), imports.end(), module) == imports.end()) imports.push_back(module);
}

const common::Node* Context::sole_consumer(size_t i) const {
  const common::Value* v = output_value(i);
  if (!v || v->consumers.size() != 1) return nullptr;
  const auto& outs = graph().outputs;
  if (std::find(outs.begin(), outs.end(), v->name) != outs.end()) return nullptr;
  const int c = v->consumers[0];
  return state_.done[c] ? nullptr : &graph().nodes[c];
}

void Context::fuse(const common::Node& consumer) {
  state_.done[&consumer - graph().nodes.data()] = true;
  fused_ = &consumer;
}

void Context::absorb(const common::Node& node, const common::Node* consumer) {
  state_.done[&node - graph().nodes.data()] = true;
  if (consumer) state_.done[consumer - graph().nodes.data()] = true;
  absorbed_.push_back(consumer ? node.name + " + " + consumer->name : node.name);
}

void Context::emit_values(py::Expr expr, std::string_view hint,
                          const std::vector<std::string>& values, int axis) {
  add_statement(std::move(expr), hint, {axis}, values, true);
}

common::Status Context::emit(py::Expr expr, std::string_view hint, bool batched) {
  return emit_one(std::move(expr), hint, batched ? 0 : -1, false);
}

void Context::emit_tuple(py::Expr expr, std::string_view hint, bool batched) {
  add_statement(std::move(expr), hint, {batched ? 0 : -1}, outputs(), false);
}

common::Status Context::emit_at(py::Expr expr, std::string_view hint, int axis) {
  return emit_one(std::move(expr), hint, axis, true);
}

common::Status Context::emit_one(py::Expr expr, std::string_view hint, int axis, bool aware) {
  for (size_t i = 1; i < (fused_ ? fused_ : &node())->outputs.size(); ++i) {
    if (output_used(i)) return error("optional output " + std::to_string(i) + " is not supported");
  }
  add_statement(std::move(expr), hint, {axis}, outputs(1), aware);
  return {};
}

void Context::emit_tuple_at(py::Expr expr, std::string_view hint, int axis) {
  add_statement(std::move(expr), hint, {axis}, outputs(), true);
}

void Context::emit_tuple_axes(py::Expr expr, std::string_view hint, std::vector<int> axes) {
  const std::vector<std::string> values = outputs();
  axes.resize(values.size(), -1);
  add_statement(std::move(expr), hint, std::move(axes), values, true);
}

void Context::check_batch(int axis, bool aware, const std::string& out) {
  if (state_.batch <= 0 || !state_.batch_lost.empty()) return;
  bool carried = false, moved = false;
  for (size_t i = 0; i < num_inputs(); ++i) {
    const int a = batch_axis(i);
    carried = carried || a >= 0;
    moved = moved || a > 0;
  }
  // A fused consumer's other inputs count too (a bias added to a batched product).
  if (fused_) {
    for (const std::string& in : fused_->inputs) {
      auto it = state_.operands.find(in);
      if (!in.empty() && it != state_.operands.end() && it->second.moved > 0) moved = true;
    }
  }
  // A batch dim must be where the model's own shapes put it (when the probe knows).
  const int expected = axis >= 0 ? probed(out) : -2;
  if ((carried && axis < 0) || (moved && !aware) || (expected != -2 && expected != axis)) {
    state_.batch_lost =
        node().name.empty() ? node().op_type : node().name + " (" + node().op_type + ")";
  }
}

std::vector<std::string> Context::outputs(size_t count) const {
  const common::Node& owner = fused_ ? *fused_ : node();
  return {owner.outputs.begin(), owner.outputs.begin() + std::min(count, owner.outputs.size())};
}

void Context::add_statement(py::Expr expr, std::string_view hint, std::vector<int> axes,
                            const std::vector<std::string>& values, bool aware) {
  Statement st;
  st.expr = std::move(expr);
  st.comment = comment();
  for (size_t i = 0; i < values.size(); ++i) {
    if (!live(values[i])) {
      st.targets.push_back("_");
      continue;
    }
    const int axis = axes.size() == 1 ? axes[0] : axes[i];
    check_batch(axis, aware, values[i]);
    std::string name = state_.locals.make(hint, true);
    state_.operands[values[i]] =
        Operand{name, axis == 0 && state_.batch > 0, axis > 0 && state_.batch > 0 ? axis : -1};
    st.targets.push_back(std::move(name));
  }
  state_.module.body.push_back(std::move(st));
}

std::string Context::comment() const {
  std::string text = fused_ ? node().name + " + " + fused_->name : node().name;
  for (const std::string& a : absorbed_) text += ", " + a;
  return text;
}

std::string Context::local(py::Expr expr, std::string_view hint) {
  Statement st;
  st.expr = std::move(expr);
  st.comment = comment();
  st.targets.push_back(state_.locals.make(hint, true));
  state_.module.body.push_back(st);
  return st.targets[0];
}

void Context::alias(size_t i, Operand operand) {
  const common::Node& owner = fused_ ? *fused_ : node();
  check_batch(operand.batched ? 0 : operand.moved, operand.moved >= 0, owner.outputs[i]);
  state_.operands[owner.outputs[i]] = std::move(operand);
}

common::Error Context::error(const std::string& message) const {
  return NodeView::error(message + " (opset " + std::to_string(opset()) + ")");
}

void LowerState::release_weights_read_last_by(size_t i) {
  if (releasing == nullptr || i >= release_after.size()) return;
  for (const std::string& name : release_after[i]) releasing->initializers.erase(name);
}

// Only layers: their handlers copy the weights into the module at their own turn, and no other
// handler looks back at them (a Concat does look back at its Unsqueezes' axes).
std::vector<std::vector<std::string>> weights_by_last_reader(const common::Graph& graph) {
  static const std::set<std::string_view> kLayers = {"Gemm", "MatMul", "Conv", "ConvTranspose"};
  std::map<std::string, std::pair<size_t, bool>, std::less<>> last;  // reader, only layers
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const common::Node& node = graph.nodes[i];
    const bool layer = node.domain.empty() && kLayers.count(node.op_type) != 0;
    for (const std::string& in : node.inputs) {
      if (in.empty() || !graph.is_initializer(in)) continue;
      auto it = last.try_emplace(in, i, layer).first;
      it->second = {i, layer && it->second.second};
    }
  }
  std::vector<std::vector<std::string>> out(graph.nodes.size());
  for (const auto& [name, reader] : last) {
    if (reader.second &&
        std::find(graph.outputs.begin(), graph.outputs.end(), name) == graph.outputs.end())
      out[reader.first].push_back(name);
  }
  return out;
}

}  // namespace torchonnx

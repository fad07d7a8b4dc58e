#include "slimonnx/rewrite.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <utility>

#include "common/op_params.h"
#include "common/topo.h"

namespace slimonnx {

using common::DType;
using common::Graph;
using common::Node;
using common::Tensor;

namespace {

// Ops whose output shape depends on the content of inputs after the first.
bool shape_from_content(std::string_view op) {
  static const std::set<std::string_view> ops = {
      "Slice",     "Reshape", "Expand",   "Tile",    "Pad",   "ConstantOfShape",
      "Range",     "Resize",  "Upsample", "TopK",    "Split", "Squeeze",
      "Unsqueeze", "OneHot",  "NonZero",  "Compress"};
  return ops.count(op) != 0;
}

}  // namespace

std::unordered_set<std::string> untrusted_values(const Graph& g) {
  std::unordered_set<std::string> untrusted;
  std::unordered_set<std::string> constant;  // initializers and values computed from them or shapes
  for (const auto& [name, t] : g.initializers) constant.insert(name);
  for (const Node& n : g.nodes) {
    bool bad = false, all_constant = true;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const std::string& in = n.inputs[i];
      if (in.empty()) continue;
      bad = bad || untrusted.count(in) != 0;
      const bool is_const = constant.count(in) != 0;
      all_constant = all_constant && is_const;
      bad = bad || (i > 0 && !is_const && shape_from_content(n.op_type));
    }
    const bool reads_shape_only = n.op_type == "Shape" || n.op_type == "Size";
    for (const std::string& out : n.outputs) {
      if (bad) untrusted.insert(out);
      if (!bad && (all_constant || reads_shape_only)) constant.insert(out);
    }
  }
  return untrusted;
}

Editor::Editor(Graph& graph)
    : graph_(graph), removed_(graph.nodes.size(), false), untrusted_(untrusted_values(graph)) {}

int Editor::producer(std::string_view value) const {
  const common::Value* v = graph_.find(value);
  if (v == nullptr || v->producer < 0 || removed_[v->producer]) return -1;
  return v->producer;
}

std::vector<int> Editor::consumers(std::string_view value) const {
  const common::Value* v = graph_.find(value);
  if (v == nullptr) return {};
  std::vector<int> out;
  for (int c : v->consumers) {
    if (!removed_[c]) out.push_back(c);
  }
  return out;
}

bool Editor::is_graph_output(std::string_view value) const {
  return std::find(graph_.outputs.begin(), graph_.outputs.end(), value) != graph_.outputs.end();
}

bool Editor::is_graph_input(std::string_view value) const {
  return std::find(graph_.inputs.begin(), graph_.inputs.end(), value) != graph_.inputs.end();
}

bool Editor::single_use(std::string_view value) const {
  return !is_graph_output(value) && consumers(value).size() == 1;
}

bool Editor::unused(std::string_view value) const {
  return !is_graph_output(value) && consumers(value).empty();
}

const Tensor* Editor::initializer(std::string_view value) const {
  return graph_.initializer(value);
}

const common::Dims* Editor::shape(std::string_view value) const {
  const common::Value* v = graph_.find(value);
  if (v == nullptr || !v->is_static() || untrusted(value)) return nullptr;
  return &*v->shape;
}

DType Editor::dtype(std::string_view value) const {
  const common::Value* v = graph_.find(value);
  return v == nullptr ? DType::kUndefined : v->dtype;
}

void Editor::drop_consumer(const std::string& value, int i) {
  if (value.empty()) return;
  auto& list = graph_.value(value).consumers;
  auto it = std::find(list.begin(), list.end(), i);
  if (it != list.end()) list.erase(it);
}

void Editor::remove_node(int i) {
  if (removed_[i]) return;
  removed_[i] = true;
  const Node& n = graph_.nodes[i];
  for (const std::string& in : n.inputs) drop_consumer(in, i);
  for (const std::string& out : n.outputs) {
    if (out.empty()) continue;
    common::Value& v = graph_.value(out);
    if (v.producer == i) v.producer = -1;
  }
}

int Editor::add_node(Node node) {
  const int i = static_cast<int>(graph_.nodes.size());
  graph_.nodes.push_back(std::move(node));
  removed_.push_back(false);
  const Node& n = graph_.nodes.back();
  for (const std::string& in : n.inputs) {
    if (!in.empty()) graph_.value(in).consumers.push_back(i);
  }
  for (const std::string& out : n.outputs) {
    if (!out.empty()) graph_.value(out).producer = i;
  }
  return i;
}

void Editor::set_input(int i, size_t slot, const std::string& value) {
  Node& n = graph_.nodes[i];
  if (n.inputs[slot] == value) return;
  drop_consumer(n.inputs[slot], i);
  n.inputs[slot] = value;
  if (!value.empty()) graph_.value(value).consumers.push_back(i);
}

// By value: callers often pass the producer's own output name, which the loop below overwrites.
void Editor::rename_output(int p, std::string from,  // NOLINT(performance-unnecessary-value-param)
                           std::string to) {         // NOLINT(performance-unnecessary-value-param)
  for (std::string& out : graph_.nodes[p].outputs) {
    if (out == from) out = to;
  }
  graph_.value(to).producer = p;
  graph_.value(from).producer = -1;
  for (int c : consumers(from)) {
    Node& n = graph_.nodes[c];
    for (size_t s = 0; s < n.inputs.size(); ++s) {
      if (n.inputs[s] == from) set_input(c, s, to);
    }
  }
}

bool Editor::can_replace(std::string_view old_value, std::string_view replacement) const {
  if (old_value == replacement || !is_graph_output(old_value)) return true;
  return producer(replacement) >= 0 && !is_graph_output(replacement) &&
         !is_graph_input(replacement);
}

bool Editor::replace_all_uses(const std::string& old_value, const std::string& replacement) {
  if (old_value == replacement) return true;
  if (!can_replace(old_value, replacement)) return false;
  if (is_graph_output(old_value)) {
    rename_output(producer(replacement), replacement, old_value);
    return true;
  }
  for (int c : consumers(old_value)) {
    Node& n = graph_.nodes[c];
    for (size_t s = 0; s < n.inputs.size(); ++s) {
      if (n.inputs[s] == old_value) set_input(c, s, replacement);
    }
  }
  return true;
}

std::string Editor::add_initializer(std::string_view hint, Tensor tensor) {
  std::string name = graph_.fresh_name(hint);
  common::Value& v = graph_.value(name);
  v.dtype = tensor.dtype;
  v.shape = tensor.dims;
  v.producer = -1;
  graph_.initializers[name] = std::move(tensor);
  return name;
}

void Editor::release_if_unused(const std::string& value) {
  if (value.empty() || !unused(value) || is_graph_input(value)) return;
  graph_.initializers.erase(value);
}

std::string Editor::add_value(std::string_view hint, DType dtype, const common::Dims& dims) {
  std::string name = graph_.fresh_name(hint);
  common::Value& v = graph_.value(name);
  v.dtype = dtype;
  v.shape = dims;
  return name;
}

common::Result<int64_t> Editor::finish() {
  if (rewrites_ == 0) return int64_t{0};
  std::vector<Node> kept;
  kept.reserve(graph_.nodes.size());
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    if (!removed_[i]) kept.push_back(std::move(graph_.nodes[i]));
  }
  graph_.nodes = std::move(kept);
  RETURN_IF_ERROR(common::topo_sort(graph_));
  return rewrites_;
}

bool params_constant(const Editor& ed, const Node& n) {
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    if (!n.inputs[i].empty() && ed.initializer(n.inputs[i]) == nullptr) return false;
  }
  return true;
}

std::optional<std::vector<int64_t>> int_param(const Editor& ed, const Node& n, size_t slot,
                                              std::string_view attr) {
  const Tensor* t = n.has_input(slot) ? ed.initializer(n.inputs[slot]) : nullptr;
  auto ints = common::ints_input_or_attr(n, slot, t, attr, attr);
  if (!ints.ok()) return std::nullopt;  // not a constant
  return ints->value_or(std::vector<int64_t>{});
}

std::optional<std::vector<double>> float_data(const Tensor* t) {
  if (t == nullptr) return std::nullopt;
  if (t->dtype != DType::kFloat && t->dtype != DType::kDouble) return std::nullopt;
  return t->to_double();
}

Tensor float_tensor(const std::vector<double>& values, common::Dims dims, DType like) {
  return Tensor::from_double(values, std::move(dims), like);
}

bool all_equal(const Tensor& t, double v) {
  if (!common::is_floating(t.dtype) && !common::is_integer(t.dtype)) return false;
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (t.double_at(i) != v) return false;
  }
  return true;
}

}  // namespace slimonnx

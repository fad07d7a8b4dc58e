#include "common/graph.h"

#include <algorithm>
#include <unordered_set>

namespace common {

bool Value::is_static() const {
  if (!shape) return false;
  return std::all_of(shape->begin(), shape->end(), [](int64_t d) { return d >= 0; });
}

const Attribute* Node::attr(std::string_view attr_name) const {
  for (const Attribute& a : attrs) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

int64_t Node::attr_int(std::string_view attr_name, int64_t fallback) const {
  const Attribute* a = attr(attr_name);
  return a && a->type == AttrType::kInt ? a->i : fallback;
}

float Node::attr_float(std::string_view attr_name, float fallback) const {
  const Attribute* a = attr(attr_name);
  if (!a) return fallback;
  if (a->type == AttrType::kFloat) return a->f;
  if (a->type == AttrType::kInt) return static_cast<float>(a->i);
  return fallback;
}

std::string Node::attr_string(std::string_view attr_name, std::string_view fallback) const {
  const Attribute* a = attr(attr_name);
  return a && a->type == AttrType::kString ? a->s : std::string(fallback);
}

std::vector<int64_t> Node::attr_ints(std::string_view attr_name,
                                     std::vector<int64_t> fallback) const {
  const Attribute* a = attr(attr_name);
  if (!a) return fallback;
  if (a->type == AttrType::kInts) return a->ints;
  if (a->type == AttrType::kInt) return {a->i};
  return fallback;
}

std::vector<float> Node::attr_floats(std::string_view attr_name,
                                     std::vector<float> fallback) const {
  const Attribute* a = attr(attr_name);
  if (!a) return fallback;
  if (a->type == AttrType::kFloats) return a->floats;
  if (a->type == AttrType::kFloat) return {a->f};
  return fallback;
}

const Tensor* Node::attr_tensor(std::string_view attr_name) const {
  const Attribute* a = attr(attr_name);
  return a && a->t ? &*a->t : nullptr;
}

void Node::set_attr(Attribute a) {
  for (Attribute& old : attrs) {
    if (old.name == a.name) {
      old = std::move(a);
      return;
    }
  }
  attrs.push_back(std::move(a));
}

void Node::remove_attr(std::string_view attr_name) {
  std::erase_if(attrs, [&](const Attribute& a) { return a.name == attr_name; });
}

int64_t Graph::opset(std::string_view domain) const {
  const bool onnx_domain = domain.empty() || domain == "ai.onnx";
  for (const OpsetId& o : opsets) {
    const bool match =
        onnx_domain ? (o.domain.empty() || o.domain == "ai.onnx") : o.domain == domain;
    if (match) return o.version;
  }
  return 0;
}

Value& Graph::value(const std::string& value_name) {
  auto [it, inserted] = values.try_emplace(value_name);
  if (inserted) it->second.name = value_name;
  return it->second;
}

const Value* Graph::find(std::string_view value_name) const {
  auto it = values.find(std::string(value_name));
  return it == values.end() ? nullptr : &it->second;
}

const Tensor* Graph::initializer(std::string_view value_name) const {
  auto it = initializers.find(std::string(value_name));
  return it == initializers.end() ? nullptr : &it->second;
}

const Tensor* Graph::constant(std::string_view value_name) const {
  if (const Tensor* t = initializer(value_name)) return t;
  const Value* v = find(value_name);
  return v && v->known ? &*v->known : nullptr;
}

void Graph::rebuild_index() {
  for (auto& [key, v] : values) {
    v.producer = -1;
    v.consumers.clear();
  }
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    for (const std::string& in : nodes[i].inputs) {
      if (!in.empty()) value(in).consumers.push_back(i);
    }
    for (const std::string& out : nodes[i].outputs) {
      if (!out.empty()) value(out).producer = i;
    }
  }
  for (const std::string& in : inputs) value(in);
  for (const std::string& out : outputs) value(out);
  for (const auto& [key, t] : initializers) {
    Value& v = value(key);
    v.dtype = t.dtype;
    v.shape = t.dims;
  }
}

void Graph::prune_values() {
  std::unordered_set<std::string> used(inputs.begin(), inputs.end());
  used.insert(outputs.begin(), outputs.end());
  for (const auto& [key, t] : initializers) used.insert(key);
  for (const Node& n : nodes) {
    used.insert(n.inputs.begin(), n.inputs.end());
    used.insert(n.outputs.begin(), n.outputs.end());
  }
  std::erase_if(values, [&](const auto& kv) { return !used.count(kv.first); });
}

std::string Graph::fresh_name(std::string_view prefix) {
  for (;;) {
    std::string candidate = std::string(prefix) + "_" + std::to_string(++fresh_counter_);
    if (values.count(candidate)) continue;
    bool node_clash =
        std::any_of(nodes.begin(), nodes.end(), [&](const Node& n) { return n.name == candidate; });
    if (!node_clash) return candidate;
  }
}

Error Graph::error(const Node& node, std::string message) const {
  return Error{source, node.name, node.op_type, std::move(message)};
}

Error Graph::error(std::string message) const { return Error{source, "", "", std::move(message)}; }

namespace {

// A value whose type a file would declare.
bool declared(const Value& v) { return v.dtype != DType::kUndefined || v.shape.has_value(); }

// Every declared value of `a` is declared alike in `b`.
bool declared_within(const Graph& a, const Graph& b) {
  for (const auto& [name, v] : a.values) {
    if (!declared(v)) continue;
    const Value* w = b.find(name);
    if (!w || w->dtype != v.dtype || w->shape != v.shape || w->dim_params != v.dim_params) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool same_graph(const Graph& a, const Graph& b) {
  return a.name == b.name && a.doc_string == b.doc_string && a.nodes == b.nodes &&
         a.inputs == b.inputs && a.outputs == b.outputs && a.initializers == b.initializers &&
         a.port_types == b.port_types && declared_within(a, b) && declared_within(b, a);
}

}  // namespace common

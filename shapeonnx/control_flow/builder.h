// Internals of the control-flow expansion: the node builder the If/Loop/Scan expander uses.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/eval/eval.h"
#include "shapeonnx/control_flow/body.h"

namespace shapeonnx::detail {

using common::Attribute;
using common::AttrType;
using common::DType;
using common::Error;
using common::Graph;
using common::Node;
using common::Result;
using common::Status;
using common::Tensor;

// Adds nodes for one control-flow node: copies of its bodies and the glue (Gather, Unsqueeze,
// Concat, Where, Identity) around them, with fresh names and compile-time values.
class Builder {
 public:
  Builder(Graph& graph, const Graph& prefix, const Node& node, SameShapePairs* same_shape)
      : graph_(graph), prefix_(prefix), node_(node), same_shape_(same_shape) {}

  /// Moves the nodes built so far into `out`.
  void take_nodes(std::vector<Node>* out) {
    out->assign(std::make_move_iterator(out_.begin()), std::make_move_iterator(out_.end()));
    out_.clear();
    producers_.clear();
  }

 protected:
  Error error(std::string message) const { return graph_.error(node_, std::move(message)); }

  bool taken(const std::string& name) const {
    return used_.count(name) || graph_.find(name) || graph_.is_initializer(name);
  }
  std::string fresh(const std::string& want) {
    std::string name = want;
    for (int i = 1; taken(name); ++i) name = want + "_" + std::to_string(i);
    used_.insert(name);
    return name;
  }

  // Content known at compile time: initializers, values inference propagated, and values the
  // copied nodes compute from those.
  const Tensor* known(const std::string& name) {
    if (name.empty()) return nullptr;
    if (auto it = computed_.find(name); it != computed_.end()) return &it->second;
    if (const Tensor* t = graph_.initializer(name)) return t;
    if (const Tensor* t = prefix_.constant(name)) return t;
    auto p = producers_.find(name);
    if (p == producers_.end()) return nullptr;
    const Node& n = out_[p->second];
    if (!n.domain.empty() || !common::can_evaluate(n.op_type)) return nullptr;
    std::vector<const Tensor*> inputs;
    for (const std::string& in : n.inputs) {
      const Tensor* t = in.empty() ? nullptr : known(in);
      if (!in.empty() && !t) return nullptr;
      inputs.push_back(t);
    }
    auto results = common::evaluate(graph_, n, inputs);
    if (!results.ok()) return nullptr;
    for (size_t k = 0; k < n.outputs.size() && k < results->size(); ++k) {
      computed_[n.outputs[k]] = std::move((*results)[k]);
    }
    auto it = computed_.find(name);
    return it == computed_.end() ? nullptr : &it->second;
  }

  void add(Node n) {
    for (const std::string& o : n.outputs) {
      if (!o.empty()) producers_[o] = out_.size();
    }
    out_.push_back(std::move(n));
  }

  std::string constant(Tensor t, const std::string& hint) {
    std::string name = fresh(node_.name + "/" + hint);
    graph_.initializers[name] = std::move(t);
    return name;
  }

  // Adds one node; its single output is `out` or a fresh name from the hint.
  std::string emit(const std::string& op, std::vector<std::string> inputs,
                   std::vector<Attribute> attrs, const std::string& hint,
                   const std::string& out = "") {
    Node n;
    n.name = fresh(node_.name + "/" + hint);
    n.op_type = op;
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    n.outputs = {out.empty() ? n.name : out};
    if (!out.empty()) used_.insert(out);
    std::string result = n.outputs[0];
    add(std::move(n));
    return result;
  }

  std::string gather(const std::string& x, int64_t index, int64_t axis, const std::string& hint) {
    std::string i = constant(Tensor::from_int64({index}, {}), hint + "_index");
    return emit("Gather", {x, i}, {Attribute::make_int("axis", axis)}, hint);
  }

  // Stacks the values along a new axis (Unsqueeze each, then Concat) into `out` (or a fresh name).
  std::string stack(const std::vector<std::string>& values, int64_t axis, const std::string& hint,
                    const std::string& out = "") {
    std::vector<std::string> parts;
    const bool single = values.size() == 1;
    for (size_t k = 0; k < values.size(); ++k) {
      const std::string h = single ? hint : hint + "_unsqueeze" + std::to_string(k);
      const std::string target = single ? out : "";
      if (graph_.opset() >= 13) {
        std::string axes = constant(Tensor::from_int64({axis}, {1}), h + "_axes");
        parts.push_back(emit("Unsqueeze", {values[k], axes}, {}, h, target));
      } else {
        parts.push_back(
            emit("Unsqueeze", {values[k]}, {Attribute::make_ints("axes", {axis})}, h, target));
      }
    }
    if (single) return parts[0];
    return emit("Concat", parts, {Attribute::make_int("axis", axis)}, hint, out);
  }

  // Copies the body with its formal inputs bound by `renames`; returns its outputs' new names.
  Result<std::vector<std::string>> instantiate(const Body& body, const std::string& tag,
                                               std::map<std::string, std::string> renames) {
    const std::string prefix = node_.name + "/" + tag + "/";
    for (const auto& [name, tensor] : body.initializers()) {
      auto [it, inserted] = shared_constants_.try_emplace(body.attr + "\n" + name);
      if (inserted) it->second = constant(tensor, body.attr + "/" + name);
      renames[name] = it->second;
    }
    for (const Node& bn : body.nodes()) {
      for (const std::string& o : bn.outputs) {
        if (!o.empty()) renames[o] = fresh(prefix + o);
      }
    }
    for (const Node& bn : body.nodes()) {
      Node n = bn;
      n.name = fresh(prefix + bn.name);
      for (std::string& in : n.inputs) {
        if (auto it = renames.find(in); it != renames.end()) in = it->second;
      }
      for (std::string& o : n.outputs) {
        if (!o.empty()) o = renames.at(o);
      }
      for (Attribute& a : n.attrs) {
        if (a.type != AttrType::kGraph || !a.g) continue;
        auto nested = std::make_shared<Graph>(*a.g);
        rename_refs(*nested, renames, {});
        a.g = std::move(nested);
      }
      add(std::move(n));
      if (out_.size() > kMaxNodes)
        return error("expansion exceeds " + std::to_string(kMaxNodes) + " nodes");
    }
    std::vector<std::string> outs;
    for (const std::string& o : body.outputs()) {
      auto it = renames.find(o);
      outs.push_back(it == renames.end() ? o : it->second);
    }
    return outs;
  }

  void bind(const std::string& value, const std::string& output) {
    if (!output.empty()) emit("Identity", {value}, {}, "output", output);
  }

  Graph& graph_;
  const Graph& prefix_;
  const Node& node_;
  SameShapePairs* same_shape_;
  std::deque<Node> out_;
  std::set<std::string> used_;
  std::unordered_map<std::string, size_t> producers_;
  std::map<std::string, Tensor> computed_;
  std::map<std::string, std::string> shared_constants_;
};

}  // namespace shapeonnx::detail

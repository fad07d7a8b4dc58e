// If / Loop / Scan expansion: bodies are copied into the graph, once per iteration or step.
#include "shapeonnx/control_flow.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>

#include "common/eval.h"
#include "common/onnx_io.h"
#include "common/proto_convert.h"

namespace shapeonnx {

using common::AttrType;
using common::Attribute;
using common::DType;
using common::Error;
using common::Graph;
using common::Node;
using common::Result;
using common::Status;
using common::Tensor;

namespace {

constexpr int64_t kMaxIterations = 100000;
constexpr size_t kMaxNodes = 2000000;

bool is_control(const Node& n) {
  return n.domain.empty() && (n.op_type == "If" || n.op_type == "Loop" || n.op_type == "Scan");
}

// A subgraph attribute, parsed: its nodes (Constants as initializers), formal inputs, outputs.
struct Body {
  std::string attr;
  std::vector<Node> nodes;
  std::map<std::string, Tensor> initializers;
  std::vector<std::string> inputs, outputs;
};

Result<Body> parse_body(const Graph& graph, const Node& node, const std::string& attr) {
  const Attribute* a = node.attr(attr);
  if (!a || a->type != AttrType::kGraph) {
    return graph.error(node, "missing graph attribute '" + attr + "'");
  }
  onnx::GraphProto proto;
  if (!proto.ParseFromString(a->s)) return graph.error(node, "unreadable graph '" + attr + "'");
  if (proto.sparse_initializer_size()) {
    return graph.error(node, "sparse initializers in '" + attr + "' are not supported");
  }
  Graph scratch;
  scratch.source = graph.source;
  for (const auto& tp : proto.initializer()) {
    auto t = common::tensor_from_proto(tp);
    if (!t.ok()) return graph.error(node, attr + ": " + t.error().message);
    scratch.initializers[tp.name()] = std::move(t).value();
  }
  if (auto s = common::nodes_from_proto(proto, scratch); !s.ok()) {
    return graph.error(node, attr + "/" + s.error().node + ": " + s.error().message);
  }
  Body body;
  body.attr = attr;
  body.nodes = std::move(scratch.nodes);
  body.initializers = std::move(scratch.initializers);
  for (const auto& vi : proto.input()) {
    if (!body.initializers.count(vi.name())) body.inputs.push_back(vi.name());
  }
  for (const auto& vi : proto.output()) body.outputs.push_back(vi.name());
  return body;
}

// Renames references to enclosing-scope values inside a nested graph (and its own nested graphs).
void rename_refs(onnx::GraphProto& g, const std::map<std::string, std::string>& renames,
                 std::set<std::string> local) {
  for (const auto& vi : g.input()) local.insert(vi.name());
  for (const auto& t : g.initializer()) local.insert(t.name());
  for (const auto& n : g.node()) local.insert(n.output().begin(), n.output().end());
  auto rename = [&](std::string* name) {
    if (local.count(*name)) return;
    if (auto it = renames.find(*name); it != renames.end()) *name = it->second;
  };
  for (auto& n : *g.mutable_node()) {
    for (auto& in : *n.mutable_input()) rename(&in);
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) rename_refs(*a.mutable_g(), renames, local);
      for (auto& sub : *a.mutable_graphs()) rename_refs(sub, renames, local);
    }
  }
  for (auto& vi : *g.mutable_output()) rename(vi.mutable_name());
}

// The nodes before `index`, inferred: shapes and known contents of what the control node reads.
Result<Graph> infer_prefix(const Graph& graph, size_t index, const Options& options) {
  Graph prefix;
  prefix.source = graph.source;
  prefix.ir_version = graph.ir_version;
  prefix.opsets = graph.opsets;
  prefix.nodes.assign(graph.nodes.begin(), graph.nodes.begin() + static_cast<long>(index));
  prefix.inputs = graph.inputs;
  for (const std::string& in : graph.inputs) {
    const common::Value* v = graph.find(in);
    common::Value& pv = prefix.value(in);
    if (v) pv = *v;
  }
  std::set<std::string> needed;
  for (const Node& n : prefix.nodes) needed.insert(n.inputs.begin(), n.inputs.end());
  const Node& control = graph.nodes[index];
  for (const std::string& in : control.inputs) {
    needed.insert(in);
    if (in.empty() || graph.is_initializer(in)) continue;
    if (std::find(prefix.outputs.begin(), prefix.outputs.end(), in) == prefix.outputs.end()) {
      prefix.outputs.push_back(in);
    }
  }
  for (const std::string& name : needed) {
    if (const Tensor* t = graph.initializer(name)) prefix.initializers[name] = *t;
  }
  prefix.rebuild_index();
  RETURN_IF_ERROR(infer(prefix, options));
  return prefix;
}

// Expands one control-flow node into `out`.
class Expander {
 public:
  Expander(Graph& graph, const Graph& prefix, const Node& node, SameShapePairs* same_shape)
      : graph_(graph), prefix_(prefix), node_(node), same_shape_(same_shape) {}

  Status run() {
    if (node_.op_type == "If") return expand_if();
    if (node_.op_type == "Loop") return expand_loop();
    return expand_scan();
  }

  std::deque<Node>& nodes() { return out_; }

 private:
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
                   std::vector<Attribute> attrs, const std::string& hint, std::string out = "") {
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
    for (const auto& [name, tensor] : body.initializers) {
      auto [it, inserted] = shared_constants_.try_emplace(body.attr + "\n" + name);
      if (inserted) it->second = constant(tensor, body.attr + "/" + name);
      renames[name] = it->second;
    }
    for (const Node& bn : body.nodes) {
      for (const std::string& o : bn.outputs) {
        if (!o.empty()) renames[o] = fresh(prefix + o);
      }
    }
    for (const Node& bn : body.nodes) {
      Node n = bn;
      n.name = fresh(prefix + bn.name);
      for (std::string& in : n.inputs) {
        if (auto it = renames.find(in); it != renames.end()) in = it->second;
      }
      for (std::string& o : n.outputs) {
        if (!o.empty()) o = renames.at(o);
      }
      for (Attribute& a : n.attrs) {
        if (a.type != AttrType::kGraph) continue;
        onnx::GraphProto g;
        if (!g.ParseFromString(a.s)) return error("unreadable nested graph in " + n.name);
        rename_refs(g, renames, {});
        a.s = g.SerializeAsString();
      }
      add(std::move(n));
      if (out_.size() > kMaxNodes) return error("expansion exceeds " + std::to_string(kMaxNodes) + " nodes");
    }
    std::vector<std::string> outs;
    for (const std::string& o : body.outputs) {
      auto it = renames.find(o);
      outs.push_back(it == renames.end() ? o : it->second);
    }
    return outs;
  }

  void bind(const std::string& value, const std::string& output) {
    if (!output.empty()) emit("Identity", {value}, {}, "output", output);
  }

  Status expand_if() {
    ASSIGN_OR_RETURN(Body then_body, parse_body(graph_, node_, "then_branch"));
    ASSIGN_OR_RETURN(Body else_body, parse_body(graph_, node_, "else_branch"));
    if (!node_.has_input(0)) return error("missing condition input");
    if (then_body.outputs.size() != node_.outputs.size() ||
        else_body.outputs.size() != node_.outputs.size()) {
      return error("branches must have one output per node output");
    }
    if (const Tensor* cond = known(node_.inputs[0])) {
      if (cond->numel() != 1) return error("condition must hold one element");
      const Body& chosen = cond->int_at(0) ? then_body : else_body;
      ASSIGN_OR_RETURN(auto outs, instantiate(chosen, cond->int_at(0) ? "then" : "else", {}));
      for (size_t k = 0; k < outs.size(); ++k) bind(outs[k], node_.outputs[k]);
      return {};
    }
    if (graph_.opset() < 9) return error("a run-time condition needs Where (opset 9 or later)");
    ASSIGN_OR_RETURN(auto then_outs, instantiate(then_body, "then", {}));
    ASSIGN_OR_RETURN(auto else_outs, instantiate(else_body, "else", {}));
    std::string scalar_shape = constant(Tensor::from_int64({}, {0}), "scalar_shape");
    std::string cond = emit("Reshape", {node_.inputs[0], scalar_shape}, {}, "condition");
    for (size_t k = 0; k < node_.outputs.size(); ++k) {
      if (node_.outputs[k].empty()) continue;
      emit("Where", {cond, then_outs[k], else_outs[k]}, {}, "where", node_.outputs[k]);
      if (same_shape_) {
        same_shape_->push_back({node_.name, node_.outputs[k], then_outs[k], else_outs[k]});
      }
    }
    return {};
  }

  Status expand_loop() {
    ASSIGN_OR_RETURN(Body body, parse_body(graph_, node_, "body"));
    if (node_.inputs.size() < 2) return error("needs the trip count and condition inputs");
    const size_t n_carried = node_.inputs.size() - 2;
    if (body.inputs.size() != n_carried + 2 || body.outputs.size() < n_carried + 1) {
      return error("body inputs/outputs do not match the loop-carried values");
    }
    const size_t n_scan = body.outputs.size() - 1 - n_carried;
    if (node_.outputs.size() > n_carried + n_scan) return error("more outputs than the body has");
    std::optional<int64_t> trip;
    if (node_.has_input(0)) {
      const Tensor* t = known(node_.inputs[0]);
      if (!t || t->numel() != 1) {
        return error("trip count '" + node_.inputs[0] +
                     "' is not known at compile time; only loops with a static number of "
                     "iterations can be unrolled");
      }
      trip = t->int_at(0);
    }
    std::string cond = node_.has_input(1) ? node_.inputs[1] : "";
    if (!trip && cond.empty()) return error("neither a trip count nor a condition: endless loop");
    std::vector<std::string> carried(node_.inputs.begin() + 2, node_.inputs.end());
    std::vector<std::vector<std::string>> scans(n_scan);
    for (int64_t i = 0; !trip || i < *trip; ++i) {
      if (!cond.empty()) {
        const Tensor* c = known(cond);
        if (!c || c->numel() != 1) {
          return error("condition '" + cond + "' of iteration " + std::to_string(i) +
                       " is not known at compile time; only loops with a static number of "
                       "iterations can be unrolled");
        }
        if (!c->int_at(0)) break;
      }
      if (i >= kMaxIterations) return error("more than " + std::to_string(kMaxIterations) + " iterations");
      const std::string tag = "iter" + std::to_string(i);
      std::map<std::string, std::string> bound;
      bound[body.inputs[0]] = constant(Tensor::from_int64({i}, {}), tag + "/iteration");
      bound[body.inputs[1]] =
          cond.empty() ? constant(Tensor::from_int64({1}, {}, DType::kBool), tag + "/true") : cond;
      for (size_t j = 0; j < n_carried; ++j) bound[body.inputs[2 + j]] = carried[j];
      ASSIGN_OR_RETURN(auto outs, instantiate(body, tag, std::move(bound)));
      cond = outs[0];
      for (size_t j = 0; j < n_carried; ++j) carried[j] = outs[1 + j];
      for (size_t k = 0; k < n_scan; ++k) scans[k].push_back(outs[1 + n_carried + k]);
    }
    for (size_t j = 0; j < n_carried && j < node_.outputs.size(); ++j) {
      bind(carried[j], node_.outputs[j]);
    }
    for (size_t k = 0; n_carried + k < node_.outputs.size(); ++k) {
      const std::string& out = node_.outputs[n_carried + k];
      if (out.empty()) continue;
      if (scans[k].empty()) return error("zero iterations leave scan output '" + out + "' without a shape");
      stack(scans[k], 0, "scan" + std::to_string(k), out);
    }
    return {};
  }

  struct Unrolled {
    std::vector<std::string> states;
    std::vector<std::vector<std::string>> per_step;  // per scan output, in step order
  };

  Result<Unrolled> unroll_scan(const Body& body, std::vector<std::string> states,
                               const std::vector<std::string>& scan_inputs,
                               const std::vector<int64_t>& axes,
                               const std::vector<int64_t>& directions, int64_t length,
                               const std::string& tag, size_t n_outputs) {
    Unrolled u;
    u.per_step.resize(n_outputs);
    for (int64_t t = 0; t < length; ++t) {
      const std::string step = tag + "step" + std::to_string(t);
      std::map<std::string, std::string> bound;
      for (size_t j = 0; j < states.size(); ++j) bound[body.inputs[j]] = states[j];
      for (size_t m = 0; m < scan_inputs.size(); ++m) {
        const int64_t index = directions[m] ? length - 1 - t : t;
        bound[body.inputs[states.size() + m]] =
            gather(scan_inputs[m], index, axes[m], step + "/slice" + std::to_string(m));
      }
      ASSIGN_OR_RETURN(auto outs, instantiate(body, step, std::move(bound)));
      for (size_t j = 0; j < states.size(); ++j) states[j] = outs[j];
      for (size_t k = 0; k < n_outputs; ++k) u.per_step[k].push_back(outs[states.size() + k]);
    }
    u.states = std::move(states);
    return u;
  }

  Result<int64_t> dim(const std::string& value, int64_t axis) const {
    const common::Value* v = prefix_.find(value);
    if (!v || !v->is_static()) return error("shape of scan input '" + value + "' is not static");
    const int64_t rank = static_cast<int64_t>(v->shape->size());
    if (axis < -rank || axis >= rank) return error("scan axis out of range for '" + value + "'");
    return (*v->shape)[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
  }

  Status expand_scan() {
    ASSIGN_OR_RETURN(Body body, parse_body(graph_, node_, "body"));
    const bool batched = graph_.opset() < 9;  // opset 8: sequence_lens first, batch dim 0
    const size_t first = batched ? 1 : 0;
    const int64_t n_scan_in = node_.attr_int("num_scan_inputs", 0);
    if (n_scan_in < 1 || node_.inputs.size() < first + static_cast<size_t>(n_scan_in)) {
      return error("num_scan_inputs does not match the inputs");
    }
    const size_t m = static_cast<size_t>(n_scan_in);
    const size_t n_states = node_.inputs.size() - first - m;
    if (body.inputs.size() != n_states + m || body.outputs.size() < n_states) {
      return error("body inputs/outputs do not match the state and scan inputs");
    }
    const size_t n_out = body.outputs.size() - n_states;
    std::vector<std::string> states(node_.inputs.begin() + static_cast<long>(first),
                                    node_.inputs.begin() + static_cast<long>(first + n_states));
    std::vector<std::string> scan_in(node_.inputs.begin() + static_cast<long>(first + n_states),
                                     node_.inputs.end());
    std::vector<int64_t> axes = node_.attr_ints("scan_input_axes", std::vector<int64_t>(m, 0));
    std::vector<int64_t> dirs = node_.attr_ints(batched ? "directions" : "scan_input_directions",
                                                std::vector<int64_t>(m, 0));
    std::vector<int64_t> out_axes =
        node_.attr_ints("scan_output_axes", std::vector<int64_t>(n_out, 0));
    std::vector<int64_t> out_dirs =
        node_.attr_ints("scan_output_directions", std::vector<int64_t>(n_out, 0));
    if (axes.size() != m || dirs.size() != m || out_axes.size() != n_out ||
        out_dirs.size() != n_out) {
      return error("scan axes/directions attributes do not match the inputs and outputs");
    }
    int64_t length = -1;
    for (size_t k = 0; k < m; ++k) {
      ASSIGN_OR_RETURN(int64_t l, dim(scan_in[k], batched ? 1 : axes[k]));
      if (length >= 0 && l != length) return error("scan inputs differ in sequence length");
      length = l;
    }
    if (length <= 0) return error("a zero-length scan leaves its outputs without a shape");
    auto finish = [&](const Unrolled& u, std::vector<std::string>* state_out,
                      std::vector<std::string>* scan_out, const std::string& tag) {
      for (size_t k = 0; k < n_out; ++k) {
        std::vector<std::string> steps = u.per_step[k];
        if (out_dirs[k]) std::reverse(steps.begin(), steps.end());
        scan_out->push_back(stack(steps, batched ? 0 : out_axes[k], tag + "scan" + std::to_string(k)));
      }
      *state_out = u.states;
    };
    std::vector<std::string> final_states, outputs;
    if (!batched) {
      ASSIGN_OR_RETURN(Unrolled u, unroll_scan(body, states, scan_in, axes, dirs, length, "", n_out));
      finish(u, &final_states, &outputs, "");
    } else {
      if (node_.has_input(0)) {
        const Tensor* lens = known(node_.inputs[0]);
        bool uniform = lens != nullptr;
        for (int64_t i = 0; uniform && i < lens->numel(); ++i) uniform = lens->int_at(i) == length;
        if (!uniform) return error("sequence_lens must be static and equal to the sequence length");
      }
      ASSIGN_OR_RETURN(int64_t batch, dim(scan_in[0], 0));
      std::vector<std::vector<std::string>> per_batch_states(n_states), per_batch_out(n_out);
      for (int64_t b = 0; b < batch; ++b) {
        const std::string tag = "batch" + std::to_string(b) + "/";
        std::vector<std::string> sb, xb;
        for (size_t j = 0; j < n_states; ++j) sb.push_back(gather(states[j], b, 0, tag + "state" + std::to_string(j)));
        for (size_t k = 0; k < m; ++k) xb.push_back(gather(scan_in[k], b, 0, tag + "input" + std::to_string(k)));
        ASSIGN_OR_RETURN(Unrolled u, unroll_scan(body, sb, xb, std::vector<int64_t>(m, 0), dirs,
                                                 length, tag, n_out));
        std::vector<std::string> s, o;
        finish(u, &s, &o, tag);
        for (size_t j = 0; j < n_states; ++j) per_batch_states[j].push_back(s[j]);
        for (size_t k = 0; k < n_out; ++k) per_batch_out[k].push_back(o[k]);
      }
      for (size_t j = 0; j < n_states; ++j) final_states.push_back(stack(per_batch_states[j], 0, "state" + std::to_string(j)));
      for (size_t k = 0; k < n_out; ++k) outputs.push_back(stack(per_batch_out[k], 0, "output" + std::to_string(k)));
    }
    for (size_t j = 0; j < n_states && j < node_.outputs.size(); ++j) {
      bind(final_states[j], node_.outputs[j]);
    }
    for (size_t k = 0; n_states + k < node_.outputs.size(); ++k) {
      bind(outputs[k], node_.outputs[n_states + k]);
    }
    return {};
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

}  // namespace

bool has_control_flow(const Graph& graph) {
  return std::any_of(graph.nodes.begin(), graph.nodes.end(), is_control);
}

Status expand_control_flow(Graph& graph, const Options& options, SameShapePairs* same_shape) {
  while (true) {
    auto it = std::find_if(graph.nodes.begin(), graph.nodes.end(), is_control);
    if (it == graph.nodes.end()) break;
    const size_t index = static_cast<size_t>(it - graph.nodes.begin());
    ASSIGN_OR_RETURN(Graph prefix, infer_prefix(graph, index, options));
    const Node control = graph.nodes[index];
    Expander expander(graph, prefix, control, same_shape);
    RETURN_IF_ERROR(expander.run());
    std::deque<Node>& added = expander.nodes();
    graph.nodes.erase(graph.nodes.begin() + static_cast<long>(index));
    graph.nodes.insert(graph.nodes.begin() + static_cast<long>(index),
                       std::make_move_iterator(added.begin()), std::make_move_iterator(added.end()));
    if (graph.nodes.size() > kMaxNodes) {
      return graph.error(control, "expansion exceeds " + std::to_string(kMaxNodes) + " nodes");
    }
    graph.rebuild_index();
  }
  return {};
}

Status infer_with_control_flow(Graph& graph, const Options& options, bool unroll) {
  SameShapePairs same_shape;
  if (has_control_flow(graph)) {
    if (!unroll) {
      const Node& n = *std::find_if(graph.nodes.begin(), graph.nodes.end(), is_control);
      return graph.error(n, "control flow has no static shapes; --unroll expands it at compile time");
    }
    RETURN_IF_ERROR(expand_control_flow(graph, options, &same_shape));
  }
  RETURN_IF_ERROR(infer(graph, options));
  return check_same_shapes(graph, same_shape);
}

Status check_same_shapes(const Graph& graph, const SameShapePairs& same_shape) {
  for (const SameShape& s : same_shape) {
    const common::Value* a = graph.find(s.then_value);
    const common::Value* b = graph.find(s.else_value);
    if (!a || !b || !a->is_static() || !b->is_static() || *a->shape != *b->shape ||
        a->dtype != b->dtype) {
      return Error{graph.source, s.node, "If",
                   "output '" + s.output +
                       "': the branches differ in shape or type, so a run-time condition "
                       "cannot choose between them in a static graph"};
    }
  }
  return {};
}

}  // namespace shapeonnx

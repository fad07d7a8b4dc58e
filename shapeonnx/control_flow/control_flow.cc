// If / Loop / Scan expansion driver: finds control-flow nodes in order and replaces each by the
// copies expand.cc makes, inferring what comes before it first.
#include "shapeonnx/control_flow/control_flow.h"

#include <algorithm>
#include <set>

#include "shapeonnx/control_flow/body.h"

namespace shapeonnx {

using common::Error;
using common::Graph;
using common::Node;
using common::Result;
using common::Status;
using common::Tensor;

namespace {

bool is_control(const Node& n) { return is_expanded(n.domain, n.op_type); }

// The nodes before `index`, inferred: shapes and known contents of what the control node reads.
Result<Graph> infer_prefix(const Graph& graph, size_t index, const Options& options,
                           const detail::Sequences& sequences) {
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
    if (in.empty() || graph.is_initializer(in) || sequences.count(in)) continue;
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

// `want`, or `want_1`, `want_2`, ...: the first name no value or node of the graph has.
std::string unused_name(const Graph& graph, const std::string& want) {
  auto taken = [&](const std::string& name) {
    return graph.find(name) || graph.is_initializer(name) ||
           std::any_of(graph.nodes.begin(), graph.nodes.end(),
                       [&](const Node& n) { return n.name == name; });
  };
  std::string name = want;
  for (int i = 1; taken(name); ++i) name = want + "_" + std::to_string(i);
  return name;
}

const char* kind_name(common::PortKind kind) {
  switch (kind) {
    case common::PortKind::kSequence:
      return "a sequence";
    case common::PortKind::kOptional:
      return "an optional";
    case common::PortKind::kOptionalSequence:
      return "an optional sequence";
    case common::PortKind::kTensor:
      break;
  }
  return "a tensor";
}

// The shapes of the tensors a present sequence or optional input holds: one for an optional
// (--input-shape, else declared), per element for a sequence (given one by one, or its length
// times the element shape).
Result<std::vector<common::Dims>> held_shapes(const Graph& graph, const std::string& name,
                                              const common::PortType& type,
                                              const Options& options) {
  auto given = options.input_shapes.find(name);
  const bool has_given = given != options.input_shapes.end();
  if (type.kind == common::PortKind::kOptional) {
    if (!has_given && !type.shape) {
      return graph.error("optional input '" + name + "' has no declared shape; give one");
    }
    return std::vector<common::Dims>{has_given ? given->second : *type.shape};
  }
  if (auto each = options.sequence_inputs.find(name); each != options.sequence_inputs.end()) {
    return each->second;
  }
  auto length = options.sequence_lengths.find(name);
  if (length == options.sequence_lengths.end() || length->second < 0) {
    return graph.error("input '" + name + "' is " + kind_name(type.kind) +
                       ": its length must be given (--sequence-length " + name + "=N)");
  }
  if (!has_given && !type.shape) {
    return graph.error("sequence input '" + name +
                       "' declares no element shape; give one (--input-shape)");
  }
  return std::vector<common::Dims>(static_cast<size_t>(length->second),
                                   has_given ? given->second : *type.shape);
}

// What sequence and optional graph inputs hold once unpack_ports has run.
void seed_inputs(const Graph& graph, detail::Sequences& sequences) {
  for (const common::PackedPort& p : graph.packed_inputs) {
    switch (p.kind) {
      case common::PortKind::kTensor:
        break;
      case common::PortKind::kSequence:
        sequences.lists[p.name] = p.tensors;
        break;
      case common::PortKind::kOptional:
        sequences.optionals[p.name] =
            p.present ? std::optional<std::string>(p.tensors.at(0)) : std::nullopt;
        break;
      case common::PortKind::kOptionalSequence: {
        const std::string held = unused_name(graph, p.name + "/elements");
        sequences.lists[held] = p.tensors;
        sequences.optionals[p.name] = p.present ? std::optional<std::string>(held) : std::nullopt;
        break;
      }
    }
  }
}

}  // namespace

const std::vector<std::string>& expanded_ops() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> out = {"If", "Loop", "Scan"};
    out.insert(out.end(), detail::sequence_ops().begin(), detail::sequence_ops().end());
    std::sort(out.begin(), out.end());
    return out;
  }();
  return ops;
}

bool is_expanded(std::string_view domain, std::string_view op_type) {
  const std::vector<std::string>& ops = expanded_ops();
  return domain.empty() && std::binary_search(ops.begin(), ops.end(), op_type);
}

bool has_control_flow(const Graph& graph) {
  return std::any_of(graph.nodes.begin(), graph.nodes.end(), is_control);
}

namespace {

// Sequence and optional graph outputs become the tensors they hold (an Identity each, so that
// every graph output is a tensor of its own), recorded in graph.packed_outputs.
Status pack_outputs(Graph& graph, const detail::Sequences& sequences) {
  std::vector<std::string> outputs;
  std::vector<common::PackedPort> packed;
  for (const std::string& out : graph.outputs) {
    common::PackedPort port{out, common::PortKind::kTensor, {}, true};
    std::vector<std::string> held;
    if (auto it = sequences.lists.find(out); it != sequences.lists.end()) {
      port.kind = common::PortKind::kSequence;
      held = it->second;
    } else if (auto opt = sequences.optionals.find(out); opt != sequences.optionals.end()) {
      port.present = opt->second.has_value();
      auto seq = port.present ? sequences.lists.find(*opt->second) : sequences.lists.end();
      port.kind = seq != sequences.lists.end() ? common::PortKind::kOptionalSequence
                                               : common::PortKind::kOptional;
      if (auto declared = graph.port_types.find(out); declared != graph.port_types.end())
        port.kind = declared->second.kind;  // an absent optional keeps its declared kind
      if (seq != sequences.lists.end()) {
        held = seq->second;
      } else if (port.present) {
        if (port.kind == common::PortKind::kOptionalSequence)
          return graph.error("graph output '" + out +
                             "' is declared a sequence but holds a tensor");
        held = {*opt->second};
      }
    } else {
      port.tensors = {out};
      outputs.push_back(out);
      packed.push_back(std::move(port));
      continue;
    }
    for (size_t i = 0; i < held.size(); ++i) {
      Node n;
      n.op_type = "Identity";
      n.inputs = {held[i]};
      n.outputs = {unused_name(graph, out + "_" + std::to_string(i))};
      graph.value(n.outputs[0]);
      n.name = unused_name(graph, n.outputs[0] + "/output");
      port.tensors.push_back(n.outputs[0]);
      outputs.push_back(n.outputs[0]);
      graph.nodes.push_back(std::move(n));
    }
    packed.push_back(std::move(port));
  }
  graph.outputs = std::move(outputs);
  graph.packed_outputs = std::move(packed);
  graph.rebuild_index();
  return {};
}

}  // namespace

Status unpack_ports(Graph& graph, const Options& options) {
  auto declared_input = [&](const std::string& name) -> const common::PortType* {
    auto it = graph.port_types.find(name);
    const bool input =
        std::find(graph.inputs.begin(), graph.inputs.end(), name) != graph.inputs.end();
    return input && it != graph.port_types.end() ? &it->second : nullptr;
  };
  for (const std::string& name : options.absent_inputs) {
    const common::PortType* t = declared_input(name);
    if (!t || (t->kind != common::PortKind::kOptional &&
               t->kind != common::PortKind::kOptionalSequence)) {
      return graph.error("input '" + name + "' is given no value but is not optional");
    }
  }
  for (const auto& [name, length] : options.sequence_lengths) {
    const common::PortType* t = declared_input(name);
    if (!t || t->kind == common::PortKind::kOptional) {
      return graph.error("--sequence-length names '" + name + "', which is not a sequence input");
    }
  }
  std::vector<std::string> inputs;
  std::vector<common::PackedPort> packed;
  for (const std::string& name : graph.inputs) {
    auto declared = graph.port_types.find(name);
    if (declared == graph.port_types.end()) {
      inputs.push_back(name);
      packed.push_back({name, common::PortKind::kTensor, {name}, true});
      continue;
    }
    const common::PortType& type = declared->second;
    common::PackedPort port{name, type.kind, {}, !options.absent_inputs.count(name)};
    if (!port.present && type.kind != common::PortKind::kOptional &&
        type.kind != common::PortKind::kOptionalSequence) {
      return graph.error("input '" + name + "' is given no value but is not optional");
    }
    std::vector<common::Dims> shapes;  // none for an absent optional
    if (port.present) {
      ASSIGN_OR_RETURN(shapes, held_shapes(graph, name, type, options));
    }
    for (size_t i = 0; i < shapes.size(); ++i) {
      for (int64_t d : shapes[i]) {
        if (d < 0) {
          return graph.error("input '" + name + "': element shapes must be static");
        }
      }
      const std::string tensor = unused_name(graph, type.kind == common::PortKind::kOptional
                                                        ? name + "_value"
                                                        : name + "_" + std::to_string(i));
      common::Value& v = graph.value(tensor);
      v.dtype = type.dtype;
      v.shape = shapes[i];
      port.tensors.push_back(tensor);
      inputs.push_back(tensor);
    }
    packed.push_back(std::move(port));
  }
  graph.inputs = std::move(inputs);
  graph.packed_inputs = std::move(packed);
  graph.rebuild_index();
  return {};
}

Status expand_control_flow(Graph& graph, const Options& options, SameShapePairs* same_shape) {
  detail::Sequences sequences;
  seed_inputs(graph, sequences);
  for (const Node& n : graph.nodes) {  // a sequence coming in from outside has no static length
    if (detail::is_sequence_op(n) && n.has_input(0) && n.op_type != "SequenceConstruct" &&
        n.op_type != "SplitToSequence" && n.op_type != "Optional" &&
        std::find(graph.inputs.begin(), graph.inputs.end(), n.inputs[0]) != graph.inputs.end() &&
        graph.port_types.count(n.inputs[0])) {
      return graph.error(n, "sequence '" + n.inputs[0] +
                                "' is not built inside the model (a graph input or a "
                                "loop-carried sequence)");
    }
  }
  // If/Loop/Scan, sequence and optional ops, and Identity or Where of sequences or optionals.
  auto expandable = [&](const Node& n) {
    if (is_control(n)) return true;
    if (!n.domain.empty()) return false;
    if (n.op_type == "Identity") return n.has_input(0) && sequences.count(n.inputs[0]);
    return n.op_type == "Where" && n.inputs.size() == 3 &&
           (sequences.count(n.inputs[1]) || sequences.count(n.inputs[2]));
  };
  while (true) {
    auto it = std::find_if(graph.nodes.begin(), graph.nodes.end(), expandable);
    if (it == graph.nodes.end()) break;
    const size_t index = static_cast<size_t>(it - graph.nodes.begin());
    ASSIGN_OR_RETURN(Graph prefix, infer_prefix(graph, index, options, sequences));
    const Node control = graph.nodes[index];
    std::vector<Node> added;
    if (detail::is_sequence_op(control) || control.op_type == "Identity" ||
        control.op_type == "Where") {
      RETURN_IF_ERROR(
          detail::expand_sequence_node(graph, prefix, control, &sequences, same_shape, &added));
    } else {
      RETURN_IF_ERROR(detail::expand_node(graph, prefix, control, same_shape, &added));
    }
    graph.nodes.erase(graph.nodes.begin() + static_cast<long>(index));
    graph.nodes.insert(graph.nodes.begin() + static_cast<long>(index),
                       std::make_move_iterator(added.begin()),
                       std::make_move_iterator(added.end()));
    if (graph.nodes.size() > detail::kMaxNodes) {
      return graph.error(control,
                         "expansion exceeds " + std::to_string(detail::kMaxNodes) + " nodes");
    }
    graph.rebuild_index();
  }
  // An If choosing between sequences or optionals was checked element by element instead.
  if (same_shape) {
    std::erase_if(*same_shape, [&](const SameShape& pair) {
      return sequences.count(pair.then_value) || sequences.count(pair.else_value);
    });
  }
  for (const Node& n : graph.nodes) {
    for (const std::string& in : n.inputs) {
      if (sequences.count(in)) {
        return graph.error(n, "input '" + in +
                                  "' is a sequence or an optional; only sequence and optional "
                                  "ops can read one");
      }
    }
  }
  if (options.unpack_ports) return pack_outputs(graph, sequences);
  for (const std::string& out : graph.outputs) {
    if (sequences.count(out)) {
      return graph.error("graph output '" + out + "' is a sequence or an optional");
    }
  }
  return {};
}

Status infer_with_control_flow(Graph& graph, const Options& options, bool unroll) {
  SameShapePairs same_shape;
  if (!graph.port_types.empty() && !options.unpack_ports) {
    return graph.error("graph input or output '" + graph.port_types.begin()->first + "' is " +
                       kind_name(graph.port_types.begin()->second.kind) +
                       "; only tensors are supported here (torchonnx converts sequences and "
                       "optionals)");
  }
  if (options.unpack_ports) RETURN_IF_ERROR(unpack_ports(graph, options));
  if (has_control_flow(graph) && !unroll) {
    const Node& n = *std::find_if(graph.nodes.begin(), graph.nodes.end(), is_control);
    return graph.error(
        n, std::string(detail::is_sequence_op(n) ? "sequences have" : "control flow has") +
               " no static shapes; --unroll expands it at compile time");
  }
  if (has_control_flow(graph) || !graph.port_types.empty()) {
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

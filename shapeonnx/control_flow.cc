// If / Loop / Scan expansion driver: finds control-flow nodes in order and replaces each by the
// copies control_flow_expand.cc makes, inferring what comes before it first.
#include "shapeonnx/control_flow.h"

#include <algorithm>
#include <set>

#include "shapeonnx/control_flow_body.h"

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

Status expand_control_flow(Graph& graph, const Options& options, SameShapePairs* same_shape) {
  detail::Sequences sequences;
  for (const Node& n : graph.nodes) {  // a sequence coming in from outside has no static length
    if (detail::is_sequence_op(n) && n.has_input(0) && n.op_type != "SequenceConstruct" &&
        n.op_type != "SplitToSequence" &&
        std::find(graph.inputs.begin(), graph.inputs.end(), n.inputs[0]) != graph.inputs.end()) {
      return graph.error(n, "sequence '" + n.inputs[0] +
                                "' is not built inside the model (a graph input or a "
                                "loop-carried sequence)");
    }
  }
  while (true) {
    auto it = std::find_if(graph.nodes.begin(), graph.nodes.end(), is_control);
    if (it == graph.nodes.end()) break;
    const size_t index = static_cast<size_t>(it - graph.nodes.begin());
    ASSIGN_OR_RETURN(Graph prefix, infer_prefix(graph, index, options, sequences));
    const Node control = graph.nodes[index];
    std::vector<Node> added;
    if (detail::is_sequence_op(control)) {
      RETURN_IF_ERROR(detail::expand_sequence_node(graph, prefix, control, &sequences, &added));
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
  for (const Node& n : graph.nodes) {
    for (const std::string& in : n.inputs) {
      if (sequences.count(in)) {
        return graph.error(n, "input '" + in + "' is a sequence; only sequence ops can read one");
      }
    }
  }
  for (const std::string& out : graph.outputs) {
    if (sequences.count(out)) return graph.error("graph output '" + out + "' is a sequence");
  }
  return {};
}

Status infer_with_control_flow(Graph& graph, const Options& options, bool unroll) {
  SameShapePairs same_shape;
  if (has_control_flow(graph)) {
    if (!unroll) {
      const Node& n = *std::find_if(graph.nodes.begin(), graph.nodes.end(), is_control);
      return graph.error(
          n, std::string(detail::is_sequence_op(n) ? "sequences have" : "control flow has") +
                 " no static shapes; --unroll expands it at compile time");
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

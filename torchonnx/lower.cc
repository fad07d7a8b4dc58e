#include "torchonnx/lower.h"

#include <algorithm>
#include <memory>

#include "shapeonnx/control_flow/control_flow.h"
#include "shapeonnx/rules/rules.h"
#include "torchonnx/context.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

using common::Graph;
using common::Node;

namespace {

const HandlerRegistry& registry() {
  static const auto* table = [] {
    auto* t = new HandlerRegistry();
    register_elementwise(*t);
    register_activation(*t);
    register_conv(*t);
    register_pool(*t);
    register_norm(*t);
    register_linalg(*t);
    register_shape(*t);
    register_index(*t);
    register_reduce(*t);
    register_generator(*t);
    register_resize(*t);
    register_training(*t);
    register_quant(*t);
    register_recurrent(*t);
    register_signal(*t);
    register_text(*t);
    return t;
  }();
  return *table;
}

// Values the outputs depend on, walking nodes in reverse topological order.
std::set<std::string, std::less<>> live_values(const Graph& graph) {
  std::set<std::string, std::less<>> live(graph.outputs.begin(), graph.outputs.end());
  for (auto it = graph.nodes.rbegin(); it != graph.nodes.rend(); ++it) {
    const bool used = std::any_of(it->outputs.begin(), it->outputs.end(),
                                  [&](const std::string& o) { return live.count(o) != 0; });
    if (!used) continue;
    for (const std::string& in : it->inputs) {
      if (!in.empty()) live.insert(in);
    }
  }
  return live;
}

Port make_port(const Graph& graph, const std::string& name, bool batched) {
  Port port{name, "", {}, batched};
  if (const common::Value* v = graph.find(name)) {
    port.dtype = std::string(common::dtype_name(v->dtype));
    if (v->shape) port.dims = *v->shape;
  }
  return port;
}

bool all_outputs_known(const Graph& graph, const Node& node) {
  return std::all_of(node.outputs.begin(), node.outputs.end(), [&](const std::string& o) {
    const common::Value* v = graph.find(o);
    return o.empty() || (v && v->known);
  });
}

common::Status lower_node(LowerState& state, int index) {
  const Node& node = state.graph->nodes[index];
  Context ctx(state, index);
  if (state.custom_ops && !node.domain.empty() && node.domain != "ai.onnx") {
    auto custom = state.custom_ops->find(node.domain + "::" + node.op_type);
    if (custom != state.custom_ops->end()) return lower_custom(ctx, custom->second);
  }
  if (!node.domain.empty() && node.domain != "ai.onnx" &&
      !shapeonnx::is_training_op(node.domain, node.op_type)) {
    return ctx.error("op of domain '" + node.domain + "' has no PyTorch lowering");
  }
  Handler handler = find_handler(node.op_type);
  if (!handler) return ctx.error("op has no PyTorch lowering");
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!node.has_input(i) || state.operands.count(node.inputs[i])) continue;
    if (!state.graph->constant(node.inputs[i])) {
      return ctx.error("input '" + node.inputs[i] + "' is neither computed nor constant");
    }
  }
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.has_input(i) && ctx.shape(i).empty() && !state.graph->find(node.inputs[i])->shape) {
      return ctx.error("input '" + node.inputs[i] + "' has no static shape");
    }
  }
  RETURN_IF_ERROR(handler(ctx));
  if (auto missing = ctx.missing_input()) {
    return ctx.error("input " + std::to_string(*missing) + " is missing");
  }
  return {};
}

// Every input and output must have a PyTorch element type.
common::Status check_port_types(const Graph& graph) {
  for (const auto* names : {&graph.inputs, &graph.outputs}) {
    for (const std::string& name : *names) {
      const common::Value* v = graph.find(name);
      if (!v || !torch_dtype(v->dtype).ok()) {
        return graph.error(
            "'" + name + "' has element type " +
            std::string(common::dtype_name(v ? v->dtype : common::DType::kUndefined)) +
            ", which PyTorch cannot hold");
      }
    }
  }
  return {};
}

common::Status lower_body(LowerState& state) {
  const Graph& graph = *state.graph;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (i > 0) state.release_weights_read_last_by(i - 1);
    const Node& node = graph.nodes[i];
    const bool used = std::any_of(node.outputs.begin(), node.outputs.end(),
                                  [&](const std::string& o) { return state.live.count(o); });
    if (state.done[i] || !used || all_outputs_known(graph, node)) continue;
    const bool after_failure =
        std::any_of(node.inputs.begin(), node.inputs.end(),
                    [&](const std::string& v) { return state.failed.count(v); });
    common::Status status =
        after_failure ? common::Status() : lower_node(state, static_cast<int>(i));
    state.done[i] = true;
    if (status.ok() && !after_failure) continue;
    if (!state.problems) return status;
    if (!status.ok()) state.problems->push_back(status.error());
    state.failed.insert(node.outputs.begin(), node.outputs.end());
  }
  if (!graph.nodes.empty()) state.release_weights_read_last_by(graph.nodes.size() - 1);
  if (state.problems && !state.problems->empty()) return state.problems->front();
  return {};
}

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

// Identifiers in `code`; names after "self." are returned as "self.<name>".
void collect_names(std::string_view code, std::set<std::string, std::less<>>& out) {
  for (size_t i = 0; i < code.size();) {
    if (code[i] == '"') {  // skip string literals (einsum equations)
      for (++i; i < code.size() && code[i] != '"'; ++i) i += code[i] == '\\';
      ++i;
      continue;
    }
    if (!ident_start(code[i]) || (i > 0 && (ident_char(code[i - 1]) || code[i - 1] == '.'))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < code.size() && ident_char(code[j])) ++j;
    std::string name(code.substr(i, j - i));
    if (name == "self" && j + 1 < code.size() && code[j] == '.') {
      size_t k = j + 1;
      while (k < code.size() && ident_char(code[k])) ++k;
      name = "self." + std::string(code.substr(j + 1, k - j - 1));
      j = k;
    }
    out.insert(std::move(name));
    i = j;
  }
}

// Drops statements whose results nothing reads (handlers may ignore some ONNX inputs, e.g.
// the ends of a data-dependent Slice), then layers and buffers no statement mentions.
void remove_dead_code(Module& m) {
  std::set<std::string, std::less<>> used;
  for (const std::string& o : m.outputs) collect_names(o, used);
  std::vector<Statement> kept;
  for (auto it = m.body.rbegin(); it != m.body.rend(); ++it) {
    const bool live = std::any_of(it->targets.begin(), it->targets.end(),
                                  [&](const std::string& t) { return used.count(t) != 0; });
    if (!live) continue;
    // A part of a tuple that nothing reads any more (its readers indexed the part's base
    // instead, see View) is unpacked into "_".
    if (it->targets.size() > 1) {
      for (std::string& t : it->targets) {
        if (!used.count(t)) t = "_";
      }
    }
    collect_names(it->expr.str(), used);
    kept.push_back(std::move(*it));
  }
  m.body.assign(std::make_move_iterator(kept.rbegin()), std::make_move_iterator(kept.rend()));
  std::erase_if(m.methods, [&](const Method& f) { return !used.count("self." + f.name); });
  for (const Method& f : m.methods) {
    for (const std::string& line : f.lines) collect_names(line, used);
  }
  std::erase_if(m.layers, [&](const Layer& l) { return !used.count("self." + l.attr); });
  std::erase_if(m.buffers, [&](const Buffer& b) { return !used.count("self." + b.attr); });
}

}  // namespace

Handler find_handler(std::string_view op_type) {
  const Handler* handler = registry().find(op_type);
  return handler == nullptr ? nullptr : *handler;
}

std::vector<std::string> handler_ops() { return registry().names(); }

std::vector<std::string> supported_ops() {
  // Control flow and sequences are expanded before lowering
  // (shapeonnx/control_flow/control_flow.h).
  std::vector<std::string> out = handler_ops();
  const std::vector<std::string>& expanded = shapeonnx::expanded_ops();
  out.insert(out.end(), expanded.begin(), expanded.end());
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// The interface in ONNX order: graph.packed_inputs/outputs when sequence or optional ports were
// unpacked, else one tensor port per name.
std::vector<common::PackedPort> interface_ports(const std::vector<common::PackedPort>& packed,
                                                const std::vector<std::string>& names) {
  if (!packed.empty()) return packed;
  std::vector<common::PackedPort> out;
  out.reserve(names.size());
  for (const std::string& n : names) out.push_back({n, common::PortKind::kTensor, {n}, true});
  return out;
}

// The header's description of a sequence or optional port.
Port composite_port(const Graph& graph, const common::PackedPort& p) {
  Port port{p.name, "", {}, false, p.kind, p.present, {}};
  for (const std::string& t : p.tensors) port.elements.push_back(make_port(graph, t, false));
  return port;
}

// Lowers with `batch` as the size of the batch dim (-1: none); `state` keeps what happened.
common::Result<Module> lower_with(const Graph& graph, const LowerOptions& options, int64_t batch,
                                  LowerState* state) {
  RETURN_IF_ERROR(check_port_types(graph));
  state->graph = &graph;
  state->module.class_name = options.class_name;
  state->module.source = graph.source;
  state->done.assign(graph.nodes.size(), false);
  state->live = live_values(graph);
  state->batch = batch;
  state->rnn_modules = options.rnn_modules;
  state->batch_axes = batch > 0 ? options.batch_axes : nullptr;
  state->problems = options.problems;
  state->custom_ops = options.custom_ops;
  Module& module = state->module;
  if (options.custom_ops) {  // `import a.b` binds `a`: no local may shadow it
    for (const auto& [op, target] : *options.custom_ops)
      state->locals.reserve(target.substr(0, target.find_first_of(".:")));
  }
  for (const common::PackedPort& port : interface_ports(graph.packed_inputs, graph.inputs)) {
    std::string param = state->locals.make(port.name.empty() ? "x" : port.name);
    module.inputs.push_back(param);
    if (port.kind == common::PortKind::kTensor) {
      const bool batched = is_input_batched(graph, port.tensors[0], state->batch);
      state->operands[port.tensors[0]] = Operand{param, batched};
      module.input_ports.push_back(make_port(graph, port.tensors[0], batched));
      continue;
    }
    // A list (ONNX sequence) is unpacked into its tensors; an optional is its tensor or None.
    module.input_ports.push_back(composite_port(graph, port));
    if (port.kind == common::PortKind::kOptional) {
      if (port.present) state->operands[port.tensors[0]] = Operand{param, false};
      continue;
    }
    std::vector<std::string> targets;
    for (const std::string& t : port.tensors) {
      targets.push_back(state->locals.make(t));
      state->operands[t] = Operand{targets.back(), false};
    }
    if (targets.size() == 1) {
      module.body.push_back(Statement{targets, py::Expr::name(param)[py::lit(0)], port.name});
    } else if (!targets.empty()) {
      module.body.push_back(Statement{targets, py::Expr::name(param), port.name});
    }
  }
  RETURN_IF_ERROR(lower_body(*state));
  auto expr_of = [&](const std::string& name) -> common::Result<Operand> {
    auto it = state->operands.find(name);
    if (it != state->operands.end()) return it->second;
    const common::Tensor* c = graph.constant(name);
    if (!c) return graph.error("output '" + name + "' is never computed");
    std::string attr = state->attrs.make("const", true);
    module.buffers.push_back(Buffer{attr, *c});
    return state->operands.emplace(name, Operand{"self." + attr, false}).first->second;
  };
  for (const common::PackedPort& port : interface_ports(graph.packed_outputs, graph.outputs)) {
    std::vector<std::string> exprs;
    for (const std::string& t : port.tensors) {
      ASSIGN_OR_RETURN(Operand o, expr_of(t));
      exprs.push_back(o.expr);
      if (port.kind != common::PortKind::kTensor) continue;
      // An output whose batch is not in dim 0 would need its own batch note: keep sizes fixed.
      if (o.moved >= 0 && state->batch_lost.empty()) state->batch_lost = "output '" + t + "'";
      module.output_ports.push_back(make_port(graph, t, o.batched));
    }
    if (port.kind == common::PortKind::kTensor) {
      module.outputs.push_back(exprs.at(0));
      continue;
    }
    module.output_ports.push_back(composite_port(graph, port));
    if (!port.present) {
      module.outputs.push_back("None");
    } else if (port.kind == common::PortKind::kOptional) {
      module.outputs.push_back(exprs.at(0));
    } else {
      module.outputs.push_back("[" + join(exprs) + "]");
    }
  }
  remove_dead_code(module);
  return std::move(module);
}

}  // namespace

common::Result<Module> lower(Graph&& graph, const LowerOptions& options) {
  const int64_t batch = batch_size(graph);
  std::string lost;
  if (batch > 0) {  // whether the batch stays free decides the run that keeps the weights
    std::vector<common::Error> problems;
    LowerOptions dry = options;
    if (options.problems) dry.problems = &problems;
    auto state = std::make_unique<LowerState>();
    state->dry_run = true;
    if (lower_with(graph, dry, batch, state.get()).ok()) lost = state->batch_lost;
  }
  auto state = std::make_unique<LowerState>();
  state->releasing = &graph;
  state->release_after = weights_by_last_reader(graph);
  ASSIGN_OR_RETURN(Module module,
                   lower_with(graph, options, lost.empty() ? batch : -1, state.get()));
  if (!lost.empty()) module.fixed_batch = lost;
  return module;
}

common::Result<Module> lower(const Graph& graph, const LowerOptions& options) {
  const int64_t batch = batch_size(graph);
  auto state = std::make_unique<LowerState>();
  ASSIGN_OR_RETURN(Module module, lower_with(graph, options, batch, state.get()));
  if (state->batch_lost.empty()) return module;
  // The batch leaves dim 0 somewhere (e.g. a transpose to sequence-first): code written for a
  // variable batch would be wrong there, so the inputs keep their declared batch size.
  const std::string lost = state->batch_lost;
  state = std::make_unique<LowerState>();
  ASSIGN_OR_RETURN(module, lower_with(graph, options, -1, state.get()));
  module.fixed_batch = lost;
  return module;
}

}  // namespace torchonnx

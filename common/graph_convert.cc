// ModelProto <-> Graph.
#include <onnx/onnx_pb.h>

#include <set>

#include "common/inline.h"
#include "common/onnx_io.h"
#include "common/proto_convert.h"
#include "common/topo.h"

namespace common {

namespace {

// Takes an initializer's bytes without copying them when they are in raw_data.
Result<Tensor> take_tensor(onnx::TensorProto& proto) {
  if (!proto.has_raw_data() || proto.data_location() == onnx::TensorProto::EXTERNAL) {
    return tensor_from_proto(proto);
  }
  std::string raw;
  raw.swap(*proto.mutable_raw_data());
  // Validate dtype and dims on a header-only copy (an empty raw_data for zero elements).
  onnx::TensorProto header;
  header.set_name(proto.name());
  header.set_data_type(proto.data_type());
  header.add_dims(0);
  header.set_raw_data("");
  ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(header));
  t.dims.assign(proto.dims().begin(), proto.dims().end());
  if (t.numel() < 0) return Error{"", "", "", "tensor '" + proto.name() + "': invalid dims"};
  const size_t expected = static_cast<size_t>(t.numel()) * dtype_size(t.dtype);
  if (raw.size() != expected) {
    return Error{"", "", "",
                 "tensor '" + proto.name() + "' holds " + std::to_string(raw.size()) +
                     " bytes, dims need " + std::to_string(expected)};
  }
  t.raw = std::move(raw);
  return t;
}

// The tensor a Constant node holds, from whichever value attribute it uses.
Result<Tensor> constant_value(const Node& node) {
  for (const Attribute& a : node.attrs) {
    if (a.name == "value" && a.t) return *a.t;
    if (a.name == "value_float") return Tensor::from_floats({a.f}, {});
    if (a.name == "value_floats") {
      return Tensor::from_floats(a.floats, {static_cast<int64_t>(a.floats.size())});
    }
    if (a.name == "value_int") return Tensor::from_int64({a.i}, {});
    if (a.name == "value_ints")
      return Tensor::from_int64(a.ints, {static_cast<int64_t>(a.ints.size())});
  }
  return Error{"", node.name, node.op_type, "unsupported Constant value attribute"};
}

Error locate(Error e, std::string_view source, const Node* node = nullptr) {
  e.file = std::string(source);
  if (node && e.node.empty()) e.node = node->name;
  if (node && e.op.empty()) e.op = node->op_type;
  return e;
}

// Appends the nodes of `g` to `graph` (unnamed nodes get deterministic names); Constant nodes
// become initializers instead. Graph attributes become Graphs that inherit `graph`'s model data.
Status nodes_from_proto(const onnx::GraphProto& g, Graph& graph) {
  std::set<std::string> used_names;
  for (const auto& n : g.node()) used_names.insert(n.name());
  int unnamed = 0;
  for (const auto& np : g.node()) {
    Node node;
    node.name = np.name();
    node.op_type = np.op_type();
    node.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    node.doc_string = np.doc_string();
    while (node.name.empty()) {  // deterministic names for unnamed nodes, for error messages
      std::string candidate = np.op_type() + "_" + std::to_string(unnamed++);
      if (used_names.insert(candidate).second) node.name = candidate;
    }
    node.inputs.assign(np.input().begin(), np.input().end());
    node.outputs.assign(np.output().begin(), np.output().end());
    for (const auto& ap : np.attribute()) {
      auto a = attribute_from_proto(ap, &graph);
      if (!a.ok()) return locate(a.error(), graph.source, &node);
      node.attrs.push_back(std::move(a).value());
    }
    if (node.op_type == "Constant" && node.domain.empty() && node.outputs.size() == 1) {
      auto t = constant_value(node);
      if (!t.ok()) return locate(t.error(), graph.source, &node);
      graph.initializers[node.outputs[0]] = std::move(t).value();
      continue;
    }
    graph.nodes.push_back(std::move(node));
  }
  return {};
}

// A declared element type outside ONNX's enum (a damaged or hostile file) is an error here:
// kept, it would be written back out as is; dropped, the value would silently lose its type.
Status check_elem_type(const Graph& graph, const onnx::ValueInfoProto& vi, std::string_view what) {
  const auto& type = vi.type();
  if (!type.has_tensor_type() || is_known_dtype(type.tensor_type().elem_type())) return {};
  return graph.error(std::string(what) + " '" + vi.name() + "' has unknown element type " +
                     std::to_string(type.tensor_type().elem_type()));
}

// The declared inputs, outputs and value infos of `g` (initializers already in `graph`).
Status interface_from_proto(const onnx::GraphProto& g, Graph& graph) {
  for (const auto& vi : g.input()) {
    RETURN_IF_ERROR(check_elem_type(graph, vi, "graph input"));
    value_from_proto(vi, graph.value(vi.name()));
    if (auto port = port_type_from_proto(vi.type())) graph.port_types[vi.name()] = *port;
    if (!graph.is_initializer(vi.name())) graph.inputs.push_back(vi.name());
  }
  for (const auto& vi : g.output()) {
    RETURN_IF_ERROR(check_elem_type(graph, vi, "graph output"));
    value_from_proto(vi, graph.value(vi.name()));
    if (auto port = port_type_from_proto(vi.type())) graph.port_types[vi.name()] = *port;
    graph.outputs.push_back(vi.name());
  }
  for (const auto& vi : g.value_info()) {
    RETURN_IF_ERROR(check_elem_type(graph, vi, "value"));
    value_from_proto(vi, graph.value(vi.name()));
  }
  return {};
}

}  // namespace

Result<Graph> subgraph_from_proto(const onnx::GraphProto& g, const Graph* parent) {
  Graph graph;
  if (parent) {
    graph.source = parent->source;
    graph.ir_version = parent->ir_version;
    graph.opsets = parent->opsets;
  }
  graph.name = g.name();
  graph.doc_string = g.doc_string();
  if (g.sparse_initializer_size()) {
    return graph.error("sparse initializers in graph '" + g.name() + "' are not supported");
  }
  for (const auto& tp : g.initializer()) {
    auto t = tensor_from_proto(tp);
    if (!t.ok()) return locate(t.error(), graph.source);
    graph.initializers[tp.name()] = std::move(t).value();
  }
  RETURN_IF_ERROR(nodes_from_proto(g, graph));
  RETURN_IF_ERROR(interface_from_proto(g, graph));
  graph.rebuild_index();
  return graph;
}

Result<Graph> from_proto(onnx::ModelProto&& model, std::string_view source) {
  Graph graph;
  graph.source = std::string(source);
  auto inlined = inline_functions(model);
  if (!inlined.ok()) return locate(inlined.error(), source);
  graph.ir_version = model.ir_version();
  for (const auto& o : model.opset_import()) {
    graph.opsets.push_back({o.domain() == "ai.onnx" ? "" : o.domain(), o.version()});
  }
  if (graph.opsets.empty()) graph.opsets.push_back({"", 1});
  graph.producer_name = model.producer_name();
  graph.producer_version = model.producer_version();
  graph.model_domain = model.domain();
  graph.model_version = model.model_version();
  graph.doc_string = model.doc_string();
  for (const auto& m : model.metadata_props()) graph.metadata.emplace_back(m.key(), m.value());
  onnx::GraphProto& g = *model.mutable_graph();
  graph.name = g.name();
  if (g.sparse_initializer_size()) return graph.error("sparse initializers are not supported");
  for (auto& tp : *g.mutable_initializer()) {
    auto t = take_tensor(tp);
    if (!t.ok()) return locate(t.error(), source);
    graph.initializers[tp.name()] = std::move(t).value();
  }
  RETURN_IF_ERROR(nodes_from_proto(g, graph));
  RETURN_IF_ERROR(interface_from_proto(g, graph));
  model.Clear();
  RETURN_IF_ERROR(topo_sort(graph));
  return graph;
}

namespace {

// A value's declared type, or a sequence/optional port's; a body's value of no declared type
// keeps just its name (ONNX lets a body's inputs and outputs leave their types out).
void declare(const Graph& graph, const std::string& name, bool subgraph, onnx::ValueInfoProto* vi) {
  if (auto port = graph.port_types.find(name); port != graph.port_types.end()) {
    port_type_to_proto(name, port->second, vi);
    return;
  }
  const Value* v = graph.find(name);
  if (subgraph && (!v || (v->dtype == DType::kUndefined && !v->shape))) {
    vi->set_name(name);
    return;
  }
  Value fallback;
  fallback.name = name;
  value_to_proto(v ? *v : fallback, vi);
}

// Before IR 4 every initializer must also be a graph input: a model's are listed as inputs, a
// body's (whose inputs are fixed by its op) are written as Constant nodes instead.
void initializers_to_proto(const Graph& graph, bool subgraph, onnx::GraphProto* g) {
  const bool as_constants = subgraph && graph.ir_version < 4;
  for (const auto& [name, t] : graph.initializers) {
    if (as_constants) {
      onnx::NodeProto* np = g->add_node();
      np->set_op_type("Constant");
      np->add_output(name);
      attribute_to_proto(Attribute::make_tensor("value", t), np->add_attribute());
      continue;
    }
    if (graph.ir_version < 4) {
      Value v;
      v.name = name;
      v.dtype = t.dtype;
      v.shape = t.dims;
      value_to_proto(v, g->add_input());
    }
    onnx::TensorProto* tp = g->add_initializer();
    tp->set_name(name);
    tensor_to_proto(t, tp);
  }
}

void node_to_proto(const Node& n, onnx::NodeProto* np) {
  if (!n.name.empty()) np->set_name(n.name);
  np->set_op_type(n.op_type);
  if (!n.domain.empty()) np->set_domain(n.domain);
  if (!n.doc_string.empty()) np->set_doc_string(n.doc_string);
  for (const std::string& i : n.inputs) np->add_input(i);
  for (const std::string& o : n.outputs) np->add_output(o);
  for (const Attribute& a : n.attrs) attribute_to_proto(a, np->add_attribute());
}

// The interface, initializers, nodes and value infos of `graph` into `g`.
void graph_to_proto(const Graph& graph, bool subgraph, onnx::GraphProto* g) {
  for (const std::string& in : graph.inputs) declare(graph, in, subgraph, g->add_input());
  initializers_to_proto(graph, subgraph, g);
  std::set<std::string> io(graph.inputs.begin(), graph.inputs.end());
  io.insert(graph.outputs.begin(), graph.outputs.end());
  for (const Node& n : graph.nodes) {
    node_to_proto(n, g->add_node());
    for (const std::string& o : n.outputs) {
      const Value* v = graph.find(o);
      if (o.empty() || io.count(o) || !v || v->dtype == DType::kUndefined) continue;
      value_to_proto(*v, g->add_value_info());
    }
  }
  for (const std::string& out : graph.outputs) declare(graph, out, subgraph, g->add_output());
}

}  // namespace

void subgraph_to_proto(const Graph& graph, onnx::GraphProto* g) {
  if (!graph.name.empty()) g->set_name(graph.name);
  if (!graph.doc_string.empty()) g->set_doc_string(graph.doc_string);
  graph_to_proto(graph, /*subgraph=*/true, g);
}

onnx::ModelProto to_proto(const Graph& graph) {
  onnx::ModelProto model;
  model.set_ir_version(graph.ir_version);
  for (const OpsetId& o : graph.opsets) {
    auto* op = model.add_opset_import();
    op->set_domain(o.domain);
    op->set_version(o.version);
  }
  if (!graph.producer_name.empty()) model.set_producer_name(graph.producer_name);
  if (!graph.producer_version.empty()) model.set_producer_version(graph.producer_version);
  if (!graph.model_domain.empty()) model.set_domain(graph.model_domain);
  if (graph.model_version) model.set_model_version(graph.model_version);
  if (!graph.doc_string.empty()) model.set_doc_string(graph.doc_string);
  for (const auto& [k, v] : graph.metadata) {
    auto* m = model.add_metadata_props();
    m->set_key(k);
    m->set_value(v);
  }
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name(graph.name.empty() ? "graph" : graph.name);
  graph_to_proto(graph, /*subgraph=*/false, g);
  return model;
}

onnx::ModelProto to_proto(Graph&& graph) {
  std::vector<std::string> raws;  // in the map's order, which to_proto keeps
  raws.reserve(graph.initializers.size());
  for (auto& [name, t] : graph.initializers) {
    raws.push_back(std::move(t.raw));
    t.raw.clear();
  }
  onnx::ModelProto model = to_proto(graph);
  auto& inits = *model.mutable_graph()->mutable_initializer();
  for (int i = 0; i < inits.size(); ++i) inits.Mutable(i)->mutable_raw_data()->swap(raws[i]);
  return model;
}

}  // namespace common

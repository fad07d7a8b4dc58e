// Parsing control-flow bodies and renaming their references to enclosing scopes.
#include "shapeonnx/control_flow/body.h"

#include "common/onnx_io.h"
#include "common/proto_convert.h"

namespace shapeonnx::detail {

using common::Attribute;
using common::AttrType;
using common::Graph;
using common::Node;
using common::Result;

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

}  // namespace shapeonnx::detail

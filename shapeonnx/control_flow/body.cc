// Control-flow bodies and renaming their references to enclosing scopes.
#include "shapeonnx/control_flow/body.h"

namespace shapeonnx::detail {

using common::Attribute;
using common::AttrType;
using common::Graph;
using common::Node;
using common::Result;

Result<Body> parse_body(const Graph& graph, const Node& node, const std::string& attr) {
  const Attribute* a = node.attr(attr);
  if (!a || a->type != AttrType::kGraph || !a->g) {
    return graph.error(node, "missing graph attribute '" + attr + "'");
  }
  return Body{attr, a->g};
}

void rename_refs(Graph& g, const std::map<std::string, std::string>& renames,
                 std::set<std::string> local) {
  local.insert(g.inputs.begin(), g.inputs.end());
  for (const auto& [name, t] : g.initializers) local.insert(name);
  for (const Node& n : g.nodes) local.insert(n.outputs.begin(), n.outputs.end());
  auto rename = [&](std::string& name) {
    if (local.count(name)) return;
    if (auto it = renames.find(name); it != renames.end()) name = it->second;
  };
  for (Node& n : g.nodes) {
    for (std::string& in : n.inputs) rename(in);
    for (Attribute& a : n.attrs) {
      if (a.type != AttrType::kGraph || !a.g) continue;
      auto nested = std::make_shared<Graph>(*a.g);
      rename_refs(*nested, renames, local);
      a.g = std::move(nested);
    }
  }
  for (std::string& out : g.outputs) {
    const std::string old = out;
    rename(out);
    if (out == old) continue;
    // The declared type goes with the output's new name.
    if (const common::Value* v = g.find(old)) {
      common::Value& w = g.value(out);
      w.dtype = v->dtype;
      w.shape = v->shape;
      w.dim_params = v->dim_params;
    }
    if (auto port = g.port_types.find(old); port != g.port_types.end()) {
      g.port_types[out] = port->second;
    }
  }
  g.rebuild_index();
}

}  // namespace shapeonnx::detail

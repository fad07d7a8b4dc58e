#include "common/inline.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <utility>

namespace common {

namespace {

using FunctionKey = std::pair<std::string, std::string>;  // (domain, name)

// Attributes of a body node with references (ref_attr_name) resolved from the call site.
void resolve_attributes(const onnx::NodeProto& call, onnx::NodeProto& body_node) {
  google::protobuf::RepeatedPtrField<onnx::AttributeProto> resolved;
  for (const auto& a : body_node.attribute()) {
    if (a.ref_attr_name().empty()) {
      *resolved.Add() = a;
      continue;
    }
    for (const auto& given : call.attribute()) {
      if (given.name() != a.ref_attr_name()) continue;
      onnx::AttributeProto copy = given;
      copy.set_name(a.name());
      *resolved.Add() = std::move(copy);
    }
  }
  body_node.mutable_attribute()->Swap(&resolved);
}

// The body of `f` instantiated for one call node.
std::vector<onnx::NodeProto> expand(const onnx::FunctionProto& f, const onnx::NodeProto& call,
                                    const std::string& prefix) {
  std::map<std::string, std::string> rename;
  for (int i = 0; i < f.input_size(); ++i) {
    rename[f.input(i)] = i < call.input_size() ? call.input(i) : "";
  }
  for (int i = 0; i < f.output_size(); ++i) {
    rename[f.output(i)] = i < call.output_size() ? call.output(i) : prefix + "/" + f.output(i);
  }
  auto map_name = [&](const std::string& name) {
    if (name.empty()) return name;
    auto it = rename.find(name);
    return it != rename.end() ? it->second : prefix + "/" + name;
  };
  std::vector<onnx::NodeProto> out;
  for (const auto& body : f.node()) {
    onnx::NodeProto n = body;
    n.set_name(prefix + "/" + (body.name().empty() ? body.op_type() : body.name()));
    for (auto& in : *n.mutable_input()) in = map_name(in);
    for (auto& o : *n.mutable_output()) o = map_name(o);
    resolve_attributes(call, n);
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace

Status inline_functions(onnx::ModelProto& model) {
  if (model.functions_size() == 0) return {};
  std::map<FunctionKey, const onnx::FunctionProto*> functions;
  for (const auto& f : model.functions()) functions[{f.domain(), f.name()}] = &f;
  for (int depth = 0;; ++depth) {
    bool expanded = false;
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    int call_index = 0;
    for (const auto& n : model.graph().node()) {
      auto it = functions.find({n.domain(), n.op_type()});
      if (it == functions.end()) {
        *nodes.Add() = n;
        continue;
      }
      expanded = true;
      std::string prefix =
          n.name().empty() ? n.op_type() + "_" + std::to_string(call_index) : n.name();
      ++call_index;
      for (auto& body : expand(*it->second, n, prefix)) *nodes.Add() = std::move(body);
    }
    model.mutable_graph()->mutable_node()->Swap(&nodes);
    if (!expanded) break;
    if (depth > 64) return Error{"", "", "", "model-local functions call each other recursively"};
  }
  // The bodies' opset imports become the model's, where it lacks them.
  for (const auto& f : model.functions()) {
    for (const auto& o : f.opset_import()) {
      bool present = false;
      for (const auto& m : model.opset_import()) present = present || m.domain() == o.domain();
      if (!present) *model.add_opset_import() = o;
    }
  }
  model.clear_functions();
  return {};
}

}  // namespace common

#include "shapeonnx/crosscheck.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "common/onnx_io.h"

namespace shapeonnx {

namespace {

bool fully_static(const onnx::TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return false;
  for (const auto& d : type.tensor_type().shape().dim()) {
    if (!d.has_dim_value()) return false;
  }
  return true;
}

void compare(const common::Graph& graph, const onnx::ValueInfoProto& vi, CrossCheck& out) {
  if (!fully_static(vi.type())) return;
  const common::Value* ours = graph.find(vi.name());
  common::Dims theirs;
  for (const auto& d : vi.type().tensor_type().shape().dim()) theirs.push_back(d.dim_value());
  ++out.compared;
  if (ours && ours->shape && *ours->shape == theirs) return;
  ++out.mismatches;
  out.mismatched.push_back(vi.name());
  if (!out.first_mismatch.empty()) return;
  auto text = [](const common::Dims& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
    return s + "]";
  };
  out.first_mismatch = vi.name() + ": onnx " + text(theirs) + " vs ours " +
                       (ours && ours->shape ? text(*ours->shape) : std::string("none"));
}

}  // namespace

CrossCheck cross_check(const common::Graph& graph) {
  onnx::ModelProto model = common::to_proto(graph);
  onnx::GraphProto* g = model.mutable_graph();
  g->clear_value_info();
  for (auto& out : *g->mutable_output()) out.mutable_type()->mutable_tensor_type()->clear_shape();
  CrossCheck result;
  try {
    onnx::ShapeInferenceOptions options{/*check_type=*/false, /*error_mode=*/0,
                                        /*enable_data_propagation=*/true};
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception&) {
    return result;
  }
  for (const auto& vi : model.graph().value_info()) compare(graph, vi, result);
  for (const auto& vi : model.graph().output()) compare(graph, vi, result);
  return result;
}

}  // namespace shapeonnx

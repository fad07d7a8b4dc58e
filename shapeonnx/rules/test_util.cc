#include "shapeonnx/rules/test_util.h"

#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <exception>
#include <string>
#include <utility>

#include "common/onnx_io.h"
#include "shapeonnx/infer.h"

namespace shapeonnx::testing {

namespace {

std::string dims_text(const common::Dims& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// Parses text syntax; a parse error fails the test and yields an empty model.
onnx::ModelProto parse(std::string_view text) {
  onnx::ModelProto model;
  const std::string owned(text);
  onnx::Status status = onnx::OnnxParser::Parse(model, owned.c_str());
  if (!status.IsOK()) ADD_FAILURE() << "ONNX text does not parse: " << status.ErrorMessage();
  return model;
}

// Records a fully static tensor type of a ValueInfo.
void collect(const onnx::ValueInfoProto& vi, std::map<std::string, OnnxShape>& out) {
  if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
  const auto& tt = vi.type().tensor_type();
  OnnxShape s;
  s.dtype = static_cast<common::DType>(tt.elem_type());
  for (const auto& d : tt.shape().dim()) {
    if (!d.has_dim_value()) return;
    s.dims.push_back(d.dim_value());
  }
  out[vi.name()] = std::move(s);
}

}  // namespace

std::string header(int opset) {
  return "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\n";
}

common::Result<common::Graph> infer_text(std::string_view text) {
  ASSIGN_OR_RETURN(common::Graph graph, common::from_proto(parse(text), "test.onnx"));
  RETURN_IF_ERROR(infer(graph));
  return graph;
}

std::map<std::string, OnnxShape> onnx_shapes(std::string_view text) {
  onnx::ModelProto model = parse(text);
  // Declared output shapes would be echoed back; drop them so only inferred shapes count.
  for (auto& out : *model.mutable_graph()->mutable_output()) out.clear_type();
  std::map<std::string, OnnxShape> shapes;
  try {
    onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0,
                                        /*enable_data_propagation=*/true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "ONNX shape inference threw: " << e.what();
    return shapes;
  }
  for (const auto& vi : model.graph().value_info()) collect(vi, shapes);
  for (const auto& vi : model.graph().output()) collect(vi, shapes);
  return shapes;
}

common::Graph expect_shapes(std::string_view text,
                            const std::map<std::string, common::Dims>& expected, OnnxCheck cross) {
  common::Result<common::Graph> graph = infer_text(text);
  if (!graph.ok()) {
    ADD_FAILURE() << "inference failed: " << graph.error().str();
    return {};
  }
  for (const auto& [name, dims] : expected) {
    const common::Value* v = graph->find(name);
    if (v == nullptr || !v->shape) {
      ADD_FAILURE() << "no shape for '" << name << "'";
      continue;
    }
    EXPECT_EQ(dims_text(*v->shape), dims_text(dims)) << "value '" << name << "'";
  }
  if (cross == OnnxCheck::kNone) return std::move(graph).value();
  const std::map<std::string, OnnxShape> onnx = onnx_shapes(text);
  for (const auto& [name, dims] : expected) {
    if (cross == OnnxCheck::kPartial) break;
    EXPECT_TRUE(onnx.count(name)) << "ONNX's inference does not resolve '" << name << "'";
  }
  for (const auto& [name, theirs] : onnx) {
    const common::Value* v = graph->find(name);
    if (v == nullptr || !v->shape) continue;
    EXPECT_EQ(dims_text(*v->shape), dims_text(theirs.dims)) << "ONNX disagrees on '" << name << "'";
    EXPECT_EQ(static_cast<int>(v->dtype), static_cast<int>(theirs.dtype))
        << "ONNX disagrees on the dtype of '" << name << "'";
  }
  return std::move(graph).value();
}

void expect_error(std::string_view text, std::string_view needle) {
  common::Result<common::Graph> graph = infer_text(text);
  if (graph.ok()) {
    ADD_FAILURE() << "inference succeeded; expected an error containing '" << needle << "'";
    return;
  }
  EXPECT_NE(graph.error().str().find(needle), std::string::npos)
      << "error: " << graph.error().str() << "\nexpected to contain: " << needle;
}

}  // namespace shapeonnx::testing

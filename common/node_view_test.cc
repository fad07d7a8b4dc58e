#include "common/node_view.h"

#include <gtest/gtest.h>

#include <string>

namespace common {
namespace {

// conv1 = Conv(x, <omitted>, w) -> y, in "model.onnx"; x and y have types, w is an initializer.
Graph conv_graph() {
  Graph g;
  g.source = "model.onnx";
  Node n;
  n.name = "conv1";
  n.op_type = "Conv";
  n.inputs = {"x", "", "w"};
  n.outputs = {"y", ""};
  n.attrs.push_back(Attribute::make_int("group", 2));
  g.nodes.push_back(n);
  Value& x = g.value("x");
  x.dtype = DType::kFloat;
  x.shape = Dims{1, 3, 8, 8};
  Value& y = g.value("y");
  y.dtype = DType::kDouble;
  y.shape = Dims{1, 4, 6, 6};
  Tensor w;
  w.dtype = DType::kFloat;
  w.dims = {4, 3, 3, 3};
  w.raw.assign(static_cast<size_t>(w.numel()) * sizeof(float), '\0');
  g.initializers["w"] = w;
  g.value("w").dtype = DType::kFloat;
  g.value("w").shape = w.dims;
  return g;
}

TEST(NodeViewTest, ErrorNamesFileNodeAndOp) {
  const Graph g = conv_graph();
  const NodeView view(g, g.nodes[0]);
  EXPECT_EQ(view.error("kernel rank 3 does not match input rank 4").str(),
            "model.onnx: node 'conv1' (Conv): kernel rank 3 does not match input rank 4");
  const Error e = view.error("bad");
  EXPECT_EQ(e.file, "model.onnx");
  EXPECT_EQ(e.node, "conv1");
  EXPECT_EQ(e.op, "Conv");
  EXPECT_EQ(view.file(), "model.onnx");
}

TEST(NodeViewTest, AtPlacesABareMessageAtTheNode) {
  const Graph g = conv_graph();
  const NodeView view(g, g.nodes[0]);
  const Result<int> failed = view.at(Result<int>(Error{"", "", "", "axis 5 is out of range"}));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().str(), "model.onnx: node 'conv1' (Conv): axis 5 is out of range");
  const Result<int> passed = view.at(Result<int>(7));
  ASSERT_TRUE(passed.ok());
  EXPECT_EQ(*passed, 7);
}

TEST(NodeViewTest, ReadsInputsAndOutputsAsTheGraphRecordsThem) {
  const Graph g = conv_graph();
  const NodeView view(g, g.nodes[0]);
  EXPECT_EQ(view.num_inputs(), 3u);
  EXPECT_EQ(view.num_outputs(), 2u);
  EXPECT_TRUE(view.has_input(0));
  EXPECT_FALSE(view.has_input(1));  // omitted
  EXPECT_FALSE(view.has_input(3));  // past the end
  EXPECT_EQ(view.dtype(0), DType::kFloat);
  EXPECT_EQ(view.shape(0), (Dims{1, 3, 8, 8}));
  EXPECT_EQ(view.rank(0), 4);
  EXPECT_EQ(view.dtype(1), DType::kUndefined);
  EXPECT_TRUE(view.shape(1).empty());
  EXPECT_EQ(view.dtype(9), DType::kUndefined);
  EXPECT_EQ(view.out_dtype(), DType::kDouble);
  EXPECT_EQ(view.out_shape(0), (Dims{1, 4, 6, 6}));
  EXPECT_EQ(view.out_dtype(1), DType::kUndefined);  // omitted output
  EXPECT_EQ(view.input_value(1), nullptr);
  EXPECT_EQ(view.output_value(1), nullptr);
  ASSERT_NE(view.input_value(0), nullptr);
  EXPECT_EQ(view.input_value(0)->name, "x");
}

TEST(NodeViewTest, ConstantIsTheKnownContentOfAnInput) {
  Graph g = conv_graph();
  const NodeView view(g, g.nodes[0]);
  EXPECT_EQ(view.constant(0), nullptr);  // a variable
  EXPECT_EQ(view.constant(1), nullptr);  // omitted
  ASSERT_NE(view.constant(2), nullptr);
  EXPECT_EQ(view.constant(2)->dims, (Dims{4, 3, 3, 3}));
  Tensor known;
  known.dtype = DType::kFloat;
  known.dims = {1, 3, 8, 8};
  g.value("x").known = known;  // propagated content counts too
  ASSERT_NE(view.constant(0), nullptr);
  EXPECT_EQ(view.constant(0)->dims, (Dims{1, 3, 8, 8}));
}

TEST(NodeViewTest, AttributesAreReadThroughTheNode) {
  const Graph g = conv_graph();
  const NodeView view(g, g.nodes[0]);
  EXPECT_EQ(view.node().attr_int("group", 1), 2);
  EXPECT_EQ(view.node().attr_int("missing", 1), 1);
  EXPECT_EQ(&view.graph(), &g);
}

}  // namespace
}  // namespace common

// Graph attributes (If/Loop bodies) as Graphs: converted once on load, written back on save.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "common/onnx_io.h"
#include "common/testing.h"

namespace common {
namespace {

// An If whose else branch holds a Loop; the then branch reads `x` of the enclosing graph.
const char* kNested = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (bool c, float[2] x, int64 n) => (float[2] y) {
    y = If(c) <then_branch = then_g () => (float[2] t) {
      one = Constant<value = float[1] {1.0}>()
      t = Add(x, one)
    }, else_branch = else_g () => (float[2] e) {
      s = Loop(n, c, x) <body = loop_g (int64 i, bool cond, float[2] acc) => (bool cond_out,
                                                                                float[2] acc_out) {
        cond_out = Identity(cond)
        acc_out = Neg(acc)
      }>
      e = Identity(s)
    }>
  })";

const Graph& body(const Graph& g, size_t node, const std::string& attr) {
  const Attribute* a = g.nodes.at(node).attr(attr);
  EXPECT_TRUE(a && a->type == AttrType::kGraph && a->g) << attr;
  return *a->g;
}

Result<Graph> reload(const Graph& g) {
  ASSIGN_OR_RETURN(onnx::ModelProto model, parse_model(to_proto(g).SerializeAsString(), "again"));
  return from_proto(std::move(model), "again");
}

TEST(SubgraphTest, BodiesAreGraphsOnLoad) {
  auto g = testing::parse_text(kNested);
  ASSERT_TRUE(g.ok()) << g.error().str();
  ASSERT_EQ(g->nodes.size(), 1u);
  const Graph& then_g = body(*g, 0, "then_branch");
  EXPECT_EQ(then_g.name, "then_g");
  EXPECT_EQ(then_g.outputs, (std::vector<std::string>{"t"}));
  ASSERT_EQ(then_g.nodes.size(), 1u);  // the Constant became an initializer
  EXPECT_TRUE(then_g.is_initializer("one"));
  EXPECT_EQ(then_g.find("t")->dtype, DType::kFloat);
  EXPECT_EQ(then_g.opset(), 13);  // model data of the enclosing model
  const Graph& else_g = body(*g, 0, "else_branch");
  ASSERT_EQ(else_g.nodes.size(), 2u);
  const Graph& loop_g = body(else_g, 0, "body");
  EXPECT_EQ(loop_g.inputs, (std::vector<std::string>{"i", "cond", "acc"}));
  EXPECT_EQ(loop_g.find("i")->dtype, DType::kInt64);
  EXPECT_EQ(loop_g.find("acc_out")->shape, (Dims{2}));
}

TEST(SubgraphTest, NestedBodiesRoundTrip) {
  auto g = testing::parse_text(kNested);
  ASSERT_TRUE(g.ok()) << g.error().str();
  auto again = reload(*g);
  ASSERT_TRUE(again.ok()) << again.error().str();
  EXPECT_TRUE(same_graph(body(*g, 0, "then_branch"), body(*again, 0, "then_branch")));
  EXPECT_TRUE(same_graph(body(*g, 0, "else_branch"), body(*again, 0, "else_branch")));
  EXPECT_EQ(g->nodes, again->nodes);  // attributes compare their graphs by content
  EXPECT_EQ(to_proto(*again).SerializeAsString(), to_proto(*g).SerializeAsString());
  EXPECT_TRUE(check_graph(*again, /*full_check=*/true).ok());
  // The written body declares its interface and names as the file did.
  const onnx::ModelProto model = to_proto(*g);
  const onnx::GraphProto& else_p = model.graph().node(0).attribute(1).g();
  EXPECT_EQ(else_p.name(), "else_g");
  const onnx::GraphProto& loop_p = else_p.node(0).attribute(0).g();
  ASSERT_EQ(loop_p.input_size(), 3);
  EXPECT_EQ(loop_p.input(0).type().tensor_type().elem_type(), onnx::TensorProto::INT64);
  EXPECT_EQ(loop_p.output(1).type().tensor_type().shape().dim(0).dim_value(), 2);
}

TEST(SubgraphTest, AttributesCompareGraphsByContent) {
  auto a = testing::parse_text(kNested);
  auto b = testing::parse_text(kNested);
  ASSERT_TRUE(a.ok() && b.ok());
  const Attribute& x = *a->nodes[0].attr("else_branch");
  const Attribute& y = *b->nodes[0].attr("else_branch");
  EXPECT_NE(x.g, y.g);
  EXPECT_EQ(x, y);
  Graph changed = *y.g;
  changed.nodes[1].op_type = "Neg";
  EXPECT_FALSE(x == Attribute::make_graph("else_branch", std::move(changed)));
  Graph retyped = *y.g;
  retyped.value("e").dtype = DType::kDouble;
  EXPECT_FALSE(x == Attribute::make_graph("else_branch", std::move(retyped)));
}

// Before IR 4 a body cannot hold initializers that are not inputs: its Constants stay nodes.
TEST(SubgraphTest, OldIrBodiesKeepConstantNodes) {
  auto g = testing::parse_text(R"(
    <ir_version: 3, opset_import: ["" : 9]>
    g (bool c, float[1] x) => (float[1] y) {
      y = If(c) <then_branch = then_g () => (float[1] t) {
        one = Constant<value = float[1] {1.0}>()
        t = Add(x, one)
      }, else_branch = else_g () => (float[1] e) {
        e = Identity(x)
      }>
    })");
  ASSERT_TRUE(g.ok()) << g.error().str();
  const onnx::ModelProto model = to_proto(*g);
  const onnx::GraphProto& then_p = model.graph().node(0).attribute(0).g();
  EXPECT_EQ(then_p.initializer_size(), 0);
  ASSERT_EQ(then_p.node_size(), 2);
  EXPECT_EQ(then_p.node(0).op_type(), "Constant");
  EXPECT_EQ(then_p.input_size(), 0);
  auto again = reload(*g);
  ASSERT_TRUE(again.ok()) << again.error().str();
  EXPECT_EQ(g->nodes, again->nodes);
}

// A body whose outputs declare no type is written back without one.
TEST(SubgraphTest, UntypedBodyOutputsStayUntyped) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("g");
  auto* c = g->add_input();
  c->set_name("c");
  c->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  auto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("If");
  n->add_input("c");
  n->add_output("y");
  for (const char* name : {"then_branch", "else_branch"}) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* b = a->mutable_g();
    b->set_name(std::string(name) + "_g");
    onnx::NodeProto* id = b->add_node();
    id->set_op_type("Not");
    id->add_input("c");
    id->add_output("out");
    b->add_output()->set_name("out");
  }
  auto loaded = from_proto(onnx::ModelProto(model), "untyped");
  ASSERT_TRUE(loaded.ok()) << loaded.error().str();
  const onnx::ModelProto written = to_proto(*loaded);
  const onnx::GraphProto& then_p = written.graph().node(0).attribute(0).g();
  ASSERT_EQ(then_p.output_size(), 1);
  EXPECT_EQ(then_p.output(0).name(), "out");
  EXPECT_FALSE(then_p.output(0).has_type());
  EXPECT_EQ(then_p.node(0).name(), "Not_0");  // unnamed nodes are named once, on load
}

TEST(SubgraphTest, BodyErrorsNameTheAttribute) {
  auto g = testing::parse_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (bool c, float[1] x) => (float[1] y) {
      y = If(c) <then_branch = then_g () => (float[1] t) {
        t = Constant<value_string = "no">()
      }, else_branch = else_g () => (float[1] e) {
        e = Identity(x)
      }>
    })");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("then_branch/"), std::string::npos) << g.error().str();
  EXPECT_EQ(g.error().op, "If");
}

}  // namespace
}  // namespace common

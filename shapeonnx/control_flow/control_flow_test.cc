// Expansion of bodies that hold bodies: the nested graph's references to the enclosing body's
// values follow each copy's new names.
#include "shapeonnx/control_flow/control_flow.h"

#include <gtest/gtest.h>

#include "common/testing.h"
#include "shapeonnx/infer.h"

namespace shapeonnx {
namespace {

// Three iterations of acc = If(cond, Neg(acc), acc), the If reading the Loop body's `acc`.
const char* kLoopOfIf = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[2] x) => (float[2] y) {
    n = Constant<value_int = 3>()
    one = Constant<value = int64[1] {1}>()
    t = Cast<to = 9>(one)
    y = Loop(n, t, x) <body = loop_g (int64 i, bool[1] cond, float[2] acc) => (bool[1] cond_out,
                                                                              float[2] acc_out) {
      cond_out = Identity(cond)
      acc_out = If(cond) <then_branch = then_g () => (float[2] p) {
        p = Neg(acc)
      }, else_branch = else_g () => (float[2] q) {
        q = Identity(acc)
      }>
    }>
  })";

TEST(ControlFlowTest, NestedBodiesFollowRenamedValues) {
  auto g = common::testing::parse_text(kLoopOfIf);
  ASSERT_TRUE(g.ok()) << g.error().str();
  const common::Graph before = *g;
  SameShapePairs same_shape;
  auto s = expand_control_flow(*g, {}, &same_shape);
  ASSERT_TRUE(s.ok()) << s.error().str();
  EXPECT_FALSE(has_control_flow(*g));
  int negs = 0;
  for (const common::Node& n : g->nodes) {
    negs += n.op_type == "Neg";
    for (const std::string& in : n.inputs) {
      EXPECT_TRUE(in.empty() || g->find(in)) << n.name << " reads unknown " << in;
    }
  }
  EXPECT_EQ(negs, 3);
  ASSERT_TRUE(infer(*g, {}).ok());
  EXPECT_EQ(*g->find("y")->shape, (common::Dims{2}));
  // The model's own bodies are shared, never changed by the expansion of copies.
  auto original = common::testing::parse_text(kLoopOfIf);
  ASSERT_TRUE(original.ok());
  EXPECT_EQ(before.nodes, original->nodes);
}

}  // namespace
}  // namespace shapeonnx

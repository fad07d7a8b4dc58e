#include "common/graph.h"

#include <gtest/gtest.h>

#include "common/testing.h"

namespace common {
namespace {

TEST(GraphTest, AttributeAccessWithDefaults) {
  Node n;
  n.set_attr(Attribute::make_ints("pads", {1, 2, 1, 2}));
  n.set_attr(Attribute::make_int("group", 4));
  n.set_attr(Attribute::make_float("alpha", 0.5f));
  n.set_attr(Attribute::make_string("auto_pad", "SAME_UPPER"));
  EXPECT_EQ(n.attr_ints("pads"), (std::vector<int64_t>{1, 2, 1, 2}));
  EXPECT_EQ(n.attr_ints("strides", {1, 1}), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(n.attr_int("group", 1), 4);
  EXPECT_EQ(n.attr_int("missing", 7), 7);
  EXPECT_EQ(n.attr_float("alpha", 0.01f), 0.5f);
  EXPECT_EQ(n.attr_string("auto_pad", "NOTSET"), "SAME_UPPER");
  n.set_attr(Attribute::make_int("group", 2));  // replaces, does not duplicate
  EXPECT_EQ(n.attrs.size(), 4u);
  EXPECT_EQ(n.attr_int("group", 1), 2);
  n.remove_attr("group");
  EXPECT_FALSE(n.has_attr("group"));
}

TEST(GraphTest, ConstantNodesBecomeInitializersAndInitializerInputsAreConstants) {
  auto g = testing::parse_text(R"(
    <ir_version: 7, opset_import: ["" : 13]>
    g (float[1,4] x, float[4] bias) => (float[1,4] y)
    <float[4] bias = {1, 2, 3, 4}> {
      two = Constant<value_float = 2.0>()
      s = Mul(x, two)
      y = Add(s, bias)
    })");
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_EQ(g->inputs, (std::vector<std::string>{"x"}));  // bias is an initializer
  ASSERT_EQ(g->nodes.size(), 2u);                         // the Constant node is gone
  ASSERT_NE(g->initializer("two"), nullptr);
  EXPECT_EQ(g->initializer("two")->to_double(), (std::vector<double>{2.0}));
  EXPECT_EQ(g->initializer("bias")->to_double(), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(g->find("s")->consumers, (std::vector<int>{1}));
  EXPECT_EQ(g->opset(), 13);
}

TEST(GraphTest, ModelLocalFunctionsAreInlined) {
  auto g = testing::parse_text(R"(
    <ir_version: 8, opset_import: ["" : 15, "local" : 1]>
    g (float[3] x) => (float[3] y) {
      y = local.Scale<k = 3.0>(x)
    }
    <domain: "local", opset_import: ["" : 15]>
    Scale <k> (a) => (b) {
      c = Constant<value_float: float = @k>()
      b = Mul(a, c)
    })");
  ASSERT_TRUE(g.ok()) << g.error().str();
  ASSERT_EQ(g->nodes.size(), 1u);
  EXPECT_EQ(g->nodes[0].op_type, "Mul");
  EXPECT_EQ(g->nodes[0].outputs[0], "y");
  const Tensor* k = g->initializer(g->nodes[0].inputs[1]);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->to_double(), (std::vector<double>{3.0}));
}

TEST(GraphTest, FreshNamesAreUnused) {
  Graph g;
  g.value("t_1");
  EXPECT_EQ(g.fresh_name("t"), "t_2");
}

}  // namespace
}  // namespace common

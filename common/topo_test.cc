#include "common/topo.h"

#include <gtest/gtest.h>

#include "common/testing.h"

namespace common {
namespace {

std::vector<std::string> names(const Graph& g) {
  std::vector<std::string> out;
  for (const Node& n : g.nodes) out.push_back(n.name);
  return out;
}

Node node(std::string name, std::vector<std::string> in, std::vector<std::string> out) {
  Node n;
  n.name = std::move(name);
  n.op_type = "Relu";
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

TEST(TopoTest, SortsAndKeepsOriginalOrderAmongReadyNodes) {
  Graph g;
  g.inputs = {"x"};
  g.outputs = {"d"};
  // d depends on b and c; c is listed before its producer b's sibling a.
  g.nodes = {node("D", {"b", "c"}, {"d"}), node("C", {"x"}, {"c"}), node("B", {"a"}, {"b"}),
             node("A", {"x"}, {"a"})};
  ASSERT_TRUE(topo_sort(g).ok());
  EXPECT_EQ(names(g), (std::vector<std::string>{"C", "A", "B", "D"}));
  ASSERT_TRUE(topo_sort(g).ok());  // stable: sorting again changes nothing
  EXPECT_EQ(names(g), (std::vector<std::string>{"C", "A", "B", "D"}));
  EXPECT_EQ(g.find("a")->producer, 1);
  EXPECT_EQ(g.find("x")->consumers, (std::vector<int>{0, 1}));
}

TEST(TopoTest, ReportsCyclePath) {
  Graph g;
  g.source = "m.onnx";
  g.inputs = {"x"};
  g.outputs = {"c"};
  g.nodes = {node("A", {"x", "c"}, {"a"}), node("B", {"a"}, {"b"}), node("C", {"b"}, {"c"})};
  Status s = topo_sort(g);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().str(), "m.onnx: graph has a cycle: A -> B -> C -> A");
}

TEST(TopoTest, ReportsValueWithoutProducer) {
  Graph g;
  g.source = "m.onnx";
  g.inputs = {"x"};
  g.outputs = {"a"};
  g.nodes = {node("A", {"x", "ghost"}, {"a"})};
  Status s = topo_sort(g);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().str(), "m.onnx: node 'A' (Relu): input 'ghost' has no producer");
}

TEST(TopoTest, LoadingSortsUnsortedModels) {
  auto g = testing::parse_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] z) {
      z = Relu(y)
      y = Neg(x)
    })");
  ASSERT_TRUE(g.ok()) << g.error().str();
  ASSERT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->nodes[0].op_type, "Neg");
}

}  // namespace
}  // namespace common

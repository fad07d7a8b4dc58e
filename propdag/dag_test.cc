#include "propdag/dag.h"

#include <gtest/gtest.h>

#include "common/testing.h"
#include "propdag/traverse.h"

namespace propdag {
namespace {

// Two inputs, a shared value (a feeds b, c and d) and a residual add:
//
//   x ──► a=Relu(x) ──► b=Neg(a) ──► d=Add(b, c) ──► out1
//              │                      ▲
//              └──► c=Sigmoid(a) ─────┘
//   z ──► e=Mul(z, k) ──────────────────────────────► out2      (k constant)
//   s=Shape(x): constant, not a node
common::Graph shared_graph() {
  auto g = common::testing::parse_text(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,3] x, float[1,3] z) => (float[1,3] d, float[1,3] e, int64[2] s)
    <float[1] k = {2.0}> {
      a = Relu(x)
      b = Neg(a)
      c = Sigmoid(a)
      d = Add(b, c)
      e = Mul(z, k)
      s = Shape(x)
    })");
  EXPECT_TRUE(g.ok()) << g.error().str();
  return std::move(g).value();
}

TEST(DagTest, NodesEdgesInputsOutputs) {
  common::Graph g = shared_graph();
  g.outputs.pop_back();  // s is constant: a graph output must depend on an input
  auto dag = Dag::build(g);
  ASSERT_TRUE(dag.ok()) << dag.error().str();
  // Inputs first, then ops in graph order: x0 z1 a2 b3 c4 d5 e6.
  ASSERT_EQ(dag->size(), 7);
  EXPECT_EQ(dag->inputs(), (std::vector<int>{0, 1}));
  EXPECT_EQ(dag->outputs(), (std::vector<int>{5, 6}));
  EXPECT_EQ(dag->node(2).succs, (std::vector<int>{3, 4}));
  EXPECT_EQ(dag->node(5).preds, (std::vector<int>{3, 4}));
  EXPECT_EQ(dag->node(6).inputs, (std::vector<int>{1, -1}));  // k is a constant input
  EXPECT_EQ(dag->find("s"), -1);
}

TEST(DagTest, ConstantOutputIsAnError) {
  auto dag = Dag::build(shared_graph());
  ASSERT_FALSE(dag.ok());
  EXPECT_NE(dag.error().message.find("'s' does not depend on any graph input"), std::string::npos);
}

TEST(DagTest, Schedules) {
  common::Graph g = shared_graph();
  g.outputs.pop_back();
  Dag dag = std::move(Dag::build(g)).value();
  // BFS by levels: {x, z}, {a, e}, {b, c}, {d}.
  EXPECT_EQ(dag.bfs_order(), (std::vector<int>{0, 1, 2, 6, 3, 4, 5}));
  // DFS: the whole cone of d (x a b c d) before z's branch.
  EXPECT_EQ(dag.dfs_order(), (std::vector<int>{0, 2, 3, 4, 5, 1, 6}));
  // Backward from d: d, then c and b (successors before predecessors), a, x.
  EXPECT_EQ(dag.backward_order(5), (std::vector<int>{5, 4, 3, 2, 0}));
  EXPECT_EQ(dag.backward_order(6), (std::vector<int>{6, 1}));
}

TEST(DagTest, LifetimesFreeAfterLastUse) {
  common::Graph g = shared_graph();
  g.outputs.pop_back();
  Dag dag = std::move(Dag::build(g)).value();
  std::vector<int> order = dag.dfs_order();  // x a b c d z e
  auto release = dag.lifetimes(order);
  // a is last used by c (step 3); x by a (step 1); b and c by d (step 4); z by e (step 6).
  EXPECT_EQ(release[1], (std::vector<int>{0}));
  EXPECT_EQ(release[3], (std::vector<int>{2}));
  EXPECT_EQ(release[4], (std::vector<int>{3, 4}));
  EXPECT_EQ(release[6], (std::vector<int>{1}));
  // Held after each step (release happens right after): x | x a | a b | a b c | b c d | d z |
  // d z e, so at most 3 results are cached at once.
  auto hook = [](int n, const std::vector<const int*>& in) -> common::Result<int> {
    int sum = n;
    for (const int* v : in)
      if (v) sum += *v;
    return sum;
  };
  auto r = run_forward<int>(dag, order, hook);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->peak_cached, 3u);
  EXPECT_FALSE(r->values[2].has_value());
  // d = 5 + b + c, b = 3 + a, c = 4 + a, a = 2 + x, x = 0.
  EXPECT_EQ(*r->values[5], 5 + (3 + 2) + (4 + 2));
  EXPECT_EQ(*r->values[6], 6 + 1);
}

}  // namespace
}  // namespace propdag

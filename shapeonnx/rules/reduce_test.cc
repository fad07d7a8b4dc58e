#include <gtest/gtest.h>

#include "shapeonnx/rules/test_util.h"

namespace shapeonnx::testing {
namespace {

TEST(ReduceRules, ReduceSumAxesInput) {
  // Opset 13 axes input [1], keepdims 0: [2,3,4] -> [2,4]; keepdims 1 -> [2,1,4].
  expect_shapes(header(13) + R"(g (float[2,3,4] x) => (a, b) {
    ax = Constant <value = int64[1] {1}> ()
    a = ReduceSum <keepdims = 0> (x, ax)
    b = ReduceSum(x, ax)
  })",
                {{"a", {2, 4}}, {"b", {2, 1, 4}}});
}

TEST(ReduceRules, ReduceMeanAxesAttribute) {
  // Opset 13 ReduceMean takes attribute axes [-1, 0] -> dims 2 and 0 kept as 1: [1,3,1].
  // Without axes everything is reduced: [1,1,1], or [] with keepdims 0.
  expect_shapes(header(13) + R"(g (float[2,3,4] x) => (a, b, c) {
    a = ReduceMean <axes = [-1, 0]> (x)
    b = ReduceMean(x)
    c = ReduceMean <keepdims = 0> (x)
  })",
                {{"a", {1, 3, 1}}, {"b", {1, 1, 1}}, {"c", {}}});
}

TEST(ReduceRules, NoopWithEmptyAxes) {
  expect_shapes(header(13) + R"(g (float[2,3] x) => (y) {
    y = ReduceSum <noop_with_empty_axes = 1> (x)
  })",
                {{"y", {2, 3}}});
}

TEST(ReduceRules, ReduceMaxAxesInputOpset18) {
  // Opset 18 moved axes to an input for every Reduce*: [0] on [2,3] keepdims 0 -> [3].
  expect_shapes(header(18) + R"(g (float[2,3] x) => (y) {
    ax = Constant <value = int64[1] {0}> ()
    y = ReduceMax <keepdims = 0> (x, ax)
  })",
                {{"y", {3}}}, OnnxCheck::kNone);
}

TEST(ReduceRules, UnknownAxesFail) {
  expect_error(header(13) + R"(g (float[2,3] x, int64[1] ax) => (y) { y = ReduceSum(x, ax) })",
               "reduction axes (input 1, 'ax') is not known statically");
}

TEST(ReduceRules, ArgMaxArgMin) {
  // axis -1 of [2,3,4], keepdims 0 -> [2,3]; ArgMin default axis 0, keepdims 1 -> [1,3,4].
  common::Graph g = expect_shapes(header(13) + R"(g (float[2,3,4] x) => (a, b) {
    a = ArgMax <axis = -1, keepdims = 0> (x)
    b = ArgMin(x)
  })",
                                  {{"a", {2, 3}}, {"b", {1, 3, 4}}});
  EXPECT_EQ(g.find("a")->dtype, common::DType::kInt64);
}

TEST(ReduceRules, TopKInputAndAttribute) {
  // k 2 on the last axis of [2,3,4] -> [2,3,2]; opset 1 attribute k 1 on axis 1 -> [2,1,4].
  expect_shapes(header(11) + R"(g (float[2,3,4] x) => (v, i) {
    k = Constant <value = int64[1] {2}> ()
    v, i = TopK(x, k)
  })",
                {{"v", {2, 3, 2}}, {"i", {2, 3, 2}}});
  expect_shapes(header(1) + R"(g (float[2,3,4] x) => (v, i) { v, i = TopK <k = 1, axis = 1> (x) })",
                {{"v", {2, 1, 4}}, {"i", {2, 1, 4}}});
}

TEST(ReduceRules, TopKTooLargeFails) {
  expect_error(header(11) + R"(g (float[3] x) => (v, i) {
    k = Constant <value = int64[1] {4}> ()
    v, i = TopK(x, k)
  })",
               "TopK k=4 out of range for dim 3");
}

}  // namespace
}  // namespace shapeonnx::testing

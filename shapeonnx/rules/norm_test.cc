#include <gtest/gtest.h>

#include "shapeonnx/rules/test_util.h"

namespace shapeonnx::testing {
namespace {

TEST(NormRules, BatchNormalizationInference) {
  expect_shapes(header(9) + R"(g (float[1,3,4,4] x, float[3] s, float[3] b, float[3] m,
      float[3] v) => (y) {
    y = BatchNormalization <epsilon = 0.001> (x, s, b, m, v)
  })",
                {{"y", {1, 3, 4, 4}}});
}

TEST(NormRules, BatchNormalizationTrainingOutputs) {
  // Opset 14 training mode: running mean and var are [C] = [3].
  expect_shapes(header(14) + R"(g (float[2,3,4] x, float[3] s, float[3] b, float[3] m,
      float[3] v) => (y, rm, rv) {
    y, rm, rv = BatchNormalization <training_mode = 1> (x, s, b, m, v)
  })",
                {{"y", {2, 3, 4}}, {"rm", {3}}, {"rv", {3}}});
}

TEST(NormRules, LayerNormalizationStatistics) {
  // axis -1 of [2,3,4]: Mean / InvStdDev keep [2,3] and 1 for the normalized axis.
  common::Graph g = expect_shapes(header(17) + R"(g (float[2,3,4] x, float[4] s) => (y, m, r) {
    y, m, r = LayerNormalization <axis = -1> (x, s)
  })",
                                  {{"y", {2, 3, 4}}, {"m", {2, 3, 1}}, {"r", {2, 3, 1}}});
  EXPECT_EQ(g.find("m")->dtype, common::DType::kFloat);
}

TEST(NormRules, InstanceNormalizationAndLRN) {
  expect_shapes(header(13) + R"(g (float[1,3,5,5] x, float[3] s, float[3] b) => (i, l) {
    i = InstanceNormalization(x, s, b)
    l = LRN <size = 3> (x)
  })",
                {{"i", {1, 3, 5, 5}}, {"l", {1, 3, 5, 5}}});
}

}  // namespace
}  // namespace shapeonnx::testing

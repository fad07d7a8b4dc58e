#include <gtest/gtest.h>

#include <string>

#include "shapeonnx/rules/test_util.h"

namespace shapeonnx::testing {
namespace {

TEST(ElementwiseRules, AddBroadcastsNumpyStyle) {
  // [2,1,4] and [3,1] align right: [2,1,4] vs [1,3,1] -> [2,3,4].
  expect_shapes(header(13) + R"(g (float[2,1,4] x, float[3,1] y) => (z) { z = Add(x, y) })",
                {{"z", {2, 3, 4}}});
}

TEST(ElementwiseRules, SubMulDivPowKeepFirstDtype) {
  // Each binary op broadcasts [4,1] with [5] -> [4,5]; Pow keeps the base's dtype (float).
  expect_shapes(header(13) + R"(g (float[4,1] x, float[5] y, int64[5] e) => (a, b, c, d) {
    a = Sub(x, y)
    b = Mul(x, y)
    c = Div(x, y)
    d = Pow(x, e)
  })",
                {{"a", {4, 5}}, {"b", {4, 5}}, {"c", {4, 5}}, {"d", {4, 5}}});
}

TEST(ElementwiseRules, ComparisonsGiveBool) {
  // [3] vs [2,1] -> [2,3], dtype bool (cross-checked against ONNX's dtype).
  common::Graph g = expect_shapes(header(13) + R"(g (int64[3] x, int64[2,1] y) => (e, l, gr) {
    e = Equal(x, y)
    l = Less(x, y)
    gr = Greater(x, y)
  })",
                                  {{"e", {2, 3}}, {"l", {2, 3}}, {"gr", {2, 3}}});
  EXPECT_EQ(g.find("e")->dtype, common::DType::kBool);
}

TEST(ElementwiseRules, LogicalOps) {
  // And/Or/Xor broadcast [2,1] with [3] -> [2,3]; Not keeps [3].
  expect_shapes(header(13) + R"(g (bool[2,1] x, bool[3] y) => (a, o, x2, n) {
    a = And(x, y)
    o = Or(x, y)
    x2 = Xor(x, y)
    n = Not(y)
  })",
                {{"a", {2, 3}}, {"o", {2, 3}}, {"x2", {2, 3}}, {"n", {3}}});
}

TEST(ElementwiseRules, WhereBroadcastsAllThree) {
  // cond [3,1], X [1,4], Y [] -> [3,4], dtype of X.
  common::Graph g = expect_shapes(
      header(13) + R"(g (bool[3,1] c, float[1,4] x, float y) => (z) { z = Where(c, x, y) })",
      {{"z", {3, 4}}});
  EXPECT_EQ(g.find("z")->dtype, common::DType::kFloat);
}

TEST(ElementwiseRules, VariadicMaxMinSumMean) {
  // [2,1], [1,3], [3] -> [2,3] for each; a single input keeps its shape.
  expect_shapes(header(13) + R"(g (float[2,1] a, float[1,3] b, float[3] c) => (mx, mn, s, m, one) {
    mx = Max(a, b, c)
    mn = Min(a, b, c)
    s = Sum(a, b, c)
    m = Mean(a, b, c)
    one = Max(c)
  })",
                {{"mx", {2, 3}}, {"mn", {2, 3}}, {"s", {2, 3}}, {"m", {2, 3}}, {"one", {3}}});
}

TEST(ElementwiseRules, CastUsesTo) {
  common::Graph g = expect_shapes(
      header(13) + R"(g (float[2,3] x) => (y) { y = Cast <to = 7> (x) })", {{"y", {2, 3}}});
  EXPECT_EQ(g.find("y")->dtype, common::DType::kInt64);
}

TEST(ElementwiseRules, CastLikeTakesTargetDtype) {
  common::Graph g =
      expect_shapes(header(15) + R"(g (float[2,3] x, int32[1] t) => (y) { y = CastLike(x, t) })",
                    {{"y", {2, 3}}});
  EXPECT_EQ(g.find("y")->dtype, common::DType::kInt32);
}

TEST(ElementwiseRules, ClipWithAndWithoutBounds) {
  // Opset 11+ takes min/max as optional inputs; opset 6 as attributes. Shape stays [1,3,4].
  expect_shapes(header(13) + R"(g (float[1,3,4] x, float lo, float hi) => (a, b, c) {
    a = Clip(x, lo, hi)
    b = Clip(x, , hi)
    c = Clip(x)
  })",
                {{"a", {1, 3, 4}}, {"b", {1, 3, 4}}, {"c", {1, 3, 4}}});
  expect_shapes(header(6) + R"(g (float[1,3,4] x) => (y) { y = Clip <min = 0.0, max = 6.0> (x) })",
                {{"y", {1, 3, 4}}});
}

TEST(ElementwiseRules, PReluKeepsInputShape) {
  // The slope [3,1,1] broadcasts onto [1,3,4,4]; the output keeps [1,3,4,4].
  expect_shapes(header(13) + R"(g (float[1,3,4,4] x, float[3,1,1] s) => (y) { y = PRelu(x, s) })",
                {{"y", {1, 3, 4, 4}}});
}

TEST(ElementwiseRules, IsNaNIsBool) {
  common::Graph g =
      expect_shapes(header(13) + R"(g (float[4] x) => (y) { y = IsNaN(x) })", {{"y", {4}}});
  EXPECT_EQ(g.find("y")->dtype, common::DType::kBool);
}

TEST(ElementwiseRules, ModAndBitShift) {
  expect_shapes(header(13) + R"(g (int64[2,3] x, int64[3] y, uint8[2] u, uint8[1] s) => (m, b) {
    m = Mod(x, y)
    b = BitShift <direction = "LEFT"> (u, s)
  })",
                {{"m", {2, 3}}, {"b", {2}}});
}

// Every unary op of the VNN-COMP set and the common ONNX ops keeps shape and dtype.
class UnaryRule : public ::testing::TestWithParam<std::string> {};

TEST_P(UnaryRule, KeepsShape) {
  const std::string text = header(13) + "g (float[2,3,5] x) => (y) { y = " + GetParam() + "(x) }";
  expect_shapes(text, {{"y", {2, 3, 5}}});
}

INSTANTIATE_TEST_SUITE_P(Ops, UnaryRule,
                         ::testing::Values("Abs", "Acos", "Asin", "Atan", "Ceil", "Cos", "Cosh",
                                           "Elu", "Erf", "Exp", "Floor", "HardSigmoid", "Identity",
                                           "LeakyRelu", "Log", "Neg", "Reciprocal", "Relu", "Round",
                                           "Selu", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus",
                                           "Softsign", "Sqrt", "Tan", "Tanh", "ThresholdedRelu",
                                           "Celu"));

TEST(ElementwiseRules, HardSwishOpset14) {
  expect_shapes(header(14) + R"(g (float[2,3] x) => (y) { y = HardSwish(x) })", {{"y", {2, 3}}});
}

TEST(ElementwiseRules, TriluAndCumSumKeepShape) {
  expect_shapes(header(14) + R"(g (float[3,4] x, int64 k, int32 ax) => (t, c) {
    t = Trilu <upper = 0> (x, k)
    c = CumSum(x, ax)
  })",
                {{"t", {3, 4}}, {"c", {3, 4}}});
}

TEST(ElementwiseRules, IncompatibleBroadcastFails) {
  // [2,3] vs [4]: 3 != 4 and neither is 1.
  expect_error(header(13) + R"(g (float[2,3] x, float[4] y) => (z) { z = Add(x, y) })",
               "do not broadcast");
}

TEST(ElementwiseRules, CastWithoutToFails) {
  expect_error(header(13) + R"(g (float[2] x) => (y) { y = Cast(x) })", "'to'");
}

}  // namespace
}  // namespace shapeonnx::testing

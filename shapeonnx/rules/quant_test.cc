#include <gtest/gtest.h>

#include "shapeonnx/rules/test_util.h"

namespace shapeonnx::testing {
namespace {

TEST(QuantRules, QuantizeDequantizeTypes) {
  // Quantize keeps [2,3] in the zero point's type (int8), or uint8 without one; Dequantize
  // returns the scale's type (float).
  common::Graph g =
      expect_shapes(header(13) + R"(g (float[2,3] x, float s, int8 zp, uint8[4] q) => (a, b, c) {
    a = QuantizeLinear(x, s, zp)
    b = QuantizeLinear(x, s)
    c = DequantizeLinear(q, s)
  })",
                    {{"a", {2, 3}}, {"b", {2, 3}}, {"c", {4}}});
  EXPECT_EQ(g.find("a")->dtype, common::DType::kInt8);
  EXPECT_EQ(g.find("b")->dtype, common::DType::kUInt8);
  EXPECT_EQ(g.find("c")->dtype, common::DType::kFloat);
}

TEST(QuantRules, DynamicQuantizeLinear) {
  expect_shapes(
      header(13) + R"(g (float[3,4] x) => (y, s, z) { y, s, z = DynamicQuantizeLinear(x) })",
      {{"y", {3, 4}}, {"s", {}}, {"z", {}}});
}

TEST(QuantRules, ConvIntegerAndQLinearConv) {
  // Conv shape: floor((5 + 2 - 3) / 2) + 1 = 3; ConvInteger gives int32, QLinearConv y_zp's uint8.
  common::Graph g = expect_shapes(
      header(13) + R"(g (uint8[1,2,5,5] x, uint8[4,2,3,3] w, float xs, uint8 xz, float ws, uint8 wz,
      float ys, uint8 yz) => (a, b) {
    a = ConvInteger <pads = [1, 1, 1, 1], strides = [2, 2]> (x, w)
    b = QLinearConv <pads = [1, 1, 1, 1], strides = [2, 2]> (x, xs, xz, w, ws, wz, ys, yz)
  })",
      {{"a", {1, 4, 3, 3}}, {"b", {1, 4, 3, 3}}});
  EXPECT_EQ(g.find("a")->dtype, common::DType::kInt32);
  EXPECT_EQ(g.find("b")->dtype, common::DType::kUInt8);
}

TEST(QuantRules, QLinearMatMul) {
  // [2,3] x [3,5] -> [2,5].
  expect_shapes(header(13) + R"(g (uint8[2,3] a, float as, uint8 az, uint8[3,5] b, float bs,
      uint8 bz, float ys, uint8 yz) => (y) {
    y = QLinearMatMul(a, as, az, b, bs, bz, ys, yz)
  })",
                {{"y", {2, 5}}});
}

TEST(QuantRules, MatMulIntegerIsInt32) {
  common::Graph g = expect_shapes(
      header(13) + R"(g (uint8[2,3] a, uint8[3,4] b) => (y) { y = MatMulInteger(a, b) })",
      {{"y", {2, 4}}});
  EXPECT_EQ(g.find("y")->dtype, common::DType::kInt32);
}

}  // namespace
}  // namespace shapeonnx::testing

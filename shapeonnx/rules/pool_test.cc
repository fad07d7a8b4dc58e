#include <gtest/gtest.h>

#include "shapeonnx/rules/test_util.h"

namespace shapeonnx::testing {
namespace {

TEST(PoolRules, MaxPoolFloorAndCeil) {
  // k 2, s 2 on 7: floor((7 - 2) / 2) + 1 = 3; ceil_mode: ceil(5 / 2) + 1 = 4 (the last window
  // starts at 6 < 7, inside the input, so it is kept).
  expect_shapes(header(13) + R"(g (float[1,1,7,7] x) => (f, c) {
    f = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (x)
    c = MaxPool <kernel_shape = [2, 2], strides = [2, 2], ceil_mode = 1> (x)
  })",
                {{"f", {1, 1, 3, 3}}, {"c", {1, 1, 4, 4}}});
}

TEST(PoolRules, CeilModeDropsWindowStartingInPadding) {
  // in 5, k 2, s 2, pads 1+1: ceil((5 + 2 - 2) / 2) + 1 = 4, but the 4th window would start at
  // (4 - 1) * 2 = 6 >= 5 + 1, inside the end padding, so it is dropped: 3. onnxruntime 1.30
  // computes [1,1,3] for this model; ONNX 1.12's inference says 4, hence no cross-check.
  expect_shapes(header(13) + R"(g (float[1,1,5] x) => (m, a) {
    m = MaxPool <kernel_shape = [2], strides = [2], pads = [1, 1], ceil_mode = 1> (x)
    a = AveragePool <kernel_shape = [2], strides = [2], pads = [1, 1], ceil_mode = 1> (x)
  })",
                {{"m", {1, 1, 3}}, {"a", {1, 1, 3}}}, OnnxCheck::kNone);
}

TEST(PoolRules, AsymmetricPadsAndDilations) {
  // h: floor((6 + 1 + 0 - 3) / 1) + 1 = 5; w (dilation 2, k 3 -> 5): floor((6 + 0 + 2 - 5)) + 1
  // = 4.
  expect_shapes(header(12) + R"(g (float[1,2,6,6] x) => (y) {
    y = MaxPool <kernel_shape = [3, 3], pads = [1, 0, 0, 2], dilations = [1, 2]> (x)
  })",
                {{"y", {1, 2, 5, 4}}});
}

TEST(PoolRules, MaxPoolIndicesAreInt64) {
  common::Graph g = expect_shapes(header(13) + R"(g (float[1,3,4,4] x) => (y, i) {
    y, i = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (x)
  })",
                                  {{"y", {1, 3, 2, 2}}, {"i", {1, 3, 2, 2}}});
  EXPECT_EQ(g.find("i")->dtype, common::DType::kInt64);
}

TEST(PoolRules, AveragePoolAutoPad) {
  // SAME_UPPER / SAME_LOWER: ceil(5 / 2) = 3; VALID: floor((5 - 3) / 2) + 1 = 2.
  expect_shapes(header(11) + R"(g (float[1,1,5,5] x) => (u, l, v) {
    u = AveragePool <kernel_shape = [3, 3], strides = [2, 2], auto_pad = "SAME_UPPER"> (x)
    l = AveragePool <kernel_shape = [3, 3], strides = [2, 2], auto_pad = "SAME_LOWER"> (x)
    v = AveragePool <kernel_shape = [3, 3], strides = [2, 2], auto_pad = "VALID"> (x)
  })",
                {{"u", {1, 1, 3, 3}}, {"l", {1, 1, 3, 3}}, {"v", {1, 1, 2, 2}}});
}

TEST(PoolRules, AveragePool1DAndLpPool) {
  // 1-D: floor((9 + 1 + 1 - 3) / 2) + 1 = 5.
  expect_shapes(header(11) + R"(g (float[2,3,9] x) => (a, p) {
    a = AveragePool <kernel_shape = [3], strides = [2], pads = [1, 1]> (x)
    p = LpPool <kernel_shape = [3], strides = [2], pads = [1, 1]> (x)
  })",
                {{"a", {2, 3, 5}}, {"p", {2, 3, 5}}});
}

TEST(PoolRules, GlobalPools) {
  expect_shapes(header(13) + R"(g (float[1,3,5,7] x) => (a, m) {
    a = GlobalAveragePool(x)
    m = GlobalMaxPool(x)
  })",
                {{"a", {1, 3, 1, 1}}, {"m", {1, 3, 1, 1}}});
}

TEST(PoolRules, MissingKernelFails) {
  expect_error(header(13) + R"(g (float[1,1,4,4] x) => (y) { y = MaxPool(x) })", "kernel_shape");
}

TEST(PoolRules, WindowLargerThanInputFails) {
  expect_error(header(13) + R"(g (float[1,1,2,2] x) => (y) {
    y = MaxPool <kernel_shape = [3, 3]> (x)
  })",
               "does not fit input dim 2");
}

}  // namespace
}  // namespace shapeonnx::testing

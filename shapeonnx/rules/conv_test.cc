#include <gtest/gtest.h>

#include "shapeonnx/rules/test_util.h"

namespace shapeonnx::testing {
namespace {

TEST(ConvRule, SymmetricPadsAndStride) {
  // out = floor((8 + 1 + 1 - 3) / 2) + 1 = 3 + 1 = 4; channels = W dim 0 = 4.
  expect_shapes(header(13) + R"(g (float[1,3,8,8] x, float[4,3,3,3] w, float[4] b) => (y) {
    y = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]> (x, w, b)
  })",
                {{"y", {1, 4, 4, 4}}});
}

TEST(ConvRule, AsymmetricPadsPerAxisStrides) {
  // pads [h_begin 0, w_begin 1, h_end 2, w_end 3], strides [2, 3]:
  // h = floor((7 + 0 + 2 - 3) / 2) + 1 = 4; w = floor((9 + 1 + 3 - 3) / 3) + 1 = 3 + 1 = 4.
  expect_shapes(header(13) + R"(g (float[1,1,7,9] x, float[2,1,3,3] w) => (y) {
    y = Conv <pads = [0, 1, 2, 3], strides = [2, 3]> (x, w)
  })",
                {{"y", {1, 2, 4, 4}}});
}

TEST(ConvRule, Dilations) {
  // effective kernel (3 - 1) * 2 + 1 = 5: out = 10 - 5 + 1 = 6.
  expect_shapes(header(13) + R"(g (float[1,1,10,10] x, float[1,1,3,3] w) => (y) {
    y = Conv <dilations = [2, 2]> (x, w)
  })",
                {{"y", {1, 1, 6, 6}}});
}

TEST(ConvRule, AutoPad) {
  // SAME_UPPER / SAME_LOWER: ceil(7 / 2) = 4; VALID: floor((7 - 3) / 2) + 1 = 3.
  expect_shapes(header(13) + R"(g (float[1,1,7,7] x, float[1,1,3,3] w) => (u, l, v) {
    u = Conv <auto_pad = "SAME_UPPER", strides = [2, 2]> (x, w)
    l = Conv <auto_pad = "SAME_LOWER", strides = [2, 2]> (x, w)
    v = Conv <auto_pad = "VALID", strides = [2, 2]> (x, w)
  })",
                {{"u", {1, 1, 4, 4}}, {"l", {1, 1, 4, 4}}, {"v", {1, 1, 3, 3}}});
}

TEST(ConvRule, GroupsAnd1D) {
  // group 2: input channels 4 = W dim 1 (2) * 2; out 5 - 3 + 1 = 3, channels 8.
  // 1-D: 10 - 4 + 1 = 7.
  expect_shapes(header(13) + R"(g (float[1,4,5,5] x, float[8,2,3,3] w, float[1,2,10] x1,
      float[3,2,4] w1) => (y, y1) {
    y = Conv <group = 2> (x, w)
    y1 = Conv(x1, w1)
  })",
                {{"y", {1, 8, 3, 3}}, {"y1", {1, 3, 7}}});
}

TEST(ConvRule, ChannelMismatchFails) {
  expect_error(header(13) + R"(g (float[1,3,5,5] x, float[2,4,3,3] w) => (y) { y = Conv(x, w) })",
               "input channels 3 != weight channels 4 * group 1");
}

TEST(ConvTransposeRule, StridesPadsOutputPadding) {
  // out = stride * (in - 1) + output_padding + ((k - 1) * d + 1) - pads:
  // a: 2 * 2 + 0 + 3 - 0 = 7; b: 2 * 2 + 1 + 3 - 2 = 6; c (dilation 2): 2 * 2 + 5 = 9.
  expect_shapes(header(13) + R"(g (float[1,2,3,3] x, float[2,4,3,3] w) => (a, b, c) {
    a = ConvTranspose <strides = [2, 2]> (x, w)
    b = ConvTranspose <strides = [2, 2], pads = [1, 1, 1, 1], output_padding = [1, 1]> (x, w)
    c = ConvTranspose <strides = [2, 2], dilations = [2, 2]> (x, w)
  })",
                {{"a", {1, 4, 7, 7}}, {"b", {1, 4, 6, 6}}, {"c", {1, 4, 9, 9}}});
}

TEST(ConvTransposeRule, AsymmetricPads) {
  // h: 1 * (4 - 1) + 3 - (0 + 1) = 5; w: 3 * (4 - 1) + 3 - (2 + 0) = 10.
  expect_shapes(header(13) + R"(g (float[1,1,4,4] x, float[1,1,3,3] w) => (y) {
    y = ConvTranspose <strides = [1, 3], pads = [0, 2, 1, 0]> (x, w)
  })",
                {{"y", {1, 1, 5, 10}}});
}

TEST(ConvTransposeRule, GroupAndOutputShape) {
  // group 2: channels = W dim 1 (3) * 2 = 6; output_shape [10, 11] wins over the formula.
  expect_shapes(header(13) + R"(g (float[1,2,3,3] x, float[2,3,3,3] w) => (a, b) {
    a = ConvTranspose <group = 2> (x, w)
    b = ConvTranspose <strides = [3, 3], output_shape = [10, 11]> (x, w)
  })",
                {{"a", {1, 6, 5, 5}}, {"b", {1, 3, 10, 11}}});
}

TEST(ConvTransposeRule, AutoPadSame) {
  // SAME_*: out = in * stride = 3 * 2 = 6 (onnxruntime 1.30 measured the same: [1,1,6]).
  expect_shapes(header(13) + R"(g (float[1,1,3,4] x, float[1,1,3,3] w) => (u, l) {
    u = ConvTranspose <auto_pad = "SAME_UPPER", strides = [2, 2]> (x, w)
    l = ConvTranspose <auto_pad = "SAME_LOWER", strides = [2, 2]> (x, w)
  })",
                {{"u", {1, 1, 6, 8}}, {"l", {1, 1, 6, 8}}});
}

TEST(ConvRule, DeformConvIsConvShaped) {
  // offset [1, 2 * 3 * 3, 4, 4] does not change the shape: (6 + 1 + 1 - 3) / 1 + 1 = 6.
  expect_shapes(header(19) + R"(g (float[1,2,6,6] x, float[5,2,3,3] w, float[1,18,6,6] o) => (y) {
    y = DeformConv <pads = [1, 1, 1, 1]> (x, w, o)
  })",
                {{"y", {1, 5, 6, 6}}}, OnnxCheck::kNone);
}

TEST(Col2ImRule, ChannelsAndImage) {
  // block [2, 3] over image [4, 5] with strides [2, 1]: blocks (4 - 2) / 2 + 1 = 2 by
  // (5 - 3) + 1 = 3, so L = 6; 12 rows = C 2 * 6 kernel positions.
  expect_shapes(header(18) + R"(g (float[1,12,6] x) => (y) {
    i = Constant <value = int64[2] {4, 5}> ()
    b = Constant <value = int64[2] {2, 3}> ()
    y = Col2Im <strides = [2, 1]> (x, i, b)
  })",
                {{"y", {1, 2, 4, 5}}}, OnnxCheck::kNone);
}

TEST(Col2ImRule, ColumnsThatDoNotMatchTheBlocks) {
  expect_error(header(18) + R"(g (float[1,12,5] x) => (y) {
    i = Constant <value = int64[2] {4, 5}> ()
    b = Constant <value = int64[2] {2, 3}> ()
    y = Col2Im <strides = [2, 1]> (x, i, b)
  })",
               "does not hold C * 6 x 6 blocks");
}

}  // namespace
}  // namespace shapeonnx::testing

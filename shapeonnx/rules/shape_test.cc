#include <gtest/gtest.h>

#include "shapeonnx/rules/test_util.h"

namespace shapeonnx::testing {
namespace {

TEST(ShapeRules, ReshapeWithZeroAndMinusOne) {
  // [2,3,4] -> [0,-1]: 0 copies dim 0 (2), -1 takes 24 / 2 = 12.
  expect_shapes(header(13) + R"(g (float[2,3,4] x) => (y) {
    s = Constant <value = int64[2] {0, -1}> ()
    y = Reshape(x, s)
  })",
                {{"y", {2, 12}}});
}

TEST(ShapeRules, ReshapeAllowZeroKeepsZero) {
  // allowzero=1: the 0 in [0,3] is a real 0-sized dim; [3,0] has 0 elements, as has [0,3].
  expect_shapes(header(14) + R"(g (float[3,0] x) => (y) {
    s = Constant <value = int64[2] {0, 3}> ()
    y = Reshape <allowzero = 1> (x, s)
  })",
                {{"y", {0, 3}}});
}

TEST(ShapeRules, ReshapeFromShapeChain) {
  // Shape(x) = [1,3,4,4]; Gather index 0 -> 1; Unsqueeze -> [1]; Concat with [-1] -> [1,-1];
  // Reshape -> [1, 48] (3*4*4 = 48). The driver propagates the values through the chain.
  expect_shapes(header(13) + R"(g (float[1,3,4,4] x) => (y) {
    s = Shape(x)
    i = Constant <value = int64 {0}> ()
    b = Gather <axis = 0> (s, i)
    ax = Constant <value = int64[1] {0}> ()
    bu = Unsqueeze(b, ax)
    m = Constant <value = int64[1] {-1}> ()
    t = Concat <axis = 0> (bu, m)
    y = Reshape(x, t)
  })",
                {{"s", {4}}, {"b", {}}, {"bu", {1}}, {"t", {2}}, {"y", {1, 48}}},
                OnnxCheck::kPartial);  // ONNX 1.12's Reshape reads only initializer targets
}

TEST(ShapeRules, ReshapeUnknownTargetFails) {
  expect_error(header(13) + R"(g (float[2,3] x, int64[2] t) => (y) { y = Reshape(x, t) })",
               "Reshape target shape (input 1, 't') is not known statically");
}

TEST(ShapeRules, ReshapeElementCountMismatchFails) {
  // 6 elements cannot become [4,2] (8).
  expect_error(header(13) + R"(g (float[2,3] x) => (y) {
    s = Constant <value = int64[2] {4, 2}> ()
    y = Reshape(x, s)
  })",
               "cannot reshape 6 elements into 8");
}

TEST(ShapeRules, FlattenAxes) {
  // [2,3,4]: axis 0 -> [1,24]; default axis 1 -> [2,12]; axis 2 -> [6,4]; axis -1 -> [6,4].
  expect_shapes(header(13) + R"(g (float[2,3,4] x) => (a, b, c, d) {
    a = Flatten <axis = 0> (x)
    b = Flatten(x)
    c = Flatten <axis = 2> (x)
    d = Flatten <axis = -1> (x)
  })",
                {{"a", {1, 24}}, {"b", {2, 12}}, {"c", {6, 4}}, {"d", {6, 4}}});
}

TEST(ShapeRules, TransposeDefaultAndPerm) {
  // Default reverses: [2,3,4] -> [4,3,2]; perm [0,2,1] -> [2,4,3].
  expect_shapes(header(13) + R"(g (float[2,3,4] x) => (a, b) {
    a = Transpose(x)
    b = Transpose <perm = [0, 2, 1]> (x)
  })",
                {{"a", {4, 3, 2}}, {"b", {2, 4, 3}}});
}

TEST(ShapeRules, ConcatNegativeAxis) {
  // axis -1 of rank 3 is 2: 4 + 5 + 1 = 10.
  expect_shapes(header(13) + R"(g (float[2,3,4] a, float[2,3,5] b, float[2,3,1] c) => (y) {
    y = Concat <axis = -1> (a, b, c)
  })",
                {{"y", {2, 3, 10}}});
}

TEST(ShapeRules, ConcatMismatchFails) {
  expect_error(header(13) + R"(g (float[2,3] a, float[3,3] b) => (y) {
    y = Concat <axis = 1> (a, b)
  })",
               "Concat inputs differ at axis 0");
}

TEST(ShapeRules, SqueezeForms) {
  // Opset 11 attribute axes [0,-1] on [1,3,1] -> [3]; no axes drops every 1 -> [3].
  expect_shapes(header(11) + R"(g (float[1,3,1] x) => (a, b) {
    a = Squeeze <axes = [0, -1]> (x)
    b = Squeeze(x)
  })",
                {{"a", {3}}, {"b", {3}}}, OnnxCheck::kPartial);  // ONNX 1.12: b unresolved
  // Opset 13 axes input [2] -> [1,3].
  expect_shapes(header(13) + R"(g (float[1,3,1] x) => (a) {
    ax = Constant <value = int64[1] {2}> ()
    a = Squeeze(x, ax)
  })",
                {{"a", {1, 3}}});
}

TEST(ShapeRules, SqueezeNonOneFails) {
  expect_error(header(11) + R"(g (float[2,3] x) => (y) { y = Squeeze <axes = [1]> (x) })",
               "cannot squeeze axis 1 of size 3");
}

TEST(ShapeRules, UnsqueezeForms) {
  // Opset 11 attribute [0, 3] on [3,4]: output rank 4, ones at 0 and 3 -> [1,3,4,1].
  expect_shapes(header(11) + R"(g (float[3,4] x) => (a) { a = Unsqueeze <axes = [0, 3]> (x) })",
                {{"a", {1, 3, 4, 1}}});
  // Opset 13 input [-1]: output rank 3, -1 -> 2 -> [3,4,1].
  expect_shapes(header(13) + R"(g (float[3,4] x) => (a) {
    ax = Constant <value = int64[1] {-1}> ()
    a = Unsqueeze(x, ax)
  })",
                {{"a", {3, 4, 1}}});
}

TEST(ShapeRules, UnsqueezeUnknownAxesFails) {
  expect_error(header(13) + R"(g (float[3] x, int64[1] ax) => (y) { y = Unsqueeze(x, ax) })",
               "Unsqueeze axes (input 1, 'ax') is not known statically");
}

TEST(ShapeRules, ExpandBroadcastsBothWays) {
  // [3,1] with shape [2,1,4]: [1,3,1] vs [2,1,4] -> [2,3,4].
  expect_shapes(header(13) + R"(g (float[3,1] x) => (y) {
    s = Constant <value = int64[3] {2, 1, 4}> ()
    y = Expand(x, s)
  })",
                {{"y", {2, 3, 4}}});
}

TEST(ShapeRules, Tile) {
  // [2,3] * [2,1] -> [4,3].
  expect_shapes(header(13) + R"(g (float[2,3] x) => (y) {
    r = Constant <value = int64[2] {2, 1}> ()
    y = Tile(x, r)
  })",
                {{"y", {4, 3}}});
}

TEST(ShapeRules, TileOverflowFails) {
  // 2 * 2^62 = 2^63 does not fit int64.
  expect_error(header(13) + R"(g (float[2,3] x) => (y) {
    r = Constant <value = int64[2] {4611686018427387904, 1}> ()
    y = Tile(x, r)
  })",
               "dimension 2 * 4611686018427387904 overflows int64");
}

TEST(ShapeRules, DepthToSpaceAndSpaceToDepth) {
  // [1,8,2,3], b=2: [1, 8/4, 4, 6]; SpaceToDepth back: [1, 2*4, 2, 3].
  expect_shapes(header(13) + R"(g (float[1,8,2,3] x) => (d, s) {
    d = DepthToSpace <blocksize = 2> (x)
    s = SpaceToDepth <blocksize = 2> (d)
  })",
                {{"d", {1, 2, 4, 6}}, {"s", {1, 8, 2, 3}}});
}

TEST(ShapeRules, SplitBySizesInputAndAttribute) {
  // dim 5 split into [2,3] along axis 1 (opset 13 input) and axis -1 (opset 11 attribute).
  expect_shapes(header(13) + R"(g (float[2,5] x) => (a, b) {
    s = Constant <value = int64[2] {2, 3}> ()
    a, b = Split <axis = 1> (x, s)
  })",
                {{"a", {2, 2}}, {"b", {2, 3}}});
  expect_shapes(header(11) + R"(g (float[2,5] x) => (a, b) {
    a, b = Split <axis = -1, split = [4, 1]> (x)
  })",
                {{"a", {2, 4}}, {"b", {2, 1}}});
}

TEST(ShapeRules, SplitEqually) {
  // 6 into 3 outputs -> 2 each.
  expect_shapes(header(13) + R"(g (float[6,2] x) => (a, b, c) { a, b, c = Split(x) })",
                {{"a", {2, 2}}, {"b", {2, 2}}, {"c", {2, 2}}});
}

TEST(ShapeRules, SplitNumOutputsOpset18) {
  // 7 into num_outputs 3: chunks of ceil(7/3) = 3, the last gets 7 - 6 = 1.
  expect_shapes(header(18) + R"(g (float[7] x) => (a, b, c) {
    a, b, c = Split <num_outputs = 3> (x)
  })",
                {{"a", {3}}, {"b", {3}}, {"c", {1}}}, OnnxCheck::kNone);
}

TEST(ShapeRules, SplitUnevenWithoutSizesFails) {
  expect_error(header(13) + R"(g (float[7] x) => (a, b) { a, b = Split(x) })",
               "dim 7 does not split into 2 equal parts");
}

TEST(ShapeRules, DropoutMaskIsBool) {
  common::Graph g =
      expect_shapes(header(13) + R"(g (float[2,5] x) => (y, mask) { y, mask = Dropout(x) })",
                    {{"y", {2, 5}}, {"mask", {2, 5}}});
  EXPECT_EQ(g.find("mask")->dtype, common::DType::kBool);
}

TEST(ShapeRules, DropoutOldOpsetWithRatioAttribute) {
  expect_shapes(header(7) + R"(g (float[2,5] x) => (y) { y = Dropout <ratio = 0.5> (x) })",
                {{"y", {2, 5}}});
}

}  // namespace
}  // namespace shapeonnx::testing

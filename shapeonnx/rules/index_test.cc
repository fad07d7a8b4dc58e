#include <gtest/gtest.h>

#include "shapeonnx/rules/test_util.h"

namespace shapeonnx::testing {
namespace {

TEST(IndexRules, SliceStepsAndClamping) {
  // x [10,8]. Axis 0: start 1, end INT64_MAX -> 10, step 3: ceil((10-1)/3) = 3.
  // Axis 1: start -1 -> 7, end INT64_MIN+1 -> clamped to -1, step -2: ceil((7+1)/2) = 4.
  expect_shapes(header(13) + R"(g (float[10,8] x) => (y) {
    st = Constant <value = int64[2] {1, -1}> ()
    en = Constant <value = int64[2] {9223372036854775807, -9223372036854775807}> ()
    ax = Constant <value = int64[2] {0, 1}> ()
    sp = Constant <value = int64[2] {3, -2}> ()
    y = Slice(x, st, en, ax, sp)
  })",
                {{"y", {3, 4}}});
}

TEST(IndexRules, SliceNegativeAxesAndDefaults) {
  // axes [-1] of [4,6]: start 2, end -1 -> 5: 5 - 2 = 3 -> [4,3]; without axes the first dims.
  expect_shapes(header(13) + R"(g (float[4,6] x) => (y, z) {
    st = Constant <value = int64[1] {2}> ()
    en = Constant <value = int64[1] {-1}> ()
    ax = Constant <value = int64[1] {-1}> ()
    y = Slice(x, st, en, ax)
    z = Slice(x, st, en)
  })",
                {{"y", {4, 3}}, {"z", {1, 6}}});
}

TEST(IndexRules, SliceOpset9Attributes) {
  // starts [1], ends [-1], axes [1] on [5,6]: end -1 -> 5; 5 - 1 = 4 -> [5,4]. ONNX 1.12's
  // Slice-1 inference gives up on negative ends; with ends [5] it resolves the same [5,4].
  expect_shapes(header(9) + R"(g (float[5,6] x) => (y) {
    y = Slice <starts = [1], ends = [-1], axes = [1]> (x)
  })",
                {{"y", {5, 4}}}, OnnxCheck::kPartial);
  expect_shapes(header(9) + R"(g (float[5,6] x) => (y) {
    y = Slice <starts = [1], ends = [5], axes = [1]> (x)
  })",
                {{"y", {5, 4}}});
}

TEST(IndexRules, SliceEmptyResult) {
  // start 5 > end 2 with step 1 selects nothing: [0, 3].
  expect_shapes(header(13) + R"(g (float[6,3] x) => (y) {
    st = Constant <value = int64[1] {5}> ()
    en = Constant <value = int64[1] {2}> ()
    y = Slice(x, st, en)
  })",
                {{"y", {0, 3}}});
}

TEST(IndexRules, SliceUnknownStartsFails) {
  expect_error(header(13) + R"(g (float[6] x, int64[1] s) => (y) {
    e = Constant <value = int64[1] {4}> ()
    y = Slice(x, s, e)
  })",
               "Slice starts (input 1, 's') is not known statically");
}

TEST(IndexRules, Gather) {
  // data [3,4,5], indices [2,6], axis 1 -> [3] + [2,6] + [5]; a scalar index drops the axis.
  expect_shapes(header(13) + R"(g (float[3,4,5] x, int64[2,6] i, int64 k) => (y, z) {
    y = Gather <axis = 1> (x, i)
    z = Gather <axis = -1> (x, k)
  })",
                {{"y", {3, 2, 6, 5}}, {"z", {3, 4}}});
}

TEST(IndexRules, GatherElementsAndND) {
  // GatherElements: indices' shape. GatherND batch_dims 1: data [2,3,4], indices [2,1]:
  // indices[:-1] = [2] + data[1 + 1:] = [4] -> [2,4]. batch_dims 0, indices [5,2] on [2,3,4]:
  // [5] + data[2:] = [5,4].
  expect_shapes(header(13) + R"(g (float[2,3,4] x, int64[2,2,4] e, int64[2,1] i, int64[5,2] j)
      => (a, b, c) {
    a = GatherElements <axis = 1> (x, e)
    b = GatherND <batch_dims = 1> (x, i)
    c = GatherND(x, j)
  })",
                {{"a", {2, 2, 4}}, {"b", {2, 4}}, {"c", {5, 4}}});
}

TEST(IndexRules, ScatterKeepsDataShape) {
  expect_shapes(header(13) + R"(g (float[4,5] x, int64[2,1] i, float[2,5] u, int64[4,5] e,
      float[4,5] v) => (a, b) {
    a = ScatterND(x, i, u)
    b = ScatterElements <axis = 0> (x, e, v)
  })",
                {{"a", {4, 5}}, {"b", {4, 5}}});
}

TEST(IndexRules, OneHot) {
  // indices [2,3], depth 5: axis -1 appends -> [2,3,5]; axis 0 prepends -> [5,2,3].
  expect_shapes(header(11) + R"(g (int64[2,3] i, float[2] v) => (a, b) {
    d = Constant <value = int64 {5}> ()
    a = OneHot(i, d, v)
    b = OneHot <axis = 0> (i, d, v)
  })",
                {{"a", {2, 3, 5}}, {"b", {5, 2, 3}}},
                OnnxCheck::kPartial);  // ONNX 1.12 infers only OneHot's rank
}

TEST(IndexRules, NonZeroNeedsKnownInput) {
  // [[1,0],[0,3]] has 2 non-zeros in rank 2 -> [2,2]. ONNX leaves the count unknown.
  expect_shapes(header(13) + R"(g (float[2] unused) => (y) {
    c = Constant <value = float[2,2] {1, 0, 0, 3}> ()
    y = NonZero(c)
  })",
                {{"y", {2, 2}}}, OnnxCheck::kNone);
  expect_error(header(13) + R"(g (float[2,2] x) => (y) { y = NonZero(x) })",
               "NonZero input (data-dependent)");
}

TEST(IndexRules, UniqueOfKnownValues) {
  // [2,1,2,3,1] has 3 distinct values: Y, indices, counts [3]; inverse_indices [5].
  // With axis 0 on [[1,2],[1,2],[3,4]]: 2 distinct rows -> Y [2,2], inverse [3].
  expect_shapes(header(11) + R"(g (float[1] unused) => (y, i, inv, c, ya, inva) {
    x = Constant <value = float[5] {2, 1, 2, 3, 1}> ()
    y, i, inv, c = Unique(x)
    m = Constant <value = float[3,2] {1, 2, 1, 2, 3, 4}> ()
    ya, ia, inva, ca = Unique <axis = 0> (m)
  })",
                {{"y", {3}}, {"i", {3}}, {"inv", {5}}, {"c", {3}}, {"ya", {2, 2}}, {"inva", {3}}},
                OnnxCheck::kNone);  // ONNX leaves the data-dependent count unknown
  expect_error(header(11) + R"(g (float[4] x) => (y) { y = Unique(x) })",
               "Unique input (data-dependent)");
}

TEST(IndexRules, PadInputAndAttributeForms) {
  // Opset 11: pads [0,1,0,2] (begins then ends) on [3,4] -> [3+0+0, 4+1+2] = [3,7].
  expect_shapes(header(11) + R"(g (float[3,4] x) => (y) {
    p = Constant <value = int64[4] {0, 1, 0, 2}> ()
    y = Pad(x, p)
  })",
                {{"y", {3, 7}}});
  // Opset 2: attribute pads [1,0,1,0] -> [5,4]; negative pads crop: [0,-1,0,-1] -> [3,2].
  expect_shapes(header(2) + R"(g (float[3,4] x) => (y, z) {
    y = Pad <pads = [1, 0, 1, 0]> (x)
    z = Pad <pads = [0, -1, 0, -1]> (x)
  })",
                {{"y", {5, 4}}, {"z", {3, 2}}});
}

TEST(IndexRules, PadWithAxesOpset18) {
  // axes [-1] -> 2; pads [1, 3] on dim 5 -> 9. ONNX 1.12 does not know opset 18.
  expect_shapes(header(18) + R"(g (float[2,3,5] x) => (y) {
    p = Constant <value = int64[2] {1, 3}> ()
    v = Constant <value = float {0.0}> ()
    a = Constant <value = int64[1] {-1}> ()
    y = Pad(x, p, v, a)
  })",
                {{"y", {2, 3, 9}}}, OnnxCheck::kNone);
}

TEST(IndexRules, PadUnknownPadsFails) {
  expect_error(header(13) + R"(g (float[3,4] x, int64[4] p) => (y) { y = Pad(x, p) })",
               "Pad pads (input 1, 'p') is not known statically");
}

TEST(IndexRules, CenterCropPadToTheGivenLengths) {
  // axes [0, 2]: dim 0 cropped 5 -> 3, dim 2 padded 4 -> 7; all axes: [2, 6, 1].
  expect_shapes(header(18) + R"(g (float[5,6,4] x) => (y, z) {
    s = Constant <value = int64[2] {3, 7}> ()
    t = Constant <value = int64[3] {2, 6, 1}> ()
    y = CenterCropPad <axes = [0, -1]> (x, s)
    z = CenterCropPad (x, t)
  })",
                {{"y", {3, 6, 7}}, {"z", {2, 6, 1}}}, OnnxCheck::kNone);
}

}  // namespace
}  // namespace shapeonnx::testing

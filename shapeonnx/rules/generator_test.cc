#include <gtest/gtest.h>

#include <vector>

#include "shapeonnx/rules/test_util.h"

namespace shapeonnx::testing {
namespace {

std::vector<int64_t> known_of(const common::Graph& g, const char* name) {
  const common::Value* v = g.find(name);
  if (v == nullptr || !v->known) return {-999};
  return v->known->to_int64();
}

TEST(GeneratorRules, ShapeValueAndSlicing) {
  // Shape of [2,3,4] is the int64 vector [2,3,4]; start 1, end -1 keeps [3].
  common::Graph g = expect_shapes(header(15) + R"(g (float[2,3,4] x) => (s, t) {
    s = Shape(x)
    t = Shape <start = 1, end = -1> (x)
  })",
                                  {{"s", {3}}, {"t", {1}}});
  EXPECT_EQ(known_of(g, "s"), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(known_of(g, "t"), (std::vector<int64_t>{3}));
  EXPECT_EQ(g.find("s")->dtype, common::DType::kInt64);
}

TEST(GeneratorRules, SizeIsScalarCount) {
  // 2 * 3 * 4 = 24 elements.
  common::Graph g =
      expect_shapes(header(13) + R"(g (float[2,3,4] x) => (n) { n = Size(x) })", {{"n", {}}});
  EXPECT_EQ(known_of(g, "n"), (std::vector<int64_t>{24}));
}

TEST(GeneratorRules, ConstantOfShapeFromConstant) {
  // shape [2,3] from a constant; value attribute int64 -> int64 output.
  common::Graph g = expect_shapes(header(13) + R"(g (float[1] unused) => (y, z) {
    s = Constant <value = int64[2] {2, 3}> ()
    y = ConstantOfShape <value = int64[1] {7}> (s)
    z = ConstantOfShape(s)
  })",
                                  {{"y", {2, 3}}, {"z", {2, 3}}});
  EXPECT_EQ(g.find("y")->dtype, common::DType::kInt64);
  EXPECT_EQ(g.find("z")->dtype, common::DType::kFloat);
}

TEST(GeneratorRules, ConstantOfShapeUnknownFails) {
  expect_error(header(13) + R"(g (int64[2] s) => (y) { y = ConstantOfShape(s) })",
               "ConstantOfShape shape (input 0, 's') is not known statically");
}

TEST(GeneratorRules, RangeCounts) {
  // int: ceil((10 - 0) / 3) = 4; negative delta: ceil((0 - 10) / -3) = 4;
  // float: ceil((2 - 1) / 0.3) = ceil(3.33) = 4; empty: ceil((0 - 5) / 1) < 0 -> 0.
  expect_shapes(header(13) + R"(g (float[1] unused) => (a, b, c, d) {
    z = Constant <value = int64 {0}> ()
    ten = Constant <value = int64 {10}> ()
    three = Constant <value = int64 {3}> ()
    mthree = Constant <value = int64 {-3}> ()
    a = Range(z, ten, three)
    b = Range(ten, z, mthree)
    f1 = Constant <value = float {1.0}> ()
    f2 = Constant <value = float {2.0}> ()
    fd = Constant <value = float {0.3}> ()
    c = Range(f1, f2, fd)
    five = Constant <value = int64 {5}> ()
    one = Constant <value = int64 {1}> ()
    d = Range(five, z, one)
  })",
                {{"a", {4}}, {"b", {4}}, {"c", {4}}, {"d", {0}}});
}

TEST(GeneratorRules, RangeFromShapeChain) {
  // limit = Size(x) = 6 -> Range(0, 6, 1) has 6 elements.
  expect_shapes(header(13) + R"(g (float[2,3] x) => (r) {
    n = Size(x)
    z = Constant <value = int64 {0}> ()
    one = Constant <value = int64 {1}> ()
    r = Range(z, n, one)
  })",
                {{"r", {6}}}, OnnxCheck::kPartial);  // ONNX 1.12 does not propagate Size
}

TEST(GeneratorRules, RangeUnknownFails) {
  expect_error(header(13) + R"(g (int64 n) => (r) {
    z = Constant <value = int64 {0}> ()
    one = Constant <value = int64 {1}> ()
    r = Range(z, n, one)
  })",
               "Range start, limit and delta must be known statically");
}

TEST(ResizeRules, ScalesOpset13) {
  // floor([1,3,4,5] * [1,1,2,0.5]) = [1,3,8,2] (5 * 0.5 = 2.5 -> 2).
  expect_shapes(header(13) + R"(g (float[1,3,4,5] x) => (y) {
    sc = Constant <value = float[4] {1.0, 1.0, 2.0, 0.5}> ()
    y = Resize <mode = "nearest"> (x, , sc)
  })",
                {{"y", {1, 3, 8, 2}}});
}

TEST(ResizeRules, SizesOpset11WithRoiAndEmptyScales) {
  // Opset 11 needs roi and scales inputs; an empty scales tensor means sizes are used.
  expect_shapes(header(11) + R"(g (float[1,3,4,5] x) => (y) {
    roi = Constant <value = float[0] {}> ()
    sc = Constant <value = float[0] {}> ()
    sz = Constant <value = int64[4] {1, 3, 7, 9}> ()
    y = Resize <mode = "linear"> (x, roi, sc, sz)
  })",
                {{"y", {1, 3, 7, 9}}});
}

TEST(ResizeRules, ScalesOpset10) {
  // floor(6 * 1.5) = 9.
  expect_shapes(header(10) + R"(g (float[1,1,6,6] x) => (y) {
    sc = Constant <value = float[4] {1.0, 1.0, 1.5, 1.5}> ()
    y = Resize(x, sc)
  })",
                {{"y", {1, 1, 9, 9}}});
}

TEST(ResizeRules, AxesAndAspectRatioOpset18) {
  // sizes [8,8] on axes [2,3] of [1,3,4,6]. stretch -> [1,3,8,8].
  // not_larger: scale = min(8/4, 8/6) = 1.333; round(4 * 1.333) = 5, round(6 * 1.333) = 8.
  // not_smaller: scale = max(2, 1.333) = 2 -> [8, 12].
  expect_shapes(header(18) + R"(g (float[1,3,4,6] x) => (a, b, c) {
    sz = Constant <value = int64[2] {8, 8}> ()
    a = Resize <axes = [2, 3]> (x, , , sz)
    b = Resize <axes = [2, 3], keep_aspect_ratio_policy = "not_larger"> (x, , , sz)
    c = Resize <axes = [-2, -1], keep_aspect_ratio_policy = "not_smaller"> (x, , , sz)
  })",
                {{"a", {1, 3, 8, 8}}, {"b", {1, 3, 5, 8}}, {"c", {1, 3, 8, 12}}}, OnnxCheck::kNone);
}

TEST(ResizeRules, UnknownSizesFail) {
  expect_error(header(13) + R"(g (float[1,1,4,4] x, int64[4] sz) => (y) {
    y = Resize(x, , , sz)
  })",
               "Resize sizes (input 3, 'sz') is not known statically");
}

TEST(ResizeRules, UpsampleInputAndAttribute) {
  // floor(3 * 2) = 6, floor(5 * 1.5) = 7.
  expect_shapes(header(9) + R"(g (float[1,1,3,5] x) => (y) {
    sc = Constant <value = float[4] {1.0, 1.0, 2.0, 1.5}> ()
    y = Upsample(x, sc)
  })",
                {{"y", {1, 1, 6, 7}}});
  expect_shapes(header(7) + R"(g (float[1,1,3,5] x) => (y) {
    y = Upsample <scales = [1.0, 1.0, 2.0, 1.5]> (x)
  })",
                {{"y", {1, 1, 6, 7}}});
}

}  // namespace
}  // namespace shapeonnx::testing

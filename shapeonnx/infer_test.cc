#include "shapeonnx/infer.h"

#include <gtest/gtest.h>

#include "common/testing.h"

namespace shapeonnx {
namespace {

using common::Dims;

common::Graph parse(const std::string& text) {
  auto g = common::testing::parse_text(text, "t.onnx");
  EXPECT_TRUE(g.ok()) << g.error().str();
  return std::move(g).value();
}

// x[N,3,4,4] -> Reshape(x, Concat(Gather(Shape(x), 0), [-1])): the batch flows through the value
// chain, the rest is 3*4*4 = 48.
const char* kFlattenChain = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[N,3,4,4] x) => (float[N,48] y) {
    s = Shape(x)
    zero = Constant<value = int64[1] {0}>()
    n = Gather(s, zero)
    minus1 = Constant<value = int64[1] {-1}>()
    target = Concat<axis = 0>(n, minus1)
    y = Reshape(x, target)
  })";

TEST(InferTest, ShapeValueChainsEndInStaticShapes) {
  common::Graph g = parse(kFlattenChain);
  ASSERT_TRUE(infer(g, {.batch_size = 5}).ok());
  EXPECT_EQ(*g.find("x")->shape, (Dims{5, 3, 4, 4}));
  EXPECT_EQ(g.find("s")->known->to_int64(), (std::vector<int64_t>{5, 3, 4, 4}));
  EXPECT_EQ(g.find("target")->known->to_int64(), (std::vector<int64_t>{5, -1}));
  EXPECT_EQ(*g.find("y")->shape, (Dims{5, 48}));
  const Stats s = stats(g);
  EXPECT_EQ(s.values, 5);  // x, s, n, target, y (constants are initializers)
  EXPECT_EQ(s.static_values, 5);
}

TEST(InferTest, InputShapeOverridesDeclaredShape) {
  common::Graph g = parse(kFlattenChain);
  ASSERT_TRUE(infer(g, {.input_shapes = {{"x", {2, 3, 2, 8}}}}).ok());
  EXPECT_EQ(*g.find("y")->shape, (Dims{2, 48}));  // 3*2*8 = 48 as well
}

TEST(InferTest, UnknownInputOverrideIsAnError) {
  common::Graph g = parse(kFlattenChain);
  auto s = infer(g, {.input_shapes = {{"nope", {1}}}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().str(), "t.onnx: --input-shape names 'nope', which is not a graph input");
}

TEST(InferTest, NonLeadingSymbolicDimNeedsAnOverride) {
  common::Graph g = parse(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,T] x) => (float[1,T] y) { y = Relu(x) })");
  auto s = infer(g);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().str(), "t.onnx: input 'x' dim 1 is symbolic; give --input-shape x=...");
}

TEST(InferTest, UnknownOpNamesNodeAndOp) {
  common::Graph g = parse(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) { y = FancyOp(x) })");
  auto s = infer(g);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().str(), "t.onnx: node 'FancyOp_0' (FancyOp): unsupported op (no shape rule)");
}

TEST(InferTest, DimensionOverflowIsAnError) {
  // Expand to [2^40, 2^40]: 2^80 elements do not fit in int64.
  common::Graph g = parse(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1] x) => (float[1,1] y) {
      shape = Constant<value = int64[2] {1099511627776, 1099511627776}>()
      y = Expand(x, shape)
    })");
  auto s = infer(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().str().find("overflows int64"), std::string::npos) << s.error().str();
  EXPECT_NE(s.error().str().find("(Expand)"), std::string::npos);
}

TEST(InferTest, ModelsWithoutBatchDimensionKeepTheirShape) {
  // A flat [12] input is used as is: no dimension is symbolic, so nothing changes.
  common::Graph g = parse(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[12] x) => (float[3,4] y) {
      shape = Constant<value = int64[2] {3, 4}>()
      y = Reshape(x, shape)
    })");
  ASSERT_TRUE(infer(g, {.batch_size = 8}).ok());
  EXPECT_EQ(*g.find("x")->shape, (Dims{12}));
  EXPECT_EQ(*g.find("y")->shape, (Dims{3, 4}));
}

TEST(InferTest, DataDependentSliceBoundsThatDifferByAConstant) {
  // As in cctsdb_yolo: the start index is read from the input (x[10]), the end is start + 3, so
  // for in-range indices the slice has 3 elements whatever the index.
  common::Graph g = parse(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[11] x) => (float[3] y) {
      ten = Constant<value = int64[1] {10}>()
      idx = Gather(x, ten)
      start = Cast<to = 7>(idx)
      three = Constant<value = int64 {3}>()
      end = Add(start, three)
      zero = Constant<value = int64[1] {0}>()
      y = Slice(x, start, end, zero)
    })");
  ASSERT_TRUE(infer(g).ok());
  EXPECT_EQ(*g.find("y")->shape, (Dims{3}));
  EXPECT_FALSE(g.find("start")->known.has_value());  // the index itself stays unknown
}

TEST(InferTest, UnrelatedDataDependentSliceBoundsAreAnError) {
  common::Graph g = parse(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[11] x) => (float[3] y) {
      i0 = Constant<value = int64[1] {9}>()
      i1 = Constant<value = int64[1] {10}>()
      a = Gather(x, i0)
      start = Cast<to = 7>(a)
      b = Gather(x, i1)
      end = Cast<to = 7>(b)
      zero = Constant<value = int64[1] {0}>()
      y = Slice(x, start, end, zero)
    })");
  auto s = infer(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().str().find("(Slice)"), std::string::npos) << s.error().str();
}

}  // namespace
}  // namespace shapeonnx

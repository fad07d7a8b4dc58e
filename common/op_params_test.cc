// The window reader against ONNX's output-size formulas, worked by hand.
#include "common/op_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace common {
namespace {

Node pool(std::vector<Attribute> attrs) {
  Node n;
  n.name = "p";
  n.op_type = "MaxPool";
  n.attrs = std::move(attrs);
  return n;
}

Attribute ints(const char* name, Dims v) { return Attribute::make_ints(name, std::move(v)); }

TEST(WindowTest, DefaultsAndExplicitPads) {
  Result<Window> w = read_window(pool({ints("pads", {1, 0, 2, 0})}), 2, {3, 3});
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(w->strides, Dims({1, 1}));
  EXPECT_EQ(w->dilations, Dims({1, 1}));
  EXPECT_EQ(w->pad_begin, Dims({1, 0}));
  EXPECT_EQ(w->pad_end, Dims({2, 0}));
  // dim 0: 5 + 1 + 2 - 3 = 5 -> 6 outputs; dim 1: 5 - 3 = 2 -> 3 outputs.
  Result<WindowDim> d0 = window_dim(*w, 0, 5), d1 = window_dim(*w, 1, 5);
  ASSERT_TRUE(d0.ok() && d1.ok());
  EXPECT_EQ(d0->out, 6);
  EXPECT_EQ(d1->out, 3);
  EXPECT_EQ(d0->pad_begin, 1);
  EXPECT_EQ(d0->pad_end, 2);
}

TEST(WindowTest, KernelShapeAttributeWinsOverTheGivenKernel) {
  Result<Window> w = read_window(pool({ints("kernel_shape", {2})}), 1, {7});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->kernel, Dims({2}));
}

TEST(WindowTest, SameUpperAndLowerSplitTheOddPadding) {
  // in 5, k 4, s 2: out = ceil(5 / 2) = 3, total = 2 * 2 + 4 - 5 = 3 -> upper 1 + 2, lower 2 + 1.
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    Result<Window> w =
        read_window(pool({Attribute::make_string("auto_pad", mode), ints("strides", {2}),
                          ints("pads", {9, 9})}),  // pads are ignored under SAME_*
                    1, {4});
    ASSERT_TRUE(w.ok());
    Result<WindowDim> d = window_dim(*w, 0, 5);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->out, 3);
    const bool upper = std::string(mode) == "SAME_UPPER";
    EXPECT_EQ(d->pad_begin, upper ? 1 : 2) << mode;
    EXPECT_EQ(d->pad_end, upper ? 2 : 1) << mode;
  }
}

TEST(WindowTest, DilationWidensTheWindow) {
  // k 3, d 2 -> effective 5; in 7, s 1: 7 - 5 + 1 = 3 outputs.
  Result<Window> w = read_window(pool({ints("dilations", {2})}), 1, {3});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(window_dim(*w, 0, 7)->out, 3);
}

TEST(WindowTest, ValidIgnoresPads) {
  Result<Window> w = read_window(
      pool({Attribute::make_string("auto_pad", "VALID"), ints("pads", {2, 2})}), 1, {3});
  ASSERT_TRUE(w.ok());
  Result<WindowDim> d = window_dim(*w, 0, 5);
  EXPECT_EQ(d->out, 3);
  EXPECT_EQ(d->pad_begin + d->pad_end, 0);
}

TEST(WindowTest, CeilModeDropsAWindowStartingInTheEndPadding) {
  // in 5, k 2, s 2, pads 0+1: span 4 -> ceil(4 / 2) + 1 = 3, and the third window starts at 4,
  // inside the input: kept. pads 0+2 and in 4: span 4 -> 3 windows, the third starts at 4 =
  // in + pad_begin: dropped, 2.
  Result<Window> w = read_window(
      pool({Attribute::make_int("ceil_mode", 1), ints("strides", {2}), ints("pads", {0, 1})}), 1,
      {2});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(window_dim(*w, 0, 5)->out, 3);
  w->pad_end = {2};
  EXPECT_EQ(window_dim(*w, 0, 4)->out, 2);
  // Without ceil_mode: floor(4 / 2) + 1 = 3 for in 4 with pads 0+2.
  w->ceil_mode = false;
  EXPECT_EQ(window_dim(*w, 0, 4)->out, 3);
}

TEST(WindowTest, MalformedAttributesAreErrors) {
  const std::vector<std::pair<Node, std::string>> cases = {
      {pool({ints("strides", {1, 1})}), "attribute 'strides' has 2 values, expected 1"},
      {pool({ints("pads", {1})}), "attribute 'pads' has 1 values, expected 2"},
      {pool({ints("strides", {0})}), "kernel, strides and dilations must be positive"},
      {pool({ints("dilations", {int64_t{1} << 25})}),
       "kernel, strides or dilations larger than 2^24"},
      {pool({ints("pads", {-1, 0})}), "negative pads"},
      {pool({Attribute::make_string("auto_pad", "SAME")}), "unknown auto_pad 'SAME'"},
      {pool({ints("kernel_shape", {2, 2})}), "kernel has 2 dims, input has 1 spatial dims"},
  };
  for (const auto& [node, message] : cases) {
    Result<Window> w = read_window(node, 1, {3});
    ASSERT_FALSE(w.ok()) << message;
    EXPECT_EQ(w.error().message, message);
  }
  Result<Window> w = read_window(pool({}), 1, {3});
  ASSERT_TRUE(w.ok());
  Result<WindowDim> d = window_dim(*w, 0, 2);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().message, "window of size 3 does not fit input dim 2 with pads 0+0");
}

TEST(BroadcastMapTest, RightAlignedWithBroadcastDims) {
  // in [3, 1] onto out [2, 3, 2]: element (a, b, c) reads in[b, 0] = offset b.
  EXPECT_EQ(broadcast_map({3, 1}, {2, 3, 2}),
            std::vector<int64_t>({0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}));
  // in [1, 2] onto out [3, 2]: element (a, c) reads in[0, c] = offset c.
  EXPECT_EQ(broadcast_map({1, 2}, {3, 2}), std::vector<int64_t>({0, 1, 0, 1, 0, 1}));
  // A scalar and a one-element tensor read offset 0 everywhere; equal shapes are the identity.
  EXPECT_EQ(broadcast_map({}, {2, 2}), std::vector<int64_t>(4, 0));
  EXPECT_EQ(broadcast_map({1, 1}, {3}), std::vector<int64_t>());  // rank 2 onto rank 1
  EXPECT_EQ(broadcast_map({2, 3}, {2, 3}), std::vector<int64_t>({0, 1, 2, 3, 4, 5}));
}

TEST(BroadcastMapTest, ShapesThatDoNotBroadcastGiveNothing) {
  EXPECT_TRUE(broadcast_map({3}, {2, 4}).empty());
  EXPECT_TRUE(broadcast_map({2, 1}, {3, 5}).empty());
  EXPECT_TRUE(broadcast_map({1, 2, 3}, {2, 3}).empty());
  EXPECT_TRUE(broadcast_map({1}, {0, 4}).empty());  // no elements to map
}

TEST(Col2ImTest, OffsetsByKernelPositionThenBlock) {
  // Image [3, 4], block [2, 2], pads [0, 1, 0, 1] (width padded by one on each side), stride 2
  // on the width: blocks (3 - 2) + 1 = 2 rows by (4 + 2 - 2) / 2 + 1 = 3 columns.
  // Kernel position (r, c), block (i, j) reads row i + r, column 2 j - 1 + c (-1 and 4: padding).
  Result<Window> w =
      read_window(pool({ints("pads", {0, 1, 0, 1}), ints("strides", {1, 2})}), 2, {2, 2});
  ASSERT_TRUE(w.ok()) << w.error().message;
  int64_t blocks = 0;
  Result<std::vector<int64_t>> offsets = col2im_offsets(*w, {3, 4}, &blocks);
  ASSERT_TRUE(offsets.ok()) << offsets.error().message;
  EXPECT_EQ(blocks, 6);
  // Rows of 6 blocks per kernel position; offset = row * 4 + column.
  EXPECT_EQ(*offsets, (std::vector<int64_t>{-1, 1, 3,  -1, 5,  7,      // (0, 0)
                                            0,  2, -1, 4,  6,  -1,     // (0, 1)
                                            -1, 5, 7,  -1, 9,  11,     // (1, 0)
                                            4,  6, -1, 8,  10, -1}));  // (1, 1)
}
TEST(AxisTest, NegativeAxesCountFromTheEnd) {
  // Rank 4: -1 is dim 3, -4 is dim 0; nonnegative axes stay.
  EXPECT_EQ(*normalize_axis(-1, 4), 3);
  EXPECT_EQ(*normalize_axis(-4, 4), 0);
  EXPECT_EQ(*normalize_axis(0, 4), 0);
  EXPECT_EQ(*normalize_axis(3, 4), 3);
}

TEST(AxisTest, OutOfRangeNamesAxisAndRank) {
  EXPECT_EQ(normalize_axis(4, 4).error().message, "axis 4 out of range for rank 4");
  EXPECT_EQ(normalize_axis(-5, 4).error().message, "axis -5 out of range for rank 4");
  EXPECT_EQ(normalize_axis(0, 0).error().message, "axis 0 out of range for rank 0");
}

TEST(AxisTest, FlattenAxisMayEqualTheRank) {
  // Rank 3: axis 3 puts every dim before the split ([d0 * d1 * d2, 1]); -3 is 0, -1 is 2.
  EXPECT_EQ(*normalize_flatten_axis(3, 3), 3);
  EXPECT_EQ(*normalize_flatten_axis(-3, 3), 0);
  EXPECT_EQ(*normalize_flatten_axis(-1, 3), 2);
  EXPECT_EQ(normalize_flatten_axis(4, 3).error().message, "axis 4 out of range for rank 3");
  EXPECT_EQ(normalize_flatten_axis(-4, 3).error().message, "axis -4 out of range for rank 3");
}

TEST(AxesTest, NormalizedInTheGivenOrder) {
  Result<Dims> a = normalize_axes({-1, 0, -3}, 3);  // rank 3: -3 names dim 0 again
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().message, "axis -3 repeated");
  Result<Dims> b = normalize_axes({-1, 0, 1}, 3);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(*b, Dims({2, 0, 1}));
  EXPECT_EQ(*normalize_axes({}, 2), Dims());
}

TEST(AxesTest, OneOutOfRangeFailsTheList) {
  EXPECT_EQ(normalize_axes({0, 2}, 2).error().message, "axis 2 out of range for rank 2");
}

TEST(ShapeRangeTest, ClampsAndCountsFromTheEnd) {
  Node n = pool({});
  n.op_type = "Shape";
  DimRange all = shape_range(n, 4);  // no attributes: every dim
  EXPECT_EQ(all.begin, 0);
  EXPECT_EQ(all.end, 4);
  n.attrs = {Attribute::make_int("start", -3), Attribute::make_int("end", 99)};
  DimRange tail = shape_range(n, 4);  // -3 is dim 1; 99 clamps to 4
  EXPECT_EQ(tail.begin, 1);
  EXPECT_EQ(tail.end, 4);
  n.attrs = {Attribute::make_int("start", -99), Attribute::make_int("end", -1)};
  DimRange head = shape_range(n, 4);  // -99 clamps to 0; -1 is dim 3
  EXPECT_EQ(head.begin, 0);
  EXPECT_EQ(head.end, 3);
  n.attrs = {Attribute::make_int("start", 3), Attribute::make_int("end", 1)};
  DimRange none = shape_range(n, 4);  // end before start: empty
  EXPECT_EQ(none.begin, 3);
  EXPECT_EQ(none.end, 3);
}

Node with_inputs(std::vector<std::string> inputs, std::vector<Attribute> attrs) {
  Node n = pool(std::move(attrs));
  n.op_type = "Squeeze";
  n.inputs = std::move(inputs);
  return n;
}

TEST(IntsInputOrAttrTest, InputWinsThenAttributeThenNothing) {
  const Tensor axes = Tensor::from_int64({0, -1}, {2});
  Result<std::optional<Dims>> in =
      ints_input_or_attr(with_inputs({"x", "ax"}, {}), 1, &axes, "axes", "Squeeze axes");
  ASSERT_TRUE(in.ok() && in->has_value());
  EXPECT_EQ(**in, Dims({0, -1}));
  Result<std::optional<Dims>> attr =
      ints_input_or_attr(with_inputs({"x"}, {ints("axes", {2})}), 1, nullptr, "axes", "axes");
  ASSERT_TRUE(attr.ok() && attr->has_value());
  EXPECT_EQ(**attr, Dims({2}));
  // An empty input name is an absent input; an empty `attr` reads no attribute.
  Result<std::optional<Dims>> none =
      ints_input_or_attr(with_inputs({"x", ""}, {ints("axes", {2})}), 1, nullptr, "", "axes");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(IntsInputOrAttrTest, FloatInputsSaturateAsTensorsDo) {
  // Slice starts NaN and +inf (a fuzzed model): NaN reads 0, infinity the largest int64.
  const Tensor f =
      Tensor::from_floats({std::nanf(""), std::numeric_limits<float>::infinity()}, {2});
  Result<std::optional<Dims>> r = ints_input_or_attr(with_inputs({"x", "s"}, {}), 1, &f, "", "");
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ(**r, Dims({0, std::numeric_limits<int64_t>::max()}));
}

TEST(IntsInputOrAttrTest, UnknownInputFails) {
  const Node n = with_inputs({"x", "ax"}, {});
  EXPECT_EQ(ints_input_or_attr(n, 1, nullptr, "axes", "Squeeze axes").error().message,
            "Squeeze axes (input 1, 'ax') is not known statically");
  EXPECT_EQ(ints_input_or_attr(n, 1, nullptr, "", "").error().message,
            "input 1 ('ax') is not known statically");
}
}  // namespace
}  // namespace common

// Hand-computed cases for Resize/Upsample, normalizations, pools and (de)quantization.
#include <gtest/gtest.h>

#include "common/eval/eval.h"
#include "common/eval/test_util.h"

namespace common {
namespace {

using evaltest::floats;
using evaltest::go;
using evaltest::ints;
using evaltest::one;

Attribute as(const char* name, const char* v) { return Attribute::make_string(name, v); }

TEST(EvalResizeTest, NearestHalfPixelDoublesEachPixel) {
  // half_pixel: x_orig = (x + 0.5) / 2 - 0.5 = [-0.25, 0.25, 0.75, 1.25] -> round_prefer_floor
  // [0, 0, 1, 1] on both spatial axes.
  Tensor x = floats({1, 2, 3, 4}, {1, 1, 2, 2});
  Tensor y = one("Resize", {x, std::nullopt, floats({1, 1, 2, 2}, {4})}, {}, 13);
  EXPECT_EQ(y, floats({1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, {1, 1, 4, 4}));
  // The same through sizes instead of scales.
  EXPECT_EQ(one("Resize", {x, std::nullopt, std::nullopt, ints({1, 1, 4, 4}, {4})}, {}, 13), y);
}

TEST(EvalResizeTest, LinearAsymmetricAndAlignCorners) {
  // asymmetric: x_orig = x / 2 = [0, 0.5, 1, 1.5] over [1, 3] -> [1, 2, 3, 3] (index clamped).
  Tensor x = floats({1, 3}, {2});
  EXPECT_EQ(one("Resize", {x, std::nullopt, floats({2}, {1})},
                {as("mode", "linear"), as("coordinate_transformation_mode", "asymmetric")}, 13),
            floats({1, 2, 3, 3}, {4}));
  // align_corners to 3 outputs: x_orig = x * (2 - 1) / (3 - 1) = [0, 0.5, 1] -> [1, 2, 3].
  EXPECT_EQ(one("Resize", {x, std::nullopt, std::nullopt, ints({3}, {1})},
                {as("mode", "linear"), as("coordinate_transformation_mode", "align_corners")}, 13),
            floats({1, 2, 3}, {3}));
}

TEST(EvalResizeTest, OldFormsUseAsymmetricFloor) {
  // Upsample (opset 9, scales input) and Resize-10 (X, scales): x_orig = x / 2 floored.
  Tensor x = floats({1, 2}, {1, 2});
  Tensor want = floats({1, 1, 2, 2}, {1, 4});
  EXPECT_EQ(one("Upsample", {x, floats({1, 2}, {2})}, {}, 9), want);
  EXPECT_EQ(one("Resize", {x, floats({1, 2}, {2})}, {}, 10), want);
  // Upsample-7 reads the scales attribute.
  EXPECT_EQ(one("Upsample", {x}, {Attribute::make_floats("scales", {1, 2})}, 7), want);
}

TEST(EvalNnTest, BatchAndLayerNormalization) {
  // N=1, C=2, epsilon 0: y0 = (1 - 1) / sqrt(4) * 1 + 0 = 0; y1 = (2 - 1) / sqrt(1) * 2 + 1 = 3.
  Tensor x = floats({1, 2}, {1, 2});
  EXPECT_EQ(
      one("BatchNormalization",
          {x, floats({1, 2}, {2}), floats({0, 1}, {2}), floats({1, 1}, {2}), floats({4, 1}, {2})},
          {Attribute::make_float("epsilon", 0)}),
      floats({0, 3}, {1, 2}));
  // LayerNormalization of [1, 3] over the last axis: mean 2, variance 1 -> [-1, 1];
  // Mean [[2]] and InvStdDev [[1]] as extra outputs.
  auto ln = go("LayerNormalization", {floats({1, 3}, {1, 2}), floats({1, 1}, {2})},
               {Attribute::make_float("epsilon", 0)}, 17, 3);
  ASSERT_TRUE(ln.ok()) << ln.error().str();
  EXPECT_EQ((*ln)[0], floats({-1, 1}, {1, 2}));
  EXPECT_EQ((*ln)[1], floats({2}, {1, 1}));
  EXPECT_EQ((*ln)[2], floats({1}, {1, 1}));
}

TEST(EvalConvTest, ConvSumsWindows) {
  // 3x3 input 1..9, 2x2 kernel of ones: window sums [1+2+4+5, 2+3+5+6, 4+5+7+8, 5+6+8+9].
  Tensor x = floats({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  EXPECT_EQ(one("Conv", {x, floats({1, 1, 1, 1}, {1, 1, 2, 2})}),
            floats({12, 16, 24, 28}, {1, 1, 2, 2}));
  // 1-D with pads [1,1], stride 2, bias 10: padded [0,1,2,3,0], windows [0,1] and [2,3] ->
  // [1, 5] + 10.
  EXPECT_EQ(
      one("Conv", {floats({1, 2, 3}, {1, 1, 3}), floats({1, 1}, {1, 1, 2}), floats({10}, {1})},
          {Attribute::make_ints("pads", {1, 1}), Attribute::make_ints("strides", {2})}),
      floats({11, 15}, {1, 1, 2}));
}

TEST(EvalConvTest, ConvTransposeScattersWindows) {
  // x = [1, 2], W = [1, 1]: stride 1 gives [1, 1+2, 2]; stride 2 gives [1, 1, 2, 2].
  Tensor x = floats({1, 2}, {1, 1, 2}), w = floats({1, 1}, {1, 1, 2});
  EXPECT_EQ(one("ConvTranspose", {x, w}), floats({1, 3, 2}, {1, 1, 3}));
  EXPECT_EQ(one("ConvTranspose", {x, w}, {Attribute::make_ints("strides", {2})}),
            floats({1, 1, 2, 2}, {1, 1, 4}));
  // output_shape 5 with stride 2: the full result has 4, so one zero is appended at the end.
  EXPECT_EQ(one("ConvTranspose", {x, w},
                {Attribute::make_ints("strides", {2}), Attribute::make_ints("output_shape", {5})}),
            floats({1, 1, 2, 2, 0}, {1, 1, 5}));
}

TEST(EvalConvTest, MaxAndAveragePool) {
  // Kernel 2, stride 2 over [1,3,2,5]: maxima [3,5] at flat indices [1,3].
  Tensor x = floats({1, 3, 2, 5}, {1, 1, 4});
  std::vector<Attribute> a = {Attribute::make_ints("kernel_shape", {2}),
                              Attribute::make_ints("strides", {2})};
  auto mp = go("MaxPool", {x}, a, 12, 2);
  ASSERT_TRUE(mp.ok()) << mp.error().str();
  EXPECT_EQ((*mp)[0], floats({3, 5}, {1, 1, 2}));
  EXPECT_EQ((*mp)[1], ints({1, 3}, {1, 1, 2}));
  // With pads [1,1]: windows {pad,1}, {3,2}, {5,pad}. Averages over real elements [1, 2.5, 5];
  // with count_include_pad=1 the pad counts: [0.5, 2.5, 2.5].
  a.push_back(Attribute::make_ints("pads", {1, 1}));
  EXPECT_EQ(one("AveragePool", {x}, a), floats({1, 2.5f, 5}, {1, 1, 3}));
  a.push_back(Attribute::make_int("count_include_pad", 1));
  EXPECT_EQ(one("AveragePool", {x}, a), floats({0.5f, 2.5f, 2.5f}, {1, 1, 3}));
}

TEST(EvalNnTest, GlobalPools) {
  // Over the 2x2 spatial block [1,2,3,4]: average 2.5, max 4.
  Tensor x = floats({1, 2, 3, 4}, {1, 1, 2, 2});
  EXPECT_EQ(one("GlobalAveragePool", {x}), floats({2.5f}, {1, 1, 1, 1}));
  EXPECT_EQ(one("GlobalMaxPool", {x}), floats({4}, {1, 1, 1, 1}));
}

TEST(EvalNnTest, QuantizeRoundsHalfToEvenAndSaturates) {
  // x / 1 rounded half to even: 1.5 -> 2, 2.5 -> 2; 300 saturates to 255, -3 to 0.
  Tensor q = one("QuantizeLinear", {floats({1.5f, 2.5f, 300, -3}, {4}), floats({1}, {}),
                                    ints({0}, {}, DType::kUInt8)});
  EXPECT_EQ(q, ints({2, 2, 255, 0}, {4}, DType::kUInt8));
  // Dequantize: (x - 2) * 0.5 for x = [0, 10] -> [-1, 4].
  EXPECT_EQ(one("DequantizeLinear", {ints({0, 10}, {2}, DType::kUInt8), floats({0.5f}, {}),
                                     ints({2}, {}, DType::kUInt8)}),
            floats({-1, 4}, {2}));
}

}  // namespace
}  // namespace common

#include "common/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace common {
namespace {

TEST(TensorTest, NumElementsHandlesScalarsZerosAndOverflow) {
  EXPECT_EQ(num_elements({}), 1);
  EXPECT_EQ(num_elements({2, 0, 5}), 0);
  EXPECT_EQ(num_elements({2, 3, 4}), 24);
  EXPECT_EQ(num_elements({2, -1}), -1);
  // 2^32 * 2^32 = 2^64 does not fit in int64.
  EXPECT_EQ(num_elements({int64_t{1} << 32, int64_t{1} << 32}), -1);
}

TEST(TensorTest, ConvertsBetweenTypes) {
  Tensor t = Tensor::from_int64({1, -2, 3}, {3}, DType::kInt32);
  EXPECT_EQ(t.raw.size(), 12u);
  EXPECT_EQ(t.to_int64(), (std::vector<int64_t>{1, -2, 3}));
  Tensor f = Tensor::from_double({0.5, -1.25}, {2}, DType::kFloat);
  EXPECT_EQ(f.span<float>()[1], -1.25f);
  EXPECT_EQ(f.int_at(1), -1);  // truncation toward zero, as static_cast
  Tensor b = Tensor::from_int64({0, 7}, {2}, DType::kBool);
  EXPECT_EQ(b.to_int64(), (std::vector<int64_t>{0, 1}));
}

// Found by fuzz_shapeonnx (UBSan): a NaN read as an integer (a Reshape shape given as floats)
// was a plain cast, undefined behaviour. Floating values now truncate and saturate, NaN as 0.
TEST(TensorTest, FloatingValuesReadAsIntegersSaturate) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor d = Tensor::from_double({std::nan(""), 1e30, -inf, -2.75}, {4}, DType::kDouble);
  EXPECT_EQ(d.to_int64(), (std::vector<int64_t>{0, std::numeric_limits<int64_t>::max(),
                                                std::numeric_limits<int64_t>::min(), -2}));
  Tensor h = Tensor::from_double({std::nan(""), 65504, -inf}, {3}, DType::kFloat16);
  EXPECT_EQ(h.to_int64(), (std::vector<int64_t>{0, 65504, std::numeric_limits<int64_t>::min()}));
}

// Found by fuzz_shapeonnx (UBSan): an empty double tensor's to_double passed memcpy the null
// data() of an empty vector (a Resize with empty scales).
TEST(TensorTest, EmptyTensorsConvertWithoutCopying) {
  EXPECT_TRUE(Tensor::zeros(DType::kDouble, {0}).to_double().empty());
  EXPECT_EQ(Tensor::from_floats({}, {0}).numel(), 0);
}

TEST(TensorTest, HalfPrecisionRoundTrips) {
  // 1.0 = 0x3c00, -2.0 = 0xc000, 65504 (max half) = 0x7bff, 2^-24 (smallest subnormal) = 0x0001.
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(5.9604645e-08f), 0x0001);
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);  // 1/3 rounded to 10 mantissa bits
  EXPECT_EQ(half_to_float(float_to_half(0.1f)), 0.0999755859375f);
  EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(1.5f)), 1.5f);
}

}  // namespace
}  // namespace common

// Hand-computed cases for the evaluator's kernels of ops from opsets 18-21 (GroupNormalization,
// CenterCropPad, AffineGrid, Col2Im, Resize's antialias), whose ONNX node tests only the newer
// test data (ONNX 1.17) holds.
#include <gtest/gtest.h>

#include "common/eval/eval.h"
#include "common/eval/test_util.h"

namespace common {
namespace {

using evaltest::ai;
using evaltest::floats;
using evaltest::ints;
using evaltest::one;

Attribute af(const char* name, float v) { return Attribute::make_float(name, v); }

TEST(EvalOpset18Test, GroupNormalizationPerChannelAndPerGroup) {
  // Two groups of two channels: [1, 3] (mean 2, variance 1) and [2, 6] (mean 4, variance 4) both
  // normalize to [-1, 1]. Opset 21: scale [1, 2, 3, 4], bias [0, 0, 0, 1] per channel;
  // opset 18: scale [2, 3], bias [1, 0] per group.
  const Tensor x = floats({1, 3, 2, 6}, {1, 4, 1, 1});
  const std::vector<Attribute> attrs = {ai("num_groups", 2), af("epsilon", 0)};
  EXPECT_EQ(one("GroupNormalization", {x, floats({1, 2, 3, 4}, {4}), floats({0, 0, 0, 1}, {4})},
                attrs, 21),
            floats({-1, 2, -3, 5}, {1, 4, 1, 1}));
  EXPECT_EQ(one("GroupNormalization", {x, floats({2, 3}, {2}), floats({1, 0}, {2})}, attrs, 18),
            floats({-1, 3, -3, 3}, {1, 4, 1, 1}));
}

TEST(EvalOpset18Test, CenterCropPadCropsAndPadsAboutTheCentre) {
  // [[0, 1, 2], [3, 4, 5]] to [1, 5]: rows cropped from (2 - 1) / 2 = 0, columns padded by one
  // on each side; to [4, 2]: rows padded by one on each side, columns cropped from 0.
  const Tensor x = ints({0, 1, 2, 3, 4, 5}, {2, 3});
  EXPECT_EQ(one("CenterCropPad", {x, ints({1, 5}, {2})}, {}, 18), ints({0, 0, 1, 2, 0}, {1, 5}));
  EXPECT_EQ(one("CenterCropPad", {x, ints({4, 2}, {2})}, {}, 18),
            ints({0, 0, 0, 1, 3, 4, 0, 0}, {4, 2}));
}

TEST(EvalOpset18Test, AffineGridAlignCorners) {
  // align_corners: x runs -1, 0, 1 over W = 3 and y -1, 1 over H = 2; theta maps (x, y) to
  // (2x + 0.5, y - 1).
  const Tensor theta = floats({2, 0, 0.5, 0, 1, -1}, {1, 2, 3});
  EXPECT_EQ(one("AffineGrid", {theta, ints({1, 1, 2, 3}, {4})}, {ai("align_corners", 1)}, 20),
            floats({-1.5, -2, 0.5, -2, 2.5, -2, -1.5, 0, 0.5, 0, 2.5, 0}, {1, 2, 3, 2}));
}

TEST(EvalOpset18Test, Col2ImAddsOverlappingColumns) {
  // Image [2, 3], block [2, 2]: blocks at columns 0 and 1. Column element (kernel (r, c), block
  // b) = 1 + 2 * (2r + c) + b lands on (r, b + c); (0, 1) gets 2 + 3, (1, 1) gets 6 + 7.
  const Tensor cols = floats({1, 2, 3, 4, 5, 6, 7, 8}, {1, 4, 2});
  EXPECT_EQ(one("Col2Im", {cols, ints({2, 3}, {2}), ints({2, 2}, {2})}, {}, 18),
            floats({1, 5, 4, 5, 13, 8}, {1, 1, 2, 3}));
}

TEST(EvalOpset18Test, ResizeLinearAntialiasDownscale) {
  // [0, 1, 2, 3] by 0.5, half_pixel: sources 0.5 and 2.5, each over four taps weighted 1/8, 3/8,
  // 3/8, 1/8 (the filter stretched by 2), edges clamped: 0 * 4/8 + 1 * 3/8 + 2 * 1/8 = 0.625 and
  // 1 * 1/8 + 2 * 3/8 + 3 * 4/8 = 2.375.
  const Tensor x = floats({0, 1, 2, 3}, {1, 1, 1, 4});
  EXPECT_EQ(one("Resize", {x, std::nullopt, floats({1, 1, 1, 0.5}, {4})},
                {ai("antialias", 1), Attribute::make_string("mode", "linear")}, 18),
            floats({0.625, 2.375}, {1, 1, 1, 2}));
}

}  // namespace
}  // namespace common

// The antialiased Resize filters against values worked by hand from ONNX's definition.
#include "common/resize_filter.h"

#include <gtest/gtest.h>

namespace common {
namespace {

TEST(AntialiasTaps, LinearDownscaleByTwoIsATriangleOfFourTaps) {
  // scale 0.5: start = floor(-1 / 0.5) + 1 = -1, four taps at offsets -1..2 from floor(x) = 3,
  // ratio 0.5: |0.5 * (i - 0.5)| for i = -1..2 is 0.75, 0.25, 0.25, 0.75 -> weights 0.25, 0.75,
  // 0.75, 0.25, normalized by 2.
  const std::vector<ResizeTap> taps = antialias_taps(false, 3.5, 10, 0.5, -0.75, false);
  ASSERT_EQ(taps.size(), 4u);
  const double want[4] = {0.125, 0.375, 0.375, 0.125};
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(taps[k].index, 2 + k);
    EXPECT_DOUBLE_EQ(taps[k].weight, want[k]);
  }
}

TEST(AntialiasTaps, UpscalingIsPlainLinearAndAWholeXReadsOnePixel) {
  // scale >= 1 keeps the filter: x = 2.25 reads 2 and 3 with 0.75 and 0.25; a whole x = 2 puts
  // the ratio at 1 (the taps start one lower) and all weight on pixel 2.
  std::vector<ResizeTap> taps = antialias_taps(false, 2.25, 5, 2.0, -0.75, false);
  ASSERT_EQ(taps.size(), 2u);
  EXPECT_EQ(taps[0].index, 2);
  EXPECT_DOUBLE_EQ(taps[0].weight, 0.75);
  EXPECT_DOUBLE_EQ(taps[1].weight, 0.25);
  taps = antialias_taps(false, 2.0, 5, 2.0, -0.75, false);
  EXPECT_EQ(taps[0].index, 1);
  EXPECT_DOUBLE_EQ(taps[0].weight, 0.0);
  EXPECT_EQ(taps[1].index, 2);
  EXPECT_DOUBLE_EQ(taps[1].weight, 1.0);
}

TEST(AntialiasTaps, EdgesClampOrAreExcluded) {
  // x = 0.5, scale 0.5: taps at -1..2 with weights 1/8, 3/8, 3/8, 1/8; -1 reads pixel 0 (edge
  // copy), or with exclude_outside gets weight 0 and the rest are divided by 7/8.
  std::vector<ResizeTap> taps = antialias_taps(false, 0.5, 4, 0.5, -0.75, false);
  EXPECT_EQ(taps[0].index, 0);
  EXPECT_DOUBLE_EQ(taps[0].weight, 0.125);
  taps = antialias_taps(false, 0.5, 4, 0.5, -0.75, true);
  EXPECT_DOUBLE_EQ(taps[0].weight, 0.0);
  EXPECT_DOUBLE_EQ(taps[1].weight, 3.0 / 7.0);
  EXPECT_DOUBLE_EQ(taps[3].weight, 1.0 / 7.0);
}

TEST(AntialiasTaps, CubicDownscaleHasEightTapsSummingToOne) {
  // scale 0.5: start = floor(-2 / 0.5) + 1 = -3, eight taps; at ratio 0.5 they are symmetric.
  const std::vector<ResizeTap> taps = antialias_taps(true, 4.5, 12, 0.5, -0.75, false);
  ASSERT_EQ(taps.size(), 8u);
  double total = 0;
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(taps[k].index, 1 + k);
    EXPECT_NEAR(taps[k].weight, taps[7 - k].weight, 1e-15);
    total += taps[k].weight;
  }
  EXPECT_NEAR(total, 1.0, 1e-15);
}

}  // namespace
}  // namespace common

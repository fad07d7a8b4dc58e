#include <gtest/gtest.h>

#include "shapeonnx/rules/test_util.h"

namespace shapeonnx::testing {
namespace {

TEST(ResizeRules, GridSampleAndRoiAlign) {
  // GridSample: X [1,3,8,8], grid [1,5,6,2] -> [1,3,5,6].
  // RoiAlign: 7 rois on X with C 3, output 2x4 -> [7,3,2,4].
  expect_shapes(header(16) + R"(g (float[1,3,8,8] x, float[1,5,6,2] grid, float[7,4] rois,
      int64[7] idx) => (g2, r) {
    g2 = GridSample(x, grid)
    r = RoiAlign <output_height = 2, output_width = 4> (x, rois, idx)
  })",
                {{"g2", {1, 3, 5, 6}}, {"r", {7, 3, 2, 4}}});
}

TEST(ResizeRules, AffineGrid2DAnd3D) {
  // size [N, C, H, W] -> [N, H, W, 2]; [N, C, D, H, W] -> [N, D, H, W, 3].
  expect_shapes(header(20) + R"(g (float[2,2,3] t, float[2,3,4] u) => (a, b) {
    s = Constant <value = int64[4] {2, 7, 5, 6}> ()
    z = Constant <value = int64[5] {2, 7, 4, 5, 6}> ()
    a = AffineGrid (t, s)
    b = AffineGrid (u, z)
  })",
                {{"a", {2, 5, 6, 2}}, {"b", {2, 4, 5, 6, 3}}}, OnnxCheck::kNone);
}

}  // namespace
}  // namespace shapeonnx::testing

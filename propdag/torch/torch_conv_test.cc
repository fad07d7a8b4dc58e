// The torch engine's convolution map against the op rule's sparse matrix: its transposed
// convolution (the backward step) over coefficients whose nonzero positions fill a small window
// of the output, which it computes over that window alone, and over all of them.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string>

#include "propdag/test_util.h"
#include "propdag/torch/torch_ops.h"

namespace propdag::torch_engine::internal {
namespace {

// Two groups of 1 channel into 2 channels each, strides (2, 1), dilations (1, 2), pads top 1,
// left 0, bottom 0, right 1: x [1, 2, 9, 8] -> y [1, 4, 4, 7].
constexpr const char* kConv = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,2,9,8] x) => (float[1,4,4,7] y)
  <float[4,1,3,2] k = {1, -2, 0.5, 3, -1, 2, 0.25, -0.5, 1.5, 2, -3, 1,
                       -1, 1, 2, -0.5, 0.75, -2, 3, 1, -1.25, 0.5, 2, -1}> {
    y = Conv <group = 2, strides = [2, 1], dilations = [1, 2], pads = [1, 0, 0, 1]> (x, k)
  })";

TEST(TorchConv, AdjointOverAWindowEqualsTheRulesMatrix) {
  Model model = test::build(kConv);
  const int node = model.dag().outputs()[0];
  const auto* affine = dynamic_cast<const AffineOp*>(model.op(node));
  ASSERT_NE(affine, nullptr);
  const LinearTerm& t = affine->terms().front();
  const at::TensorOptions opts = at::TensorOptions().dtype(at::kDouble);
  std::unique_ptr<LinearMap> map = term_map(model, node, t, true, opts);
  ASSERT_NE(map, nullptr);
  ASSERT_STREQ(map->kind(), "conv");
  const Mat s = Mat(t.sparse());  // 112 x 144
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-1, 1);
  // Coefficients on output rows [h0, h0 + hn) x columns [w0, w0 + wn) of every channel: a window
  // inside, at the padded top-left, at the bottom-right corner, one position, and everywhere.
  for (auto [h0, hn, w0, wn] :
       {std::array<int, 4>{1, 2, 2, 3}, {0, 1, 0, 2}, {3, 1, 5, 2}, {2, 1, 6, 1}, {0, 4, 0, 7}}) {
    Mat y = Mat::Zero(3, 112);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c)
        for (int h = h0; h < h0 + hn; ++h)
          for (int w = w0; w < w0 + wn; ++w) y(r, (c * 4 + h) * 7 + w) = u(rng);
    const Mat got = to_mat(map->adjoint(to_tensor(y, opts)));
    const Mat want = y * s;
    const std::string what = "window at " + std::to_string(h0) + ", " + std::to_string(w0);
    ASSERT_EQ(got.cols(), want.cols()) << what;
    EXPECT_LE((got - want).cwiseAbs().maxCoeff(), 1e-12 * (1 + want.cwiseAbs().maxCoeff())) << what;
  }
  // No coefficient at all.
  EXPECT_EQ(to_mat(map->adjoint(to_tensor(Mat(Mat::Zero(2, 112)), opts))).cwiseAbs().maxCoeff(), 0);
}

}  // namespace
}  // namespace propdag::torch_engine::internal

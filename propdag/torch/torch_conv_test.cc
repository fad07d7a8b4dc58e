// The torch engine's convolution map against the op rule's sparse matrix: its transposed
// convolution (the backward step) over coefficients whose nonzero positions fill a small window
// of the output, which it computes over that window alone (found, or given), and over all of
// them; the elementwise step over a window; and a residual conv net's CROWN bounds through
// windows against the Eigen engine's.
#include <ATen/TensorOperators.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <array>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>

#include "propdag/engine.h"
#include "propdag/test_util.h"
#include "propdag/torch/torch_ops.h"
#include "propdag/torch/torch_test_util.h"

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

// A ConvTranspose with strides 2, dilations (1, 2), pads 1 and output padding (1, 0):
// x [1, 2, 4, 5] -> y [1, 3, 8, 11].
constexpr const char* kConvTranspose = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,2,4,5] x) => (float[1,3,8,11] y)
  <float[2,3,3,3] k = {1, -2, 0.5, 3, -1, 2, 0.25, -0.5, 1.5, 2, -3, 1, -1, 1, 2, -0.5, 0.75, -2,
                       3, 1, -1.25, 0.5, 2, -1, 1, 1, -1, 2, -2, 0.5, 1.5, -1, 1, 3, -0.25, 1,
                       -1, 2, 1, -3, 0.5, 1, 2, -1, 1, -2, 1, 0.75, -1, 3, 1, -2, 2, 1}> {
    y = ConvTranspose <strides = [2, 2], dilations = [1, 2], pads = [1, 1, 1, 1],
                       output_padding = [1, 0]> (x, k)
  })";

// The backward step of `text`'s one (transposed) convolution, output maps [c, h, w], input maps
// [ic, ih, iw], over coefficients on output rows [h0, h0 + hn) x columns [w0, w0 + wn), their
// window given and searched for: the rule's matrix products, and the window it reports for the
// result holds every nonzero of it.
void expect_windowed_adjoint(const char* text, const char* kind, std::array<int, 3> out_maps,
                             std::array<int, 3> in_maps,
                             std::initializer_list<std::array<int, 4>> windows) {
  Model model = test::build(text);
  const int node = model.dag().outputs()[0];
  const LinearTerm& t = dynamic_cast<const AffineOp*>(model.op(node))->terms().front();
  const at::TensorOptions opts = at::TensorOptions().dtype(at::kDouble);
  std::unique_ptr<LinearMap> map = term_map(model, node, t, true, opts);
  ASSERT_STREQ(map->kind(), kind);
  const Mat s = Mat(t.sparse());
  const auto [c, h, w] = out_maps;
  const auto [ic, ih, iw] = in_maps;
  std::mt19937 rng(12);
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto [h0, hn, w0, wn] : windows) {
    Mat y = Mat::Zero(2, c * h * w);
    for (int r = 0; r < 2; ++r)
      for (int ch = 0; ch < c; ++ch)
        for (int i = h0; i < h0 + hn; ++i)
          for (int j = w0; j < w0 + wn; ++j) y(r, (ch * h + i) * w + j) = u(rng);
    const Mat want = y * s;
    for (const Window& given : {Window{c, h, w, h0, h0 + hn, w0, w0 + wn}, Window{}}) {
      Window out;
      const Mat got = to_mat(map->adjoint_window(to_tensor(y, opts), given, &out));
      const std::string what = std::string(kind) + " window at " + std::to_string(h0) + ", " +
                               std::to_string(w0) + (given.known() ? " given" : " searched");
      ASSERT_EQ(got.cols(), want.cols()) << what;
      EXPECT_LE((got - want).cwiseAbs().maxCoeff(), 1e-12 * (1 + want.cwiseAbs().maxCoeff()))
          << what;
      ASSERT_TRUE(out.on(ic, ih, iw)) << what;
      for (int r = 0; r < 2; ++r)
        for (int i = 0; i < ic * ih * iw; ++i) {
          const int row = i / iw % ih, col = i % iw;
          if (row < out.r0 || row >= out.r1 || col < out.c0 || col >= out.c1) {
            EXPECT_EQ(want(r, i), 0) << what << ": element " << i << " outside the result's window";
          }
        }
    }
  }
}

TEST(TorchConv, AdjointOverAGivenWindowEqualsTheRulesMatrix) {
  expect_windowed_adjoint(
      kConv, "conv", {4, 4, 7}, {2, 9, 8},
      {{1, 2, 2, 3}, {0, 1, 0, 2}, {3, 1, 5, 2}, {2, 1, 6, 1}, {0, 4, 0, 7}, {2, 0, 1, 3}});
}

TEST(TorchConv, TransposedAdjointOverAWindowEqualsTheRulesMatrix) {
  // Inside, at the top-left and bottom-right corners, one position, the output-padding row,
  // everywhere, none.
  expect_windowed_adjoint(kConvTranspose, "conv_transpose", {3, 8, 11}, {2, 4, 5},
                          {{2, 3, 3, 4},
                           {0, 2, 0, 2},
                           {6, 2, 9, 2},
                           {4, 1, 5, 1},
                           {7, 1, 0, 5},
                           {0, 8, 0, 11},
                           {3, 0, 2, 2}});
}

// The elementwise step over the window of its coefficients equals the step over every element,
// and passes the window on to its input.
TEST(TorchLines, StepOverAWindowEqualsTheStepOverEveryElement) {
  const at::TensorOptions opts = at::TensorOptions().dtype(at::kDouble);
  constexpr int64_t kBoxes = 2, kRows = 3, kC = 2, kH = 6, kW = 5, kN = kC * kH * kW;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  auto random = [&](int64_t rows, bool windowed) {
    Mat m(rows, kN);
    for (Eigen::Index r = 0; r < m.rows(); ++r)
      for (int64_t i = 0; i < kN; ++i) {
        const int64_t h = i / kW % kH, w = i % kW;  // rows 1-2, columns 2-3: 4 of 30 per map
        m(r, i) = !windowed || (h >= 1 && h < 3 && w >= 2 && w < 4) ? u(rng) : 0.0;
      }
    return to_tensor(m, opts);
  };
  const at::Tensor ls = random(kBoxes, false), us = ls + random(kBoxes, false).abs();
  const at::Tensor lb = -random(kBoxes, false).abs(), ub = random(kBoxes, false).abs();
  const Window win{kC, kH, kW, 1, 3, 2, 4};
  const at::Tensor lam = random(kBoxes * kRows, true).view({kBoxes, kRows, kN});
  const at::Tensor om = random(kBoxes * kRows, true).view({kBoxes, kRows, kN});
  auto run = [&](const Window& given) {
    TBackward w{std::vector<at::Tensor>(2),
                std::vector<at::Tensor>(2),
                at::zeros({kBoxes, kRows}, opts),
                at::zeros({kBoxes, kRows}, opts),
                nullptr,
                std::vector<Window>(2)};
    elementwise_step(ls, lb, us, ub, 0, lam, om, w, given);
    return w;
  };
  const TBackward all = run({}), part = run(win);
  for (const auto& [got, want] : {std::pair{part.lb, all.lb},
                                  {part.ub, all.ub},
                                  {part.lam[0], all.lam[0]},
                                  {part.om[0], all.om[0]}})
    EXPECT_LE((to_mat(got.reshape({got.size(0), -1})) - to_mat(want.reshape({want.size(0), -1})))
                  .cwiseAbs()
                  .maxCoeff(),
              1e-14);
  EXPECT_FALSE(all.win[0].known());
  EXPECT_TRUE(part.win[0].on(kC, kH, kW));
  EXPECT_EQ(part.win[0].r0, 1);
  EXPECT_EQ(part.win[0].c1, 4);
}

// A residual conv net on 12 x 12 maps, bounded with chunks of 16 rows: each refinement chunk's
// coefficients stay in a window of the maps (torch_ops.h: Window), which the steps after the
// first convolution take from the geometry (through ReLU, the residual Add, whose input r1 gets
// the union of two windows, a scale per channel, and each Conv's bias).
std::string residual_conv_net() {
  int v = 0;
  auto values = [&v](int count) {
    std::string out;
    for (int i = 0; i < count; ++i, ++v)
      out += (i ? "," : "") + std::to_string(((v * 7) % 11 - 5) / 4.0);
    return out;
  };
  std::string text = R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,2,12,12] x) => (float[1,288] y)
    <float[3,2,3,3] w1 = {)" +
                     values(54) + "}, float[3] b1 = {" + values(3) + "}, float[3,3,3,3] w2 = {" +
                     values(81) + "}, float[3] b2 = {" + values(3) + "}, float[2,3,3,3] w3 = {" +
                     values(54) + "}, float[2] b3 = {" + values(2) +
                     R"(}, float[1,3,1,1] sc = {1.5, -0.5, 2}> {
      c1 = Conv <pads = [1, 1, 1, 1]> (x, w1, b1)
      r1 = Relu(c1)
      c2 = Conv <pads = [1, 1, 1, 1]> (r1, w2, b2)
      s = Add(c2, r1)
      r2 = Relu(s)
      m = Mul(r2, sc)
      c3 = Conv <pads = [1, 1, 1, 1]> (m, w3, b3)
      y = Flatten(c3)
    })";
  return text;
}

TEST(TorchEngine, ResidualConvNetOverWindowsEqualsEigen) {
  using torch_test::engine_for, torch_test::expect_close, torch_test::one;
  Model model = test::build(residual_conv_net());
  std::unique_ptr<Engine> engine = engine_for(model);
  EXPECT_EQ(engine->kinds()["conv"], 3);
  EXPECT_EQ(engine->kinds()["gather"], 1);
  std::mt19937 rng(5);
  const Interval box = torch_test::random_box(288, 0.4, rng);
  Options opt;
  opt.chunk_entries = 16 * 432;  // 16 rows of the widest node (3 x 12 x 12)
  BoundsReport report;
  opt.report = &report;
  auto ref = output_bounds(model, box, opt);
  ASSERT_TRUE(ref.ok()) << ref.error().str();
  auto got = engine->output_bounds(one(box), opt);
  ASSERT_TRUE(got.ok()) << got.error().str();
  EXPECT_GT(report.refined, 0);
  expect_close((*ref)[0].lo, (*got)[0].lo.row(0).transpose(), 1e-9, "residual conv net lo");
  expect_close((*ref)[0].hi, (*got)[0].hi.row(0).transpose(), 1e-9, "residual conv net hi");
}

}  // namespace
}  // namespace propdag::torch_engine::internal

// The torch engine on shared VNN-COMP models: IBP and CROWN equal to the Eigen engine's (within
// 1e-9 relative in float64, with equal reports), sampled soundness, float32 close, and many boxes
// in one call each equal to its own Eigen bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <optional>
#include <ostream>
#include <random>
#include <string>

#include "propdag/engine.h"
#include "propdag/torch/torch_test_util.h"
#include "propdag/vnnlib.h"

namespace propdag::torch_engine {
namespace {

namespace fs = std::filesystem;
using torch_test::engine_for;
using torch_test::existing;
using torch_test::expect_close;
using torch_test::expect_equal_bounds;
using torch_test::kBudget;
using torch_test::one;

fs::path benchmarks() { return fs::path(VNNCOMP_BENCHMARKS); }

struct Shared {
  const char* bench;
  const char* onnx;
  const char* vnnlib;
};

// A sample CI can afford (seconds each): ACAS Xu, two conv nets, cGAN (Conv + ConvTranspose).
// Left out of this sample: TinyYOLO and the larger conv nets (Eigen's CROWN alone takes tens of
// seconds on them), ViT and the nonlinear-heavy ones (per-box path; equal, but slow to compare).
const Shared kShared[] = {
    {"acasxu_2023", "onnx/ACASXU_run2a_1_1_batch_2000.onnx", "vnnlib/prop_1.vnnlib"},
    {"acasxu_2023", "onnx/ACASXU_run2a_3_3_batch_2000.onnx", "vnnlib/prop_2.vnnlib"},
    {"collins_rul_cnn_2023", "onnx/NN_rul_small_window_20.onnx",
     "vnnlib/robustness_2perturbations_delta5_epsilon10_w20.vnnlib"},
    {"cgan_2023", "onnx/cGAN_imgSz32_nCh_1.onnx",
     "vnnlib/cGAN_imgSz32_nCh_1_prop_0_input_eps_0.010_output_eps_0.015.vnnlib"},
};

// gtest names the parameter in test listings (ctest -N) by this, not by its bytes.
void PrintTo(const Shared& s, std::ostream* os) { *os << s.onnx; }

class SharedModel : public ::testing::TestWithParam<Shared> {};

// A shared model and its property's box; no model when ../shared is absent.
struct Loaded {
  std::optional<Model> model;
  Interval box;
};
Loaded load_shared(const Shared& s) {
  const std::string onnx = existing(benchmarks() / s.bench / s.onnx);
  const std::string spec_path = existing(benchmarks() / s.bench / s.vnnlib);
  if (onnx.empty() || spec_path.empty()) return {};
  auto model = Model::load(onnx);
  EXPECT_TRUE(model.ok()) << model.error().str();
  auto spec = read_vnnlib(spec_path);
  EXPECT_TRUE(spec.ok()) << spec.error().str();
  if (!model.ok() || !spec.ok()) return {};
  return {std::move(model).value(), spec->hull()};
}

TEST_P(SharedModel, EqualsEigenAndIsSound) {
  const Shared& s = GetParam();
  Loaded loaded = load_shared(s);
  if (!loaded.model) GTEST_SKIP() << "shared benchmarks absent";
  const std::optional<Model>& model = loaded.model;
  const Interval& box = loaded.box;
  expect_equal_bounds(*model, box, s.onnx);

  // Sampled soundness: outputs at random points lie in the torch engine's CROWN bounds.
  std::unique_ptr<Engine> engine = engine_for(*model);
  Options budgeted;
  budgeted.refine_budget = kBudget;
  auto b = engine->output_bounds(one(box), budgeted);
  ASSERT_TRUE(b.ok());
  std::mt19937 rng(11);
  Options point;
  point.method = Method::kIbp;
  for (int i = 0; i < 20; ++i) {
    Vec x(box.size());
    for (Eigen::Index j = 0; j < x.size(); ++j)
      x[j] = std::uniform_real_distribution<double>(box.lo[j], box.hi[j])(rng);
    auto y = output_bounds(*model, {x, x}, point);
    ASSERT_TRUE(y.ok());
    for (size_t o = 0; o < y->size(); ++o)
      for (Eigen::Index j = 0; j < (*y)[o].size(); ++j) {
        const double slack = 1e-9 * (1 + std::abs((*y)[o].lo[j]));
        ASSERT_GE((*y)[o].lo[j], (*b)[o].lo(0, j) - slack);
        ASSERT_LE((*y)[o].hi[j], (*b)[o].hi(0, j) + slack);
      }
  }

  // float32: close to float64 (relative to the output's width scale).
  std::unique_ptr<Engine> f32 = engine_for(*model, true);
  auto g = f32->output_bounds(one(box), budgeted);
  ASSERT_TRUE(g.ok()) << g.error().str();
  for (size_t o = 0; o < b->size(); ++o) {
    const double scale = 1 + (*b)[o].hi.cwiseAbs().maxCoeff() + (*b)[o].lo.cwiseAbs().maxCoeff();
    EXPECT_LE(((*g)[o].lo - (*b)[o].lo).cwiseAbs().maxCoeff(), 1e-3 * scale);
    EXPECT_LE(((*g)[o].hi - (*b)[o].hi).cwiseAbs().maxCoeff(), 1e-3 * scale);
  }
}

// ACAS Xu 1_1 on 300 random quarter-width parts of prop_1's box, in one call: each box refines
// only its own straddling rows (one pass whose batch is the (box, row) pairs, refine_pairs) and
// the boxes go through in chunks on LibTorch's threads. Every box's bounds equal the Eigen
// engine's for that box, and so do the summed reports; the rows refined differ between boxes, so
// the pairs are fewer than boxes x union of rows.
TEST(TorchEngine, ManyBoxesEachRefineTheirOwnRowsOnAcasXu) {
  Loaded loaded = load_shared(kShared[0]);
  if (!loaded.model) GTEST_SKIP() << "shared benchmarks absent";
  const std::optional<Model>& model = loaded.model;
  const Interval& box = loaded.box;
  const int k = 300;
  Boxes all{Mat(k, box.size()), Mat(k, box.size())};
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(0, 0.75);
  for (int b = 0; b < k; ++b)
    for (Eigen::Index i = 0; i < box.size(); ++i) {
      const double w = box.hi[i] - box.lo[i], lo = box.lo[i] + u(rng) * w;
      all.lo(b, i) = lo, all.hi(b, i) = lo + 0.25 * w;
    }
  std::unique_ptr<Engine> engine = engine_for(*model);
  Options opt;
  BoundsReport eigen_report, torch_report;
  opt.report = &torch_report;
  auto got = engine->output_bounds(all, opt);
  ASSERT_TRUE(got.ok()) << got.error().str();
  const Mat c = Mat::Random(3, 5);
  auto lin = engine->linear_bounds(all, {c}, opt);
  ASSERT_TRUE(lin.ok()) << lin.error().str();
  opt.report = &eigen_report;
  for (int b = 0; b < k; ++b) {
    const Interval one_box{all.lo.row(b).transpose(), all.hi.row(b).transpose()};
    auto ref = output_bounds(*model, one_box, opt);
    ASSERT_TRUE(ref.ok()) << ref.error().str();
    expect_close((*ref)[0].lo, (*got)[0].lo.row(b).transpose(), 1e-9, "lo");
    expect_close((*ref)[0].hi, (*got)[0].hi.row(b).transpose(), 1e-9, "hi");
    auto ref_lin = linear_bounds(*model, one_box, {c}, opt);
    ASSERT_TRUE(ref_lin.ok()) << ref_lin.error().str();
    expect_close(ref_lin->lo, lin->lo.row(b).transpose(), 1e-9, "linear lo");
    expect_close(ref_lin->hi, lin->hi.row(b).transpose(), 1e-9, "linear hi");
  }
  EXPECT_EQ(torch_report.boxes, eigen_report.boxes);
  EXPECT_EQ(torch_report.refined, eigen_report.refined);
  EXPECT_DOUBLE_EQ(torch_report.cost, eigen_report.cost);
}

INSTANTIATE_TEST_SUITE_P(Vnncomp, SharedModel, ::testing::ValuesIn(kShared), [](const auto& info) {
  std::string n = fs::path(info.param.onnx).stem().string();
  std::replace_if(
      n.begin(), n.end(), [](char c) { return !std::isalnum(c); }, '_');
  return n;
});

}  // namespace
}  // namespace propdag::torch_engine

// alpha in the torch engine: hand-worked ReLU and LeakyReLU nets whose best lower slope is known,
// ReLUs tuned through products as the Eigen engine's alpha does, and on shared VNN-COMP models
// (ACAS Xu, conv nets: collins RUL, cGAN) K boxes per call whose alpha bounds lie within their
// CROWN bounds, hold at sampled points (evaluated by common's evaluator) and, on ACAS Xu and cGAN,
// are as wide as the Eigen engine's alpha bounds within a few percent.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/eval/eval.h"
#include "common/onnx_io.h"
#include "propdag/engine.h"
#include "propdag/test_util.h"
#include "propdag/torch/torch_engine.h"
#include "propdag/torch/torch_test_util.h"
#include "propdag/vnnlib.h"

namespace propdag::torch_engine {
namespace {

namespace fs = std::filesystem;
using torch_test::engine_for;
using torch_test::existing;

// The refinement budget of torch_engine_test's comparisons on shared models (full CROWN takes
// minutes on cGAN); it changes nothing on the small nets.
Options with(Method m) {
  Options o;
  o.method = m;
  o.refine_budget = 2e8;
  return o;
}

// y = relu(x) - 0.5 x. On x in [-1, 2] (true range [0, 1]):
//   CROWN: u = 2 > -l = 1, lower slope 1: y >= x - 0.5 x = 0.5 x >= -0.5. Upper line
//          relu(x) <= 2/3 (x + 1): y <= x / 6 + 2/3 <= 1. IBP: [0, 2] + [-1, 0.5] = [-1, 2.5].
//   alpha: lower slope a gives y >= (a - 0.5) x, whose minimum is 0.5 - a (a >= 0.5) or 2a - 1
//          (a <= 0.5): best 0 at a = 0.5, reached from a = 1 by five Adam steps of 0.1 (the
//          gradient is -1 all the way). Upper: minus the tuned lower bound of -y, whose lower
//          slope cannot help (-y only uses relu's upper line): 1.
// On x in [-2, 1] (true range [0, 1]): CROWN's slope is 0 (u < -l): y >= -0.5 x >= -0.5; alpha
// again reaches a = 0.5 and 0; upper relu(x) <= (x + 2) / 3: y <= 2/3 - x / 6 <= 1.
// The boxes [-1, 2] and [-2, 1] of a one-input network, one per row.
Boxes two_boxes() {
  Boxes b{Mat(2, 1), Mat(2, 1)};
  b.lo << -1, -2;
  b.hi << 2, 1;
  return b;
}

constexpr const char* kKinkNet = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,1] x) => (float[1,1] y) <float[1,1] m = {-0.5}> {
    r = Relu(x)
    s = MatMul(x, m)
    y = Add(r, s)
  })";

TEST(TorchAlpha, KinkNetReachesTheBestSlope) {
  Model model = test::build(kKinkNet);
  std::unique_ptr<Engine> engine = engine_for(model);
  const Boxes two = two_boxes();
  auto crown = engine->output_bounds(two, with(Method::kCrown));
  ASSERT_TRUE(crown.ok()) << crown.error().str();
  auto alpha = engine->output_bounds(two, with(Method::kAlpha));
  ASSERT_TRUE(alpha.ok()) << alpha.error().str();
  for (int k = 0; k < 2; ++k) {
    EXPECT_NEAR((*crown)[0].lo(k, 0), -0.5, 1e-12) << k;
    EXPECT_NEAR((*crown)[0].hi(k, 0), 1.0, 1e-12) << k;
    EXPECT_NEAR((*alpha)[0].lo(k, 0), 0.0, 1e-6) << k;
    EXPECT_LE((*alpha)[0].lo(k, 0), 0.0) << k;  // sound: y = 0 at x = 0
    EXPECT_NEAR((*alpha)[0].hi(k, 0), 1.0, 1e-12) << k;
  }
  // float32: the same steps.
  auto f32 = engine_for(model, true)->output_bounds(two, with(Method::kAlpha));
  ASSERT_TRUE(f32.ok()) << f32.error().str();
  for (int k = 0; k < 2; ++k) {
    EXPECT_NEAR((*f32)[0].lo(k, 0), 0.0, 1e-5) << k;
    EXPECT_NEAR((*f32)[0].hi(k, 0), 1.0, 1e-5) << k;
  }
  // linear_bounds tunes the lower bound of each row; its coefficients are those of the tuned
  // lines: y >= (a - 0.5) x with a = 0.5, so about 0.
  std::vector<Mat> coef;
  auto lin = engine->linear_bounds(two, {Mat::Identity(1, 1)}, with(Method::kAlpha), &coef);
  ASSERT_TRUE(lin.ok()) << lin.error().str();
  ASSERT_EQ(coef.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    EXPECT_NEAR(lin->lo(k, 0), 0.0, 1e-6);
    EXPECT_NEAR(lin->hi(k, 0), 1.0, 1e-12);
    EXPECT_NEAR(coef[k](0, 0), 0.0, 1e-6);
  }
  // The Eigen engine's alpha finds the same bounds (the same steps).
  for (int k = 0; k < 2; ++k) {
    auto ref = output_bounds(model, {two.lo.row(k).transpose(), two.hi.row(k).transpose()},
                             with(Method::kAlpha));
    ASSERT_TRUE(ref.ok());
    EXPECT_NEAR((*ref)[0].lo[0], (*alpha)[0].lo(k, 0), 1e-9);
    EXPECT_NEAR((*ref)[0].hi[0], (*alpha)[0].hi(k, 0), 1e-9);
  }
}

// y = leaky_relu(x, 0.1) - 0.55 x, true range [0, 0.9] on x in [-1, 2] and on x in [-2, 1]. A
// lower slope a in [0.1, 1] gives y >= (a - 0.55) x, best a = 0.55 (bound 0).
//   [-1, 2]: CROWN a = 1 (u > -l): bound -0.45. Adam goes down by 0.1 a step (gradient -1) to
//            a = 0.6 (bound -0.05) in 4 steps, then overshoots: the kept bound is in [-0.05, 0].
//            Upper line slope (2 + 0.1) / 3 = 0.7, bias 0.6: y <= 0.15 x + 0.6 <= 0.9.
//   [-2, 1]: CROWN a = 0.1 (u < -l, the bottom of the range): bound -0.45; up to a = 0.5 (bound
//            -0.05) in 4 steps. Upper: slope (1 + 0.2) / 3 = 0.4, bias 0.6: y <= 0.6 - 0.15 x
//            <= 0.9.
constexpr const char* kLeakyNet = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,1] x) => (float[1,1] y) <float[1,1] m = {-0.55}> {
    r = LeakyRelu <alpha = 0.1> (x)
    s = MatMul(x, m)
    y = Add(r, s)
  })";

TEST(TorchAlpha, LeakyReluSlopesStayInTheirRange) {
  Model model = test::build(kLeakyNet);
  std::unique_ptr<Engine> engine = engine_for(model);
  const Boxes two = two_boxes();
  auto crown = engine->output_bounds(two, with(Method::kCrown));
  auto alpha = engine->output_bounds(two, with(Method::kAlpha));
  ASSERT_TRUE(crown.ok() && alpha.ok());
  for (int k = 0; k < 2; ++k) {
    EXPECT_NEAR((*crown)[0].lo(k, 0), -0.45, 1e-6) << k;  // float32 weights: -0.55f
    EXPECT_GE((*alpha)[0].lo(k, 0), -0.05 - 1e-6) << k;
    EXPECT_LE((*alpha)[0].lo(k, 0), 0.0) << k;  // sound: y = 0 at x = 0
    EXPECT_NEAR((*alpha)[0].hi(k, 0), 0.9, 1e-6) << k;
    auto ref = output_bounds(model, {two.lo.row(k).transpose(), two.hi.row(k).transpose()},
                             with(Method::kAlpha));
    ASSERT_TRUE(ref.ok());
    EXPECT_NEAR((*ref)[0].lo[0], (*alpha)[0].lo(k, 0), 1e-9);
    EXPECT_NEAR((*ref)[0].hi[0], (*alpha)[0].hi(k, 0), 1e-9);
  }
}

// ReLUs whose outputs are multiplied by a variable: alpha's passes go through the products'
// McCormick planes (fixed) to reach the ReLU slopes it tunes. With the product taken as its
// output interval, no tuned pass could beat CROWN, which goes through the planes.
constexpr const char* kReluProductNet = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,2] x) => (float[1,2] y)
  <float[3,2] w = {1,-1, 2,1, -1,2}, float[3] b = {0.2,-0.1,0.3}, float[1,2] v = {0.5,1},
   float[1] c = {1.5}, float[2,6] wo = {1,-2,1,1,-1,2, -1,1,2,2,1,-1}> {
    h = Gemm <transB = 1> (x, w, b)
    r = Relu(h)
    t = Gemm <transB = 1> (x, v, c)
    p = Mul(r, t)
    z = Concat <axis = 1> (p, r)
    y = Gemm <transB = 1> (z, wo)
  })";

TEST(TorchAlpha, TunesReluSlopesThroughProducts) {
  Model model = test::build(kReluProductNet);
  std::unique_ptr<Engine> engine = engine_for(model);
  Boxes boxes{Mat(3, 2), Mat(3, 2)};
  boxes.lo << -1, -1, -0.5, -1.5, -1.2, 0;
  boxes.hi << 1, 1, 1, 0.5, 0.4, 1;
  auto crown = engine->output_bounds(boxes, with(Method::kCrown));
  ASSERT_TRUE(crown.ok()) << crown.error().str();
  auto alpha = engine->output_bounds(boxes, with(Method::kAlpha));
  ASSERT_TRUE(alpha.ok()) << alpha.error().str();
  double gained = 0;
  for (int k = 0; k < 3; ++k) {
    const Interval box{boxes.lo.row(k).transpose(), boxes.hi.row(k).transpose()};
    auto ref = output_bounds(model, box, with(Method::kAlpha));
    ASSERT_TRUE(ref.ok()) << ref.error().str();
    for (Eigen::Index o = 0; o < 2; ++o) {
      EXPECT_GE((*alpha)[0].lo(k, o), (*crown)[0].lo(k, o) - 1e-12);
      EXPECT_LE((*alpha)[0].hi(k, o), (*crown)[0].hi(k, o) + 1e-12);
      gained +=
          (*crown)[0].hi(k, o) - (*crown)[0].lo(k, o) - (*alpha)[0].hi(k, o) + (*alpha)[0].lo(k, o);
      // The Eigen engine's alpha takes the same steps from the same slopes.
      EXPECT_NEAR((*ref)[0].lo[o], (*alpha)[0].lo(k, o), 1e-9) << "box " << k << " output " << o;
      EXPECT_NEAR((*ref)[0].hi[o], (*alpha)[0].hi(k, o), 1e-9) << "box " << k << " output " << o;
    }
  }
  EXPECT_GT(gained, 0.01);
}

// ---- Shared VNN-COMP models ----

// The graph's outputs at point x (graph inputs concatenated, as Model takes them), node after
// node by common::evaluate, in the model's float32.
std::vector<Vec> run_at(const common::Graph& g, const Model& model, const Vec& x) {
  std::map<std::string, common::Tensor> v;
  Eigen::Index at = 0;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const common::Dims& dims = model.shape(model.dag().inputs()[i]);
    const int64_t n = common::num_elements(dims);
    v[g.inputs[i]] = common::Tensor::from_double(
        std::vector<double>(x.data() + at, x.data() + at + n), dims, common::DType::kFloat);
    at += n;
  }
  auto find = [&](const std::string& name) -> const common::Tensor* {
    if (name.empty()) return nullptr;
    auto it = v.find(name);
    return it != v.end() ? &it->second : g.initializer(name);
  };
  for (const common::Node& node : g.nodes) {
    std::vector<const common::Tensor*> in;
    for (const std::string& name : node.inputs) in.push_back(find(name));
    auto out = common::evaluate(g, node, in);
    EXPECT_TRUE(out.ok()) << out.error().str();
    if (!out.ok()) return {};
    for (size_t o = 0; o < out->size(); ++o) v[node.outputs[o]] = (*out)[o];
  }
  std::vector<Vec> y;
  for (const std::string& name : g.outputs) {
    const std::vector<double> d = find(name)->to_double();
    y.push_back(Eigen::Map<const Vec>(d.data(), static_cast<Eigen::Index>(d.size())));
  }
  return y;
}

// K slices of `box` along its widest dimension.
Boxes slices(const Interval& box, int k) {
  Eigen::Index wide = 0;
  (box.hi - box.lo).maxCoeff(&wide);
  Boxes out{box.lo.transpose().replicate(k, 1), box.hi.transpose().replicate(k, 1)};
  const double step = (box.hi[wide] - box.lo[wide]) / k;
  for (int i = 0; i < k; ++i) {
    out.lo(i, wide) = box.lo[wide] + step * i;
    out.hi(i, wide) = i + 1 == k ? box.hi[wide] : box.lo[wide] + step * (i + 1);
  }
  return out;
}

struct Shared {
  const char* bench;
  const char* onnx;
  const char* vnnlib;
  int boxes;
  bool vs_eigen;  // compare the summed width with the Eigen engine's alpha (and with CROWN's)
};

const Shared kShared[] = {
    {"acasxu_2023", "onnx/ACASXU_run2a_1_1_batch_2000.onnx", "vnnlib/prop_1.vnnlib", 8, true},
    {"acasxu_2023", "onnx/ACASXU_run2a_3_3_batch_2000.onnx", "vnnlib/prop_2.vnnlib", 8, true},
    {"collins_rul_cnn_2023", "onnx/NN_rul_small_window_20.onnx",
     "vnnlib/robustness_2perturbations_delta5_epsilon10_w20.vnnlib", 4, false},
    {"cgan_2023", "onnx/cGAN_imgSz32_nCh_1.onnx",
     "vnnlib/cGAN_imgSz32_nCh_1_prop_0_input_eps_0.010_output_eps_0.015.vnnlib", 2, true},
};

void PrintTo(const Shared& s, std::ostream* os) { *os << s.onnx; }

class SharedAlpha : public ::testing::TestWithParam<Shared> {};

TEST_P(SharedAlpha, WithinCrownSoundAndAsTightAsEigen) {
  const Shared& s = GetParam();
  const fs::path dir = fs::path(VNNCOMP_BENCHMARKS) / s.bench;
  const std::string onnx = existing(dir / s.onnx), spec_path = existing(dir / s.vnnlib);
  if (onnx.empty() || spec_path.empty()) GTEST_SKIP() << "shared benchmarks absent";
  auto model = Model::load(onnx);
  ASSERT_TRUE(model.ok()) << model.error().str();
  auto graph = common::load_graph(onnx);
  ASSERT_TRUE(graph.ok()) << graph.error().str();
  auto spec = read_vnnlib(spec_path);
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  const Boxes boxes = slices(spec->hull(), s.boxes);
  std::unique_ptr<Engine> engine = engine_for(*model);
  auto crown = engine->output_bounds(boxes, with(Method::kCrown));
  ASSERT_TRUE(crown.ok()) << crown.error().str();
  auto alpha = engine->output_bounds(boxes, with(Method::kAlpha));
  ASSERT_TRUE(alpha.ok()) << alpha.error().str();
  double torch_width = 0, crown_width = 0, eigen_width = 0;
  std::mt19937 rng(17);
  for (int k = 0; k < s.boxes; ++k) {
    const Interval box{boxes.lo.row(k).transpose(), boxes.hi.row(k).transpose()};
    for (size_t o = 0; o < alpha->size(); ++o) {
      const Boxes &a = (*alpha)[o], &c = (*crown)[o];
      EXPECT_TRUE((a.lo.row(k).array() >= c.lo.row(k).array()).all()) << "box " << k;
      EXPECT_TRUE((a.hi.row(k).array() <= c.hi.row(k).array()).all()) << "box " << k;
      torch_width += (a.hi.row(k) - a.lo.row(k)).sum();
      crown_width += (c.hi.row(k) - c.lo.row(k)).sum();
    }
    for (int i = 0; i < 20; ++i) {  // sampled soundness, float32 evaluation: slack 1e-5
      Vec x(box.size());
      for (Eigen::Index j = 0; j < x.size(); ++j)
        x[j] = std::uniform_real_distribution<double>(box.lo[j], box.hi[j])(rng);
      const std::vector<Vec> y = run_at(*graph, *model, x);
      ASSERT_EQ(y.size(), alpha->size());
      for (size_t o = 0; o < y.size(); ++o)
        for (Eigen::Index j = 0; j < y[o].size(); ++j) {
          const double slack = 1e-5 * (1 + std::abs(y[o][j]));
          ASSERT_GE(y[o][j], (*alpha)[o].lo(k, j) - slack) << "box " << k << " output " << j;
          ASSERT_LE(y[o][j], (*alpha)[o].hi(k, j) + slack) << "box " << k << " output " << j;
        }
    }
    if (!s.vs_eigen) continue;
    auto ref = output_bounds(*model, box, with(Method::kAlpha));
    ASSERT_TRUE(ref.ok()) << ref.error().str();
    for (const Interval& r : *ref) eigen_width += (r.hi - r.lo).sum();
  }
  EXPECT_LE(torch_width, crown_width);
  std::printf("%s: summed width crown %.6g, torch alpha %.6g", s.onnx, crown_width, torch_width);
  if (s.vs_eigen) {
    std::printf(", Eigen alpha %.6g, torch / Eigen %.9f", eigen_width, torch_width / eigen_width);
    EXPECT_NEAR(torch_width / eigen_width, 1.0, 0.03);
    EXPECT_LT(torch_width, crown_width);  // here alpha tightens some bound
  }
  std::printf("\n");
}

INSTANTIATE_TEST_SUITE_P(Vnncomp, SharedAlpha, ::testing::ValuesIn(kShared), [](const auto& info) {
  std::string n = fs::path(info.param.onnx).stem().string();
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});

}  // namespace
}  // namespace propdag::torch_engine

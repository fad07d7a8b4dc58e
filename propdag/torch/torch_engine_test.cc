// The torch engine against the Eigen engine on hand-written nets: IBP and CROWN bounds equal in
// float64 (within 1e-9 relative), K boxes in one call equal to K calls, what is cut short
// reported per box, and the --device cuda error without a GPU. Shared VNN-COMP models:
// torch_shared_test.cc.
#include "propdag/torch/torch_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "propdag/engine.h"
#include "propdag/test_util.h"
#include "propdag/torch/torch_test_util.h"
#include "propdag/vnnlib.h"

namespace propdag::torch_engine {
namespace {

namespace fs = std::filesystem;
using torch_test::engine_for;
using torch_test::expect_close;
using torch_test::expect_equal_bounds;
using torch_test::one;

TEST(TorchEngine, Network1MatchesHandWorkedBounds) {
  Model model = test::build(test::kNet1);
  std::unique_ptr<Engine> engine = engine_for(model);
  Options crown;
  auto b = engine->output_bounds(one(test::box({-1, -1}, {1, 1})), crown);
  ASSERT_TRUE(b.ok()) << b.error().str();
  EXPECT_DOUBLE_EQ((*b)[0].lo(0, 0), 0.0);
  EXPECT_DOUBLE_EQ((*b)[0].hi(0, 0), 3.0);
  crown.method = Method::kIbp;
  b = engine->output_bounds(one(test::box({-1, -1}, {1, 1})), crown);
  ASSERT_TRUE(b.ok()) << b.error().str();
  EXPECT_DOUBLE_EQ((*b)[0].hi(0, 0), 4.0);
}

// A conv net with asymmetric pads, strides, dilation and groups, a LeakyRelu, a Sigmoid (a scalar
// kernel), BatchNorm-like Mul/Add by constants, Flatten and Gemm.
constexpr const char* kConvNet = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,2,7,6] x) => (float[1,3] y)
  <float[4,1,3,2] w1 = {1,-2,3,-1,2,1, -1,1,2,-2,1,3, 2,2,-1,1,-3,1, 1,-1,1,1,-1,2},
   float[4] b1 = {0.5, -0.25, 0.1, 0},
   float[1,4,1,1] s = {1.5, -0.5, 2, 0.75},
   float[2,4,2,2] w2 = {1,-1,2,1, 0,1,-1,2, 1,1,-2,1, -1,2,1,0, 2,-1,1,1, 1,0,-1,1, -2,1,1,1, 1,1,1,-1},
   float[3,8] wg = {1,-1,2,0,1,-2,1,1, -1,2,1,1,-1,0,1,-2, 2,1,-1,1,0,1,-1,1},
   float[3] bg = {0.1, -0.2, 0.3}> {
    c1 = Conv <pads = [1, 0, 0, 1], strides = [2, 1], dilations = [1, 2], group = 2> (x, w1, b1)
    a1 = LeakyRelu <alpha = 0.1> (c1)
    m1 = Mul(a1, s)
    c2 = Conv <strides = [1, 2]> (m1, w2)
    r2 = Relu(c2)
    g2 = Sigmoid(c2)
    s2 = Add(r2, g2)
    f = Flatten(s2)
    y = Gemm <transB = 1> (f, wg, bg)
  })";

TEST(TorchEngine, ConvNetEqualsEigen) {
  Model model = test::build(kConvNet);
  std::unique_ptr<Engine> engine = engine_for(model);
  EXPECT_EQ(engine->per_box_ops(), std::vector<std::string>{});
  // Both Conv layers run as convolutions (their geometry matched the op rule's matrices).
  std::map<std::string, int> kinds = engine->kinds();
  EXPECT_EQ(kinds["conv"], 2);
  EXPECT_EQ(kinds["sparse"], 0);
  EXPECT_EQ(kinds["relu"], 2);
  EXPECT_EQ(kinds["scalar"], 1);
  std::mt19937 rng(3);
  for (int trial = 0; trial < 4; ++trial)
    expect_equal_bounds(model, torch_test::random_box(84, 0.3, rng),
                        "conv net trial " + std::to_string(trial));
}

// A strided, padded ConvTranspose with output padding (the cGAN generator's kind of layer).
constexpr const char* kConvTransposeNet = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,2,3,3] x) => (float[1,108] y)
  <float[2,3,3,3] w = {-1,1,-2,2,2,-1,-2,-2,-2,2,3,1,-2,-1,3,3,1,1,-1,-2,1,-1,-2,1,1,-1,-1,1,1,1,-2,3,1,2,3,-1,-1,-1,2,1,-2,3,1,-2,1,3,1,3,-1,2,2,3,1,2}, float[3] b = {0.5, -1, 0.25}> {
    t = ConvTranspose <strides = [2, 2], pads = [1, 1, 1, 1], output_padding = [1, 1]> (x, w, b)
    r = Relu(t)
    y = Flatten(r)
  })";

TEST(TorchEngine, ConvTransposeNetEqualsEigen) {
  Model model = test::build(kConvTransposeNet);
  std::unique_ptr<Engine> engine = engine_for(model);
  EXPECT_EQ(engine->kinds()["conv_transpose"], 1);
  std::mt19937 rng(9);
  expect_equal_bounds(model, torch_test::random_box(18, 0.5, rng), "conv transpose net");
}

// Slices with variable starts and ends (test::kSlices, worked by hand in index_test.cc) go
// through the per-box path: two boxes in one call, one where the position takes two values
// (constant bounds) and one where it is a point (the plain slice's select), in both orders, equal
// to Eigen's. (With the point first, the output's backward step once applied box 0's select to
// both boxes: the coefficients a pass starts from are shared by the boxes.)
TEST(TorchEngine, VariableSliceMatchesHandWorkedBounds) {
  Model model = test::build(test::kSlices);
  std::unique_ptr<Engine> engine = engine_for(model);
  const std::vector<std::string> per_box = engine->per_box_ops();
  EXPECT_NE(std::find(per_box.begin(), per_box.end(), "Slice"), per_box.end());
  const Interval two = test::box({0, 5, 1, 3, -2, 4, 1}, {1, 6, 2, 4, -1, 5, 2.5});
  const Interval point = test::box({0, 5, 1, 3, -2, 4, 2}, {1, 6, 2, 4, -1, 5, 2.9});
  // y: the hull of the two windows, or x[2:5]; d = y - x[2:5]: [-1, 5], ..., or exactly 0.
  const Vec y_lo[2] = {Vec{{1, 1, -2}}, Vec{{1, 3, -2}}},
            y_hi[2] = {Vec{{6, 4, 4}}, Vec{{2, 4, -1}}};
  const Vec d_lo[2] = {Vec{{-1, -3, -1}}, Vec::Zero(3)}, d_hi[2] = {Vec{{5, 1, 6}}, Vec::Zero(3)};
  for (int first : {0, 1}) {
    const Interval& a = first == 0 ? two : point;
    const Interval& c = first == 0 ? point : two;
    Boxes both{Mat(2, 7), Mat(2, 7)};
    both.lo << a.lo.transpose(), c.lo.transpose();
    both.hi << a.hi.transpose(), c.hi.transpose();
    Options opt;
    opt.intersect_ibp = false;
    auto b = engine->output_bounds(both, opt);
    ASSERT_TRUE(b.ok()) << b.error().str();
    for (int row : {0, 1}) {
      const int which = row == 0 ? first : 1 - first;  // 0: two windows, 1: one
      const std::string what =
          (which == 0 ? "two windows, row " : "one window, row ") + std::to_string(row);
      expect_close((*b)[0].lo.row(row).transpose(), y_lo[which], 1e-12, "y lo, " + what);
      expect_close((*b)[0].hi.row(row).transpose(), y_hi[which], 1e-12, "y hi, " + what);
      expect_close((*b)[4].lo.row(row).transpose(), d_lo[which], 1e-12, "d lo, " + what);
      expect_close((*b)[4].hi.row(row).transpose(), d_hi[which], 1e-12, "d hi, " + what);
    }
  }
  expect_equal_bounds(model, two, "slices, two windows");
  expect_equal_bounds(model, point, "slices, one window");
}

// Gather maps take each end from an input end (affine.cc's add_gather_interval): from centre
// and radius, the concatenated copy of x in [-2, 1e22] had the lower bound 0.
TEST(TorchEngine, GatherKeepsASmallEndBesideAHugeOne) {
  Model model = test::build(test::kFarEnds);
  Options ibp;
  ibp.method = Method::kIbp;
  auto b = engine_for(model)->output_bounds(one(test::far_ends_box()), ibp);
  ASSERT_TRUE(b.ok()) << b.error().str();
  for (Eigen::Index i : {0, 1}) {
    EXPECT_EQ((*b)[0].lo(0, i), -2.0);
    EXPECT_EQ((*b)[0].hi(0, i), 1e22);
    EXPECT_EQ((*b)[1].lo(0, i), 0.0);
    EXPECT_EQ((*b)[1].hi(0, i), 1.0);
  }
}

// So do dense maps and convolutions (DenseMap, ConvMap: each end from products with W+ and W-),
// and CROWN's and alpha's concretization over the box (TorchEngine::concretize, the Tuner).
TEST(TorchEngine, DenseAndConvKeepASmallEndBesideAHugeOne) {
  Model model = test::build(test::kFarEndsAffine);
  std::unique_ptr<Engine> engine = engine_for(model);
  EXPECT_EQ(engine->kinds()["dense"], 1);
  EXPECT_EQ(engine->kinds()["conv"], 1);
  for (Method method : {Method::kIbp, Method::kCrown, Method::kAlpha}) {  // concretize too
    SCOPED_TRACE(static_cast<int>(method));
    Options o;
    o.method = method;
    auto b = engine->output_bounds(one(test::far_ends_box(3)), o);
    ASSERT_TRUE(b.ok()) << b.error().str();
    const Boxes &y = (*b)[0], &c = (*b)[1];
    test::expect_far_ends_affine(y.lo.row(0).transpose(), y.hi.row(0).transpose(),
                                 c.lo.row(0).transpose(), c.hi.row(0).transpose());
  }
}

// A dense weight of 2^22 entries or more keeps no W+ / W- copies beside W: its ends are taken a
// block of rows at a time (here 4 blocks of 256). x (4096) -> MatMul w1 (4096 x 1024) -> Relu ->
// MatMul w2 (1024 x 2), w1 from float data (held as float by the model) and from double data.
TEST(TorchEngine, LargeDenseWeightEqualsEigen) {
  for (common::DType dtype : {common::DType::kFloat, common::DType::kDouble}) {
    Model model = test::two_layer_net(4096, 1024, 2, dtype, 11);
    EXPECT_EQ(engine_for(model)->kinds()["dense"], 2);
    Interval box{Vec::Constant(4096, -0.02), Vec::Constant(4096, 0.03)};
    box.lo[7] = -2.0, box.hi[7] = 1e22;  // and a small end beside a huge one
    expect_equal_bounds(model, box, dtype == common::DType::kFloat ? "float w1" : "double w1");
  }
}

// Through a ReLU, where alpha's Tuner runs its own pass.
TEST(TorchEngine, CrownAndAlphaKeepASmallEndThroughAReLU) {
  Model model = test::build(test::kFarEndsRelu);
  for (Method method : {Method::kCrown, Method::kAlpha}) {
    SCOPED_TRACE(static_cast<int>(method));
    Options o;
    o.method = method;
    auto b = engine_for(model)->output_bounds(one(test::far_ends_box(1)), o);
    ASSERT_TRUE(b.ok()) << b.error().str();
    EXPECT_LE((*b)[0].lo(0, 0), -2.0);
    EXPECT_GE((*b)[0].lo(0, 0), -2.0 - 1e-9);
  }
}

// Softmax runs box by box through the Eigen rule's lines (a relaxation over whole groups): the
// same bounds, on narrow and wide boxes, where its lines and its interval are kept.
TEST(TorchEngine, SoftmaxLinesEqualEigen) {
  Model model = test::build(test::kSoftmaxNet);
  EXPECT_EQ(engine_for(model)->per_box_ops(), std::vector<std::string>{"Softmax"});
  for (double r : {0.05, 0.5, 3.0})
    expect_equal_bounds(model, {Vec{{-r, 0.3 - r}}, Vec{{r, 0.3 + r}}},
                        "softmax net, radius " + std::to_string(r));
}

TEST(TorchEngine, BatchEqualsSeparateCalls) {
  Model model = test::build(kConvNet);
  std::unique_ptr<Engine> engine = engine_for(model);
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  const int k = 5;
  Boxes all{Mat(k, 84), Mat(k, 84)};
  for (int b = 0; b < k; ++b)
    for (Eigen::Index i = 0; i < 84; ++i) {
      const double c = u(rng), r = 0.2 * std::abs(u(rng));
      all.lo(b, i) = c - r, all.hi(b, i) = c + r;
    }
  Options opt;
  Mat c = Mat::Random(2, 3);
  auto batched = engine->linear_bounds(all, {c}, opt);
  ASSERT_TRUE(batched.ok()) << batched.error().str();
  for (int b = 0; b < k; ++b) {
    Interval box{all.lo.row(b).transpose(), all.hi.row(b).transpose()};
    auto single = engine->linear_bounds(one(box), {c}, opt);
    ASSERT_TRUE(single.ok());
    expect_close(batched->lo.row(b).transpose(), single->lo.row(0).transpose(), 1e-12, "lo");
    expect_close(batched->hi.row(b).transpose(), single->hi.row(0).transpose(), 1e-12, "hi");
    auto ref = linear_bounds(model, box, {c}, opt);
    ASSERT_TRUE(ref.ok());
    expect_close(ref->lo, batched->lo.row(b).transpose(), 1e-9, "eigen lo");
    expect_close(ref->hi, batched->hi.row(b).transpose(), 1e-9, "eigen hi");
  }
}

// Network 2 (test_util.h) on boxes whose rows straddling 0 differ: h1 straddles in boxes 0, 2 and
// 3 (both rows, both, one), h2 in boxes 0 (rows 1 and 3) and 3 (row 1). One batched call refines
// each box's own rows, and each box's bounds and report equal the Eigen engine's.
TEST(TorchEngine, BatchRefinesEachBoxsOwnRows) {
  Model model = test::build(test::kStableRowsNet);
  std::unique_ptr<Engine> engine = engine_for(model);
  Boxes all{Mat(4, 2), Mat(4, 2)};
  all.lo << -1, -1, 0.5, -0.1, -1, 0, 0, -1;
  all.hi << 1, 1, 1, 0.1, 1, 0.5, 1, 0;
  Options opt;
  BoundsReport eigen_report, torch_report;
  opt.report = &torch_report;
  auto got = engine->output_bounds(all, opt);
  ASSERT_TRUE(got.ok()) << got.error().str();
  opt.report = &eigen_report;
  for (int b = 0; b < 4; ++b) {
    auto ref = output_bounds(model, {all.lo.row(b).transpose(), all.hi.row(b).transpose()}, opt);
    ASSERT_TRUE(ref.ok()) << ref.error().str();
    expect_close((*ref)[0].lo, (*got)[0].lo.row(b).transpose(), 1e-12, "lo");
    expect_close((*ref)[0].hi, (*got)[0].hi.row(b).transpose(), 1e-12, "hi");
  }
  EXPECT_DOUBLE_EQ((*got)[0].hi(0, 0), 4.5);
  EXPECT_EQ(eigen_report.refined, 2 + 0 + 1 + 2);
  EXPECT_EQ(torch_report.refined, eigen_report.refined);
  EXPECT_DOUBLE_EQ(torch_report.cost, eigen_report.cost);
}

// Two boxes of two inputs: [-1, 1]^2 and [0, 1] x [-1, 0.5].
Boxes two_boxes() {
  Boxes all{Mat(2, 2), Mat(2, 2)};
  all.lo << -1, -1, 0, -1;
  all.hi << 1, 1, 1, 0.5;
  return all;
}

// The torch engine's linear_bounds over `all` equal the Eigen engine's box by box (1e-12); each
// engine's report is added to its own.
void expect_linear_equal(const Model& model, Engine& engine, const Boxes& all,
                         const std::vector<Mat>& c, Options opt, BoundsReport& torch_report,
                         BoundsReport& eigen_report) {
  opt.report = &torch_report;
  auto got = engine.linear_bounds(all, c, opt);
  ASSERT_TRUE(got.ok()) << got.error().str();
  opt.report = &eigen_report;
  for (Eigen::Index b = 0; b < all.lo.rows(); ++b) {
    auto ref = linear_bounds(model, {all.lo.row(b).transpose(), all.hi.row(b).transpose()}, c, opt);
    ASSERT_TRUE(ref.ok()) << ref.error().str();
    expect_close(ref->lo, got->lo.row(b).transpose(), 1e-12, "lo");
    expect_close(ref->hi, got->hi.row(b).transpose(), 1e-12, "hi");
  }
}

// Network 3 (test_util.h) at budget 100, where h3's pass over all rows (123) does not fit: both
// engines refine every row of h2 (88; crown_report_test.cc) and agree box by box. Box 0 leaves h3
// to IBP. Box 1 (x1 in [0, 1], x2 in [-1, 0.5]): h1 in [-1, 1.5], [-0.5, 2]; CROWN's
// s <= 0.6 (h1_0 + 1) + 0.8 (h1_1 + 0.5) <= 1.4 x1 - 0.2 x2 + 1 <= 2.6, s >= 0, so r2 in
// [1, 3.6], [0, 0.1], 0, 0 and h3 in [-2, 0.7], [-1, 1.7], [-3, -0.3]: its two straddling rows
// (82) are refined. Costs: box 0 16 + 88 + 48, box 1 16 + 88 + 82 + 48.
TEST(TorchEngine, RefinesEveryRowBeforeAPassLeftToIbp) {
  Model model = test::build(test::kThreeReluNet);
  std::unique_ptr<Engine> engine = engine_for(model);
  Options opt;
  opt.refine_budget = 100;
  BoundsReport eigen_report, torch_report;
  expect_linear_equal(model, *engine, two_boxes(), {Mat::Identity(1, 1)}, opt, torch_report,
                      eigen_report);
  EXPECT_EQ(eigen_report.ibp_budget, 1);
  EXPECT_EQ(eigen_report.refined, 2 + 3);
  EXPECT_DOUBLE_EQ(eigen_report.cost, 16 + 88 + 48 + 16 + 88 + 82 + 48);
  EXPECT_EQ(torch_report.ibp_budget, eigen_report.ibp_budget);
  EXPECT_EQ(torch_report.refined, eigen_report.refined);
  EXPECT_DOUBLE_EQ(torch_report.cost, eigen_report.cost);
}

// With a budget that leaves every pass out, a call with K boxes reports K times what one box
// does in the Eigen engine: each box's bounds were cut short the same way.
TEST(TorchEngine, ReportsWhatItCutShortPerBox) {
  Model model = test::build(kConvNet);
  std::unique_ptr<Engine> engine = engine_for(model);
  const int k = 3;
  Boxes all{Mat::Constant(k, 84, -0.5), Mat::Constant(k, 84, 0.5)};
  Options cut;
  cut.refine_budget = 1e-3;
  BoundsReport eigen_report, torch_report;
  cut.report = &torch_report;
  ASSERT_TRUE(engine->linear_bounds(all, {Mat::Identity(3, 3)}, cut).ok());
  cut.report = &eigen_report;
  ASSERT_TRUE(linear_bounds(model, {all.lo.row(0).transpose(), all.hi.row(0).transpose()},
                            {Mat::Identity(3, 3)}, cut)
                  .ok());
  EXPECT_EQ(torch_report.boxes, k);
  EXPECT_EQ(eigen_report.boxes, 1);
  EXPECT_GT(eigen_report.ibp_budget, 0);
  EXPECT_EQ(torch_report.ibp_budget, k * eigen_report.ibp_budget);
  EXPECT_EQ(torch_report.elements_ibp, k * eigen_report.elements_ibp);
  EXPECT_EQ(eigen_report.outputs_forward, 1);
  EXPECT_EQ(torch_report.outputs_forward, k);
  EXPECT_TRUE(torch_report.cut_short());
  EXPECT_EQ(torch_report.refined, 0);
}

// An objective that weighs y0 alone, at budget 60 (relevance_test.cc): both engines refine the
// two rows of h2 that y0 reads (52) and not the third, box by box, and agree; without the cone
// neither refines h2 in either box (all three rows straddle 0 in both: 78 > 60).
TEST(TorchEngine, RefinesTheObjectivesConeAsEigenDoes) {
  Model model = test::build(test::two_outputs_net());
  std::unique_ptr<Engine> engine = engine_for(model);
  const Mat c = (Mat(1, 2) << 1, 0).finished();
  for (bool cone : {true, false}) {
    Options opt;
    opt.refine_budget = 60;
    opt.objective_cone = cone;
    BoundsReport eigen_report, torch_report;
    expect_linear_equal(model, *engine, two_boxes(), {c}, opt, torch_report, eigen_report);
    EXPECT_EQ(eigen_report.ibp_budget, cone ? 0 : 2) << cone;
    EXPECT_EQ(torch_report.ibp_budget, eigen_report.ibp_budget) << cone;
    EXPECT_EQ(torch_report.refined, eigen_report.refined) << cone;
    EXPECT_DOUBLE_EQ(torch_report.cost, eigen_report.cost) << cone;
  }
}

TEST(TorchEngine, CudaWithoutGpuIsOneLineError) {
  Model model = test::build(test::kNet1);
  auto e = create(model, {"cuda", false});
  if (e.ok()) GTEST_SKIP() << "a CUDA device is available";
  EXPECT_NE(e.error().message.find("--device cuda"), std::string::npos) << e.error().str();
  EXPECT_EQ(e.error().message.find('\n'), std::string::npos);
  EXPECT_FALSE(create(model, {"tpu", false}).ok());
}

}  // namespace
}  // namespace propdag::torch_engine

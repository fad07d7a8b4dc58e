// Engine::linear_bounds' lower_bias: per box, b_r with a_r . x + b_r below objective row r on
// the whole box, which a verifier's search cuts its boxes down by (clip_box). For CROWN it equals
// the Eigen engine's BoundsOut::lower_bias; for alpha it belongs to the tuned coefficients, and
// every sampled point of a box keeps each row above its line.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "propdag/engine.h"
#include "propdag/torch/torch_engine.h"
#include "propdag/torch/torch_test_util.h"

namespace propdag::torch_engine {
namespace {

using torch_test::engine_for;
using torch_test::expect_close;
using torch_test::load_acasxu;
using torch_test::random_box;

// ACAS Xu 1_1 (5 inputs, 5 outputs), 8 boxes of radius up to 0.3 around random centres, the
// objective prop_2-like margins y_0 - y_j. The lines are checked at 200 points per box.
class TorchLowerBias : public ::testing::Test {
 protected:
  void SetUp() override {
    shared_ = load_acasxu(VNNCOMP_BENCHMARKS, "1_1", "prop_2");
    if (!shared_) GTEST_SKIP() << "shared benchmarks absent";
    std::mt19937 rng(11);
    boxes_ = {Mat(kBoxes, 5), Mat(kBoxes, 5)};
    for (Eigen::Index i = 0; i < kBoxes; ++i) {
      const Interval b = random_box(5, 0.3, rng);
      boxes_.lo.row(i) = b.lo.transpose();
      boxes_.hi.row(i) = b.hi.transpose();
    }
    Mat c = Mat::Zero(4, 5);
    for (int j = 1; j < 5; ++j) c(j - 1, 0) = 1, c(j - 1, j) = -1;
    c_ = {c};
  }

  const Model& model() const { return shared_->first; }
  Interval box(Eigen::Index i) const {
    return {boxes_.lo.row(i).transpose(), boxes_.hi.row(i).transpose()};
  }

  // Every line a_r . x + b_r stays at or below row r at sampled points of its box, and the
  // lines' minima over the box are at most the lower bounds' (they are what those came from,
  // before any intersection).
  void expect_lines_below(const Boxes& y, const std::vector<Mat>& coef, const Mat& bias,
                          const std::string& what) {
    std::mt19937 rng(5);
    for (Eigen::Index i = 0; i < kBoxes; ++i) {
      const Interval b = box(i);
      const Mat& a = coef[static_cast<size_t>(i)];
      const Vec line_min =
          a.cwiseMax(0.0) * b.lo + a.cwiseMin(0.0) * b.hi + bias.row(i).transpose();
      EXPECT_TRUE((line_min.array() <= y.lo.row(i).transpose().array() + 1e-9).all()) << what;
      for (int s = 0; s < 200; ++s) {
        Vec x(5);
        for (Eigen::Index d = 0; d < 5; ++d)
          x[d] = std::uniform_real_distribution<double>(b.lo[d], b.hi[d])(rng);
        auto out = output_bounds(model(), {x, x}, {Method::kIbp});
        ASSERT_TRUE(out.ok());
        const Vec row = c_.front() * out->front().lo;
        const Vec line = a * x + bias.row(i).transpose();
        EXPECT_TRUE((line.array() <= row.array() + 1e-9).all()) << what << " box " << i;
      }
    }
  }

  static constexpr Eigen::Index kBoxes = 8;
  std::optional<std::pair<Model, Spec>> shared_;
  Boxes boxes_;
  std::vector<Mat> c_;
};

TEST_F(TorchLowerBias, CrownEqualsTheEigenEngine) {
  std::unique_ptr<Engine> engine = engine_for(model());
  std::vector<Mat> coef;
  Mat bias;
  auto y = engine->linear_bounds(boxes_, c_, {Method::kCrown}, &coef, nullptr, &bias);
  ASSERT_TRUE(y.ok()) << y.error().str();
  ASSERT_EQ(bias.rows(), kBoxes);
  ASSERT_EQ(bias.cols(), 4);
  for (Eigen::Index i = 0; i < kBoxes; ++i) {
    BoundsOut eigen;
    eigen.want.lower_coef = true;
    auto ref = linear_bounds(model(), box(i), c_, {Method::kCrown}, {}, &eigen);
    ASSERT_TRUE(ref.ok());
    expect_close(eigen.lower_bias, bias.row(i).transpose(), 1e-9, "bias " + std::to_string(i));
  }
  expect_lines_below(*y, coef, bias, "crown");
}

TEST_F(TorchLowerBias, AlphaLinesHoldAndAreTheTunedOnes) {
  std::unique_ptr<Engine> engine = engine_for(model());
  std::vector<Mat> coef;
  Mat bias;
  auto crown = engine->linear_bounds(boxes_, c_, {Method::kCrown});
  ASSERT_TRUE(crown.ok());
  Options alpha{Method::kAlpha};
  alpha.alpha_steps = 20;
  auto y = engine->linear_bounds(boxes_, c_, alpha, &coef, nullptr, &bias);
  ASSERT_TRUE(y.ok()) << y.error().str();
  expect_lines_below(*y, coef, bias, "alpha");
  // Some tuned line's minimum over its box is above CROWN's lower bound: the bias is that of the
  // tuned bound, not CROWN's bound moved onto the tuned coefficients.
  double gain = -1;
  for (Eigen::Index i = 0; i < kBoxes; ++i) {
    const Interval b = box(i);
    const Mat& a = coef[static_cast<size_t>(i)];
    const Vec line_min = a.cwiseMax(0.0) * b.lo + a.cwiseMin(0.0) * b.hi + bias.row(i).transpose();
    gain = std::max(gain, (line_min - crown->lo.row(i).transpose()).maxCoeff());
  }
  EXPECT_GT(gain, 1e-6);
}

TEST_F(TorchLowerBias, NoneForIbp) {
  std::unique_ptr<Engine> engine = engine_for(model());
  std::vector<Mat> coef;
  Mat bias = Mat::Ones(2, 2);
  auto y = engine->linear_bounds(boxes_, c_, {Method::kIbp}, &coef, nullptr, &bias);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(bias.size(), 0);
}

}  // namespace
}  // namespace propdag::torch_engine

// CROWN against IBP, and alpha-CROWN against CROWN, on the 45 ACAS Xu networks with properties
// 1-4: the tighter method (without the final intersection with IBP) is never looser on any
// output, and tighter on average. Bounds carried from a box into its sub-boxes (linear_bounds'
// node_bounds) hold at sampled points and narrow the sub-boxes' bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include "common/testing.h"
#include "propdag/engine.h"
#include "propdag/vnnlib.h"

namespace propdag {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> acas_models(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir + "/acasxu_2023/onnx")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// Per property 1-4, over the 45 networks: checks that `tight`'s bounds lie within `loose`'s on
// every output (up to `tol` times 1 + the output's width) and sums both methods' widths.
struct Widths {
  double loose = 0, tight = 0;
  int64_t count = 0, tighter = 0;
};

void compare_on_acasxu(const Options& loose, const Options& tight, double tol,
                       std::vector<Widths>& widths) {
  std::string dir = common::testing::vnncomp_dir();
  std::vector<std::string> models = acas_models(dir);
  ASSERT_EQ(models.size(), 45u);
  widths.assign(4, {});
  for (int prop = 1; prop <= 4; ++prop) {
    auto spec =
        read_vnnlib(dir + "/acasxu_2023/vnnlib/prop_" + std::to_string(prop) + ".vnnlib.gz");
    ASSERT_TRUE(spec.ok()) << spec.error().str();
    Widths& w = widths[prop - 1];
    for (const std::string& path : models) {
      auto model = Model::load(path);
      ASSERT_TRUE(model.ok()) << model.error().str();
      auto a = output_bounds(*model, spec->hull(), loose);
      auto b = output_bounds(*model, spec->hull(), tight);
      ASSERT_TRUE(a.ok() && b.ok());
      const Interval &x = a->front(), &y = b->front();
      for (Eigen::Index i = 0; i < x.size(); ++i) {
        const double slack = tol * (1 + x.hi[i] - x.lo[i]);
        EXPECT_GE(y.lo[i], x.lo[i] - slack) << path << " prop_" << prop << " output " << i;
        EXPECT_LE(y.hi[i], x.hi[i] + slack) << path << " prop_" << prop << " output " << i;
        w.loose += x.hi[i] - x.lo[i];
        w.tight += y.hi[i] - y.lo[i];
        w.tighter += (y.hi[i] - y.lo[i]) < (x.hi[i] - x.lo[i]);
        ++w.count;
      }
    }
  }
}

TEST(AcasXuTest, CrownNeverLooserThanIbp) {
  if (common::testing::vnncomp_dir().empty()) GTEST_SKIP() << "no VNN-COMP benchmarks";
  Options ibp{Method::kIbp}, crown{Method::kCrown};
  crown.intersect_ibp = false;
  std::vector<Widths> widths;
  ASSERT_NO_FATAL_FAILURE(compare_on_acasxu(ibp, crown, 1e-9, widths));
  for (int prop = 1; prop <= 4; ++prop) {
    const Widths& w = widths[prop - 1];
    std::printf(
        "prop_%d: mean output width IBP %.4f  CROWN %.4f  (CROWN tighter on %lld of %lld)\n", prop,
        w.loose / w.count, w.tight / w.count, static_cast<long long>(w.tighter),
        static_cast<long long>(w.count));
    EXPECT_LT(w.tight, w.loose) << "prop_" << prop;
  }
}

// alpha-CROWN starts from CROWN's slopes and keeps the best bound, so it is never looser; on the
// whole boxes of props 1-4 it is tighter on average.
TEST(AcasXuTest, AlphaNeverLooserThanCrown) {
  if (common::testing::vnncomp_dir().empty()) GTEST_SKIP() << "no VNN-COMP benchmarks";
  Options crown{Method::kCrown}, alpha{Method::kAlpha};
  crown.intersect_ibp = alpha.intersect_ibp = false;
  std::vector<Widths> widths;
  ASSERT_NO_FATAL_FAILURE(compare_on_acasxu(crown, alpha, 1e-9, widths));
  for (int prop = 1; prop <= 4; ++prop) {
    const Widths& w = widths[prop - 1];
    std::printf("prop_%d: total output width CROWN %.1f  alpha %.1f\n", prop, w.loose, w.tight);
    EXPECT_LT(w.tight, w.loose) << "prop_" << prop;
  }
}

// Down a chain of nested boxes (prop_1's box halved 24 times, each time along its widest
// dimension, into a randomly chosen half), every node's bounds computed with those of the
// enclosing box carried in (as verify does) contain the node's value at sampled points of the
// box, and so do the output bounds. Prints how the output widths compare with bounds from the box
// alone: per box the difference is small and goes either way; over verify's searches it adds up
// (acasxu_verify_test.py, test_bounds_carried_into_halves_prove_within_a_budget).
TEST(AcasXuTest, BoundsCarriedIntoSubBoxesHold) {
  if (common::testing::vnncomp_dir().empty()) GTEST_SKIP() << "no VNN-COMP benchmarks";
  const std::string dir = common::testing::vnncomp_dir();
  auto spec = read_vnnlib(dir + "/acasxu_2023/vnnlib/prop_1.vnnlib.gz");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  const std::vector<std::string> models = acas_models(dir);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (Method method : {Method::kCrown, Method::kAlpha}) {
    for (size_t m = 0; m < models.size(); m += 11) {
      auto model = Model::load(models[m]);
      ASSERT_TRUE(model.ok()) << model.error().str();
      const std::vector<Mat> c{Mat::Identity(5, 5)};
      Interval box = spec->hull();
      std::vector<Interval> carried;
      double carried_width = 0, fresh_width = 0;
      for (int level = 0; level < 25; ++level) {
        if (level > 0) {
          Eigen::Index d = 0;
          (box.hi - box.lo).maxCoeff(&d);
          const double mid = 0.5 * (box.lo[d] + box.hi[d]);
          (unit(rng) < 0.5 ? box.hi[d] : box.lo[d]) = mid;
        }
        BoundsIn in;
        in.node_bounds = &carried;
        BoundsOut got;
        got.want.node_bounds = true;
        auto y = linear_bounds(*model, box, c, {method}, in, &got);
        auto z = linear_bounds(*model, box, c, {method});
        ASSERT_TRUE(y.ok() && z.ok());
        carried = std::move(got.node_bounds);
        ASSERT_EQ(carried.size(), static_cast<size_t>(model->dag().size()));
        carried_width += (y->hi - y->lo).sum();
        fresh_width += (z->hi - z->lo).sum();
        for (int k = 0; k < 50; ++k) {
          Vec x(5);
          for (Eigen::Index d = 0; d < 5; ++d)
            x[d] = box.lo[d] + unit(rng) * (box.hi[d] - box.lo[d]);
          auto exact = ibp_all(*model, {x, x});
          ASSERT_TRUE(exact.ok());
          for (size_t n = 0; n < carried.size(); ++n) {
            const Vec& v = (*exact)[n].lo;
            for (Eigen::Index i = 0; i < v.size(); ++i) {
              const double slack = 1e-9 * (1 + std::abs(v[i]));
              ASSERT_GE(v[i], carried[n].lo[i] - slack) << models[m] << " level " << level;
              ASSERT_LE(v[i], carried[n].hi[i] + slack) << models[m] << " level " << level;
            }
          }
          const Vec& out = (*exact)[model->dag().outputs()[0]].lo;
          for (Eigen::Index i = 0; i < 5; ++i) {
            const double slack = 1e-9 * (1 + std::abs(out[i]));
            ASSERT_GE(out[i], y->lo[i] - slack) << models[m] << " level " << level;
            ASSERT_LE(out[i], y->hi[i] + slack) << models[m] << " level " << level;
          }
        }
      }
      std::printf("%s %s: output width summed over the boxes: carried %.3f, fresh %.3f\n",
                  fs::path(models[m]).filename().c_str(),
                  method == Method::kCrown ? "crown" : "alpha", carried_width, fresh_width);
    }
  }
}

}  // namespace
}  // namespace propdag

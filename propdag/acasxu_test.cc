// CROWN against IBP, and alpha-CROWN against CROWN, on the 45 ACAS Xu networks with properties
// 1-4: the tighter method (without the final intersection with IBP) is never looser on any
// output, and tighter on average.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

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

TEST(AcasXuTest, CrownNeverLooserThanIbp) {
  std::string dir = common::testing::vnncomp_dir();
  if (dir.empty()) GTEST_SKIP() << "no VNN-COMP benchmarks";
  std::vector<std::string> models = acas_models(dir);
  ASSERT_EQ(models.size(), 45u);
  Options ibp{Method::kIbp}, crown{Method::kCrown};
  crown.intersect_ibp = false;
  for (int prop = 1; prop <= 4; ++prop) {
    auto spec =
        read_vnnlib(dir + "/acasxu_2023/vnnlib/prop_" + std::to_string(prop) + ".vnnlib.gz");
    ASSERT_TRUE(spec.ok()) << spec.error().str();
    double ibp_width = 0, crown_width = 0;
    int64_t count = 0, tighter = 0;
    for (const std::string& path : models) {
      auto model = Model::load(path);
      ASSERT_TRUE(model.ok()) << model.error().str();
      auto a = output_bounds(*model, spec->hull(), ibp);
      auto b = output_bounds(*model, spec->hull(), crown);
      ASSERT_TRUE(a.ok() && b.ok());
      const Interval &x = a->front(), &y = b->front();
      for (Eigen::Index i = 0; i < x.size(); ++i) {
        EXPECT_GE(y.lo[i], x.lo[i] - 1e-9) << path << " output " << i;
        EXPECT_LE(y.hi[i], x.hi[i] + 1e-9) << path << " output " << i;
        ibp_width += x.hi[i] - x.lo[i];
        crown_width += y.hi[i] - y.lo[i];
        tighter += (y.hi[i] - y.lo[i]) < (x.hi[i] - x.lo[i]);
        ++count;
      }
    }
    std::printf(
        "prop_%d: mean output width IBP %.4f  CROWN %.4f  (CROWN tighter on %lld of %lld)\n", prop,
        ibp_width / count, crown_width / count, static_cast<long long>(tighter),
        static_cast<long long>(count));
    EXPECT_LT(crown_width, ibp_width) << "prop_" << prop;
  }
}

// alpha-CROWN starts from CROWN's slopes and keeps the best bound, so it is never looser; on the
// whole boxes of props 1-4 it is tighter on average.
TEST(AcasXuTest, AlphaNeverLooserThanCrown) {
  std::string dir = common::testing::vnncomp_dir();
  if (dir.empty()) GTEST_SKIP() << "no VNN-COMP benchmarks";
  std::vector<std::string> models = acas_models(dir);
  ASSERT_EQ(models.size(), 45u);
  Options crown{Method::kCrown}, alpha{Method::kAlpha};
  crown.intersect_ibp = alpha.intersect_ibp = false;
  for (int prop = 1; prop <= 4; ++prop) {
    auto spec =
        read_vnnlib(dir + "/acasxu_2023/vnnlib/prop_" + std::to_string(prop) + ".vnnlib.gz");
    ASSERT_TRUE(spec.ok()) << spec.error().str();
    double crown_width = 0, alpha_width = 0;
    for (const std::string& path : models) {
      auto model = Model::load(path);
      ASSERT_TRUE(model.ok()) << model.error().str();
      auto a = output_bounds(*model, spec->hull(), crown);
      auto b = output_bounds(*model, spec->hull(), alpha);
      ASSERT_TRUE(a.ok() && b.ok());
      const Interval &x = a->front(), &y = b->front();
      for (Eigen::Index i = 0; i < x.size(); ++i) {
        const double tol = 1e-9 * (1 + x.hi[i] - x.lo[i]);
        EXPECT_GE(y.lo[i], x.lo[i] - tol) << path << " output " << i;
        EXPECT_LE(y.hi[i], x.hi[i] + tol) << path << " output " << i;
        crown_width += x.hi[i] - x.lo[i];
        alpha_width += y.hi[i] - y.lo[i];
      }
    }
    std::printf("prop_%d: total output width CROWN %.1f  alpha %.1f\n", prop, crown_width,
                alpha_width);
    EXPECT_LT(alpha_width, crown_width) << "prop_" << prop;
  }
}

}  // namespace
}  // namespace propdag

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

}  // namespace
}  // namespace propdag

// shapeonnx over every VNN-COMP model: all values static, ONNX's own inference agrees, checker
// passes.
#include <gtest/gtest.h>

#include <cstdio>

#include "common/onnx_io.h"
#include "common/testing.h"
#include "shapeonnx/crosscheck.h"
#include "shapeonnx/infer.h"

namespace shapeonnx {
namespace {

TEST(ModelsTest, EveryVnncompModelGetsStaticShapesThatOnnxAgreesWith) {
  const auto models = common::testing::vnncomp_models();
  if (models.empty()) GTEST_SKIP() << "VNN-COMP benchmarks not found";
  int64_t all_values = 0, all_static = 0, compared = 0, mismatches = 0, ok = 0;
  for (const std::string& path : models) {
    auto g = common::load_graph(path);
    ASSERT_TRUE(g.ok()) << g.error().str();
    auto s = infer(*g);
    EXPECT_TRUE(s.ok()) << s.error().str();
    if (!s.ok()) continue;
    const Stats st = stats(*g);
    EXPECT_EQ(st.values, st.static_values) << path;
    all_values += st.values;
    all_static += st.static_values;
    const CrossCheck cc = cross_check(*g);
    EXPECT_EQ(cc.mismatches, 0) << path << ": " << cc.first_mismatch;
    compared += cc.compared;
    mismatches += cc.mismatches;
    auto checked = common::check_graph(*g);
    EXPECT_TRUE(checked.ok()) << checked.error().str();
    ok += s.ok() && checked.ok() && st.values == st.static_values && cc.mismatches == 0;
  }
  std::printf(
      "shapeonnx: %d/%zu models ok; %lld/%lld values static; onnx compared %lld, "
      "mismatches %lld\n",
      static_cast<int>(ok), models.size(), static_cast<long long>(all_static),
      static_cast<long long>(all_values), static_cast<long long>(compared),
      static_cast<long long>(mismatches));
  EXPECT_EQ(ok, static_cast<int64_t>(models.size()));
}

}  // namespace
}  // namespace shapeonnx

// SplitOptions::threads: a small input's box searched in parts on several threads gives the
// verdicts of one thread, on an ACAS Xu instance whose published answers agree across tools; parts
// that run out of their bound computations hand what they left open on, and a counterexample
// that only splitting finds is found in a part and holds (checked by evaluating the network).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/testing.h"
#include "propdag/engine.h"
#include "propdag/test_util.h"
#include "propdag/verify.h"
#include "propdag/vnnlib.h"

namespace propdag {
namespace {

struct Verified {
  VerifyResult result;
  Model model;
  Spec spec;
};

Verified verify_acas(const std::string& net, const std::string& prop, int threads,
                     int64_t part_boxes) {
  const std::string dir = common::testing::vnncomp_dir() + "/acasxu_2023/";
  auto model = Model::load(dir + "onnx/ACASXU_run2a_" + net + "_batch_2000.onnx.gz");
  EXPECT_TRUE(model.ok()) << model.error().str();
  auto spec = read_vnnlib(dir + "vnnlib/" + prop + ".vnnlib.gz");
  EXPECT_TRUE(spec.ok()) << spec.error().str();
  Options options;
  options.method = Method::kCrown;
  SplitOptions split;
  split.max_boxes = 2000000;
  split.seconds = 120;
  split.threads = threads;
  split.part_boxes = part_boxes;
  auto r = verify(*model, *spec, options, split);
  EXPECT_TRUE(r.ok()) << r.error().str();
  return {r.ok() ? *r : VerifyResult{}, std::move(*model), std::move(*spec)};
}

// 2_5 prop_1 holds (nnenum, alpha-beta-CROWN, NeuralSAT); it takes thousands of bound
// computations. Parts of 300 hand their open boxes on many times over.
TEST(ParallelSplitTest, ThreadsProveWhatOneThreadProves) {
  if (common::testing::vnncomp_dir().empty()) GTEST_SKIP() << "no VNN-COMP benchmarks";
  const Verified one = verify_acas("2_5", "prop_1", 1, 20000);
  ASSERT_TRUE(one.result.verified);
  ASSERT_GT(one.result.boxes, 3000);
  for (int64_t part_boxes : {300, 20000}) {
    const Verified two = verify_acas("2_5", "prop_1", 2, part_boxes);
    EXPECT_TRUE(two.result.verified) << part_boxes;
    EXPECT_FALSE(two.result.falsified) << part_boxes;
    EXPECT_EQ(two.result.cases_proved, 1);
  }
}

// A budget too small for the proof leaves the case open with threads too, not proved.
TEST(ParallelSplitTest, ABudgetTooSmallLeavesTheCaseOpen) {
  if (common::testing::vnncomp_dir().empty()) GTEST_SKIP() << "no VNN-COMP benchmarks";
  const std::string dir = common::testing::vnncomp_dir() + "/acasxu_2023/";
  auto model = Model::load(dir + "onnx/ACASXU_run2a_2_5_batch_2000.onnx.gz");
  auto spec = read_vnnlib(dir + "vnnlib/prop_1.vnnlib.gz");
  ASSERT_TRUE(model.ok() && spec.ok());
  Options options;
  SplitOptions split;
  split.max_boxes = 500;
  split.threads = 2;
  split.part_boxes = 100;
  auto r = verify(*model, *spec, options, split);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_FALSE(r->verified);
  EXPECT_FALSE(r->falsified);
  EXPECT_LE(r->boxes, 500 + 2 * 100);  // parts running when the budget ran out finish theirs
}

// y = relu(0.06 - sum_i |x_i - c_i|) over x in [-1, 1]^6; unsafe: y >= 0.01, met only within
// the L1 ball of radius 0.05 around c (about 2e-11 of the box). Outside it y is 0 with a gradient
// of 0, so sampling, pattern and gradient searches over the whole box find nothing; splitting
// finds a point in one of the parts, and the network evaluated there meets the condition.
constexpr const char* kSpike = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,6] x) => (float[1,1] y)
      <float[1,6] c = {0.37, -0.21, 0.55, -0.63, 0.12, 0.48}, float[6,1] ones = {1, 1, 1, 1, 1, 1},
       float[1,1] r = {0.06}> {
    d = Sub(x, c)
    e = Sub(c, x)
    p = Relu(d)
    q = Relu(e)
    a = Add(p, q)
    s = MatMul(a, ones)
    t = Sub(r, s)
    y = Relu(t)
  })";

TEST(ParallelSplitTest, APartsCounterexampleHolds) {
  Model m = test::build(kSpike);
  const Spec spec = test::box_spec(std::vector<double>(6, -1), std::vector<double>(6, 1), 1,
                                   "(assert (>= Y_0 0.01))");
  for (int threads : {1, 2}) {
    Options options;
    SplitOptions split;
    split.max_boxes = 2000000;
    split.seconds = 60;
    split.threads = threads;
    split.part_boxes = 50;
    auto r = verify(m, spec, options, split);
    ASSERT_TRUE(r.ok()) << r.error().str();
    ASSERT_TRUE(r->falsified) << threads;
    EXPECT_GT(r->boxes, 50) << threads;  // found by splitting
    const double c[] = {0.37, -0.21, 0.55, -0.63, 0.12, 0.48};
    double l1 = 0;
    for (int i = 0; i < 6; ++i) l1 += std::abs(r->counterexample[i] - c[i]);
    EXPECT_LE(l1, 0.05 + 1e-9) << threads;
    auto confirmed = confirm_counterexample(m, spec, r->counterexample);
    ASSERT_TRUE(confirmed.ok()) << confirmed.error().str();
    EXPECT_TRUE(*confirmed) << threads;
  }
}

}  // namespace
}  // namespace propdag

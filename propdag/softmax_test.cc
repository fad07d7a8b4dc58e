// Softmax's relaxation (ops/activation.cc): lines through exp, the sum and its reciprocal.
#include <gtest/gtest.h>

#include <cmath>
#include <iomanip>
#include <random>
#include <vector>

#include "propdag/engine.h"
#include "propdag/test_util.h"

namespace propdag {
namespace {

// Softmax over the last axis (groups of 4 consecutive elements) and over axis 1 (pairs 4 apart).
constexpr const char* kTwoAxes = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,2,4] x) => (float[1,2,4] a, float[1,2,4] b) {
    a = Softmax <axis = 2> (x)
    b = Softmax <axis = 1> (x)
  })";

// softmax(v) at the element `at` of the group of `len` elements `stride` apart from `base`.
double softmax_at(const Vec& v, int64_t base, int64_t len, int64_t stride, int64_t at) {
  double sum = 0;
  for (int64_t j = 0; j < len; ++j) sum += std::exp(v[base + j * stride]);
  return std::exp(v[at]) / sum;
}

// Every output lies between its two lines (within the rounding of softmax_at: an output interval
// kept as a line is attained at a corner) at 20,000 random points and all 256 corners of a box
// with narrow, wide and one-point elements. On the narrow group both lines of every output are
// kept (they beat the output interval at the centre).
TEST(Softmax, LinesHoldAtSampledPointsAndCorners) {
  Model m = test::build(kTwoAxes);
  const Vec lo{{-0.3, 0.2, 1.0, 0.5, -2.0, 0.1, 0.7, -0.4}};
  const Vec width{{0.1, 0.05, 0.0, 0.2, 4.0, 0.1, 3.0, 0.02}};
  const Interval x{lo, lo + width};
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  for (int node : m.dag().outputs()) {
    const bool last_axis = m.dag().node(node).name == "a";
    const int64_t len = last_axis ? 4 : 2, stride = last_axis ? 1 : 4;
    const BoundOp* op = m.op(node);
    const Interval out = op->interval({&x});
    const Relaxation r = op->relax({&x}, out);
    ASSERT_EQ(r.kind, Relaxation::Kind::kLinear);
    if (last_axis)  // the narrow group: both lines of each output kept, with all 4 inputs
      for (Eigen::Index i = 0; i < 4; ++i) {
        EXPECT_EQ(SpMat(r.lo_map().row(i)).nonZeros(), 4) << i;
        EXPECT_EQ(SpMat(r.up_map().row(i)).nonZeros(), 4) << i;
      }
    for (int trial = 0; trial < 20000 + 256; ++trial) {
      Vec p(8);
      for (Eigen::Index i = 0; i < 8; ++i) {
        const double t = trial < 20000 ? u(rng) : ((trial - 20000) >> i) & 1;
        p[i] = x.lo[i] + t * width[i];
      }
      const Vec below = r.lo_map() * p + r.lo_bias, above = r.up_map() * p + r.up_bias;
      for (int64_t i = 0; i < 8; ++i) {
        const int64_t base = last_axis ? i / 4 * 4 : i % 4;
        const double y = softmax_at(p, base, len, stride, i);
        ASSERT_LE(below[i], y + 1e-15) << std::setprecision(17) << below[i] - y << " output " << i
                                       << " of " << m.dag().node(node).name;
        ASSERT_GE(above[i], y - 1e-15) << std::setprecision(17) << above[i] - y << " output " << i
                                       << " of " << m.dag().node(node).name;
      }
    }
  }
}

// y = softmax(x W) sums to 1. IBP bounds each y_i on its own: the sum's bounds are 0.222 wide on
// this box. CROWN's lines follow x through every y_i, and their slopes nearly cancel in the sum:
// its bounds hold 1 and are 0.0297 wide (0.134 of IBP's; asserted: below 0.2). With Softmax
// relaxed to its output interval (before its lines) CROWN's width was IBP's.
TEST(Softmax, CrownFollowsTheInputsThroughTheLines) {
  Model m = test::build(test::kSoftmaxNet);
  const Interval box{Vec::Constant(2, -0.05), Vec::Constant(2, 0.05)};
  Options ibp, crown;
  ibp.method = Method::kIbp;
  auto i = output_bounds(m, box, ibp), c = output_bounds(m, box, crown);
  ASSERT_TRUE(i.ok()) << i.error().str();
  ASSERT_TRUE(c.ok()) << c.error().str();
  const double ibp_width = (*i)[0].hi[0] - (*i)[0].lo[0];
  const double crown_width = (*c)[0].hi[0] - (*c)[0].lo[0];
  EXPECT_GT(ibp_width, 0.1);
  EXPECT_LE((*c)[0].lo[0], 1.0);
  EXPECT_GE((*c)[0].hi[0], 1.0);
  EXPECT_LT(crown_width, 0.2 * ibp_width) << crown_width << " against IBP's " << ibp_width;
}

}  // namespace
}  // namespace propdag

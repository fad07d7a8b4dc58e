// Hand-worked bounds of the rules of increasing curves that are convex or concave everywhere
// (Exp, Softplus, Log: relax.h's bent_lines): the chord on the outer side, the tangent parallel
// to it on the inner side, and that tangent's point tuned by alpha. Every expected value below was
// computed by hand (shown in the comments).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "propdag/engine.h"
#include "propdag/relax.h"
#include "propdag/test_util.h"

namespace propdag {
namespace {

using test::box;
using test::output_bounds_of;

Model bent_model(const std::string& body, const std::string& inputs, const std::string& outputs) {
  return test::build("<ir_version: 8, opset_import: [\"\" : 15]>\n g (" + inputs + ") => (" +
                     outputs + ")\n" + body);
}

// x in [0, 2]: exp x in [1, e^2], and y = exp x - x in [1 - 2, e^2 - 0] = [-1, e^2] by
// intervals. CROWN: above, the chord 1 + k x with k = (e^2 - 1) / 2, so y <= 1 + (k - 1) x <=
// e^2 - 2 (at x = 2, where y reaches it); below, the tangent of that slope, at t = log k:
// exp x >= k (x - t) + k, so y >= (k - 1) x + k (1 - t) >= k (1 - log k) = -0.516 (at x = 0).
// alpha tunes the tangent point towards 0, whose tangent 1 + x gives y >= 1, the minimum.
TEST(BentTest, ExpChordAboveTangentsBelow) {
  Model m = bent_model("{ e = Exp(x)\n y = Sub(e, x) }", "float[1] x", "float[1] e, float[1] y");
  const double e2 = std::exp(2.0), k = (e2 - 1) / 2;
  auto ibp = output_bounds_of(m, box({0}, {2}), Method::kIbp);
  EXPECT_DOUBLE_EQ(ibp[0].lo[0], 1);
  EXPECT_DOUBLE_EQ(ibp[0].hi[0], e2);
  EXPECT_DOUBLE_EQ(ibp[1].lo[0], -1);
  EXPECT_DOUBLE_EQ(ibp[1].hi[0], e2);
  auto crown = output_bounds_of(m, box({0}, {2}), Method::kCrown);
  EXPECT_NEAR(crown[1].lo[0], k * (1 - std::log(k)), 1e-9);
  EXPECT_LE(crown[1].lo[0], k * (1 - std::log(k)));
  EXPECT_NEAR(crown[1].hi[0], e2 - 2, 1e-9);
  EXPECT_GE(crown[1].hi[0], e2 - 2);
  auto alpha = output_bounds_of(m, box({0}, {2}), Method::kAlpha);
  EXPECT_GT(alpha[1].lo[0], 0.5);
  EXPECT_LE(alpha[1].lo[0], 1);
  // A one-point box: the point.
  auto point = output_bounds_of(m, box({0.5}, {0.5}), Method::kCrown);
  EXPECT_NEAR(point[0].lo[0], std::exp(0.5), 1e-12);
  EXPECT_NEAR(point[0].hi[0], std::exp(0.5), 1e-12);
}

// Softplus on [-1, 1]: softplus(x) - softplus(-x) = x, so the chord's slope is 1/2 and the
// tangent of that slope is at sigmoid(t) = 1/2, t = 0: log 2 + x / 2 below; the chord
// softplus(-1) + (x + 1) / 2 = log(2 cosh(1/2)) + x / 2 above. y = softplus(x) - x / 2 =
// log(2 cosh(x / 2)) lies in [log 2, log(2 cosh(1/2))], which CROWN gives exactly; intervals give
// [softplus(-1) - 1/2, softplus(1) + 1/2].
TEST(BentTest, SoftplusChordAboveTangentBelow) {
  const Lines lines = softplus_lines(-1, 1);
  EXPECT_NEAR(lines.lo_slope, 0.5, 1e-12);
  EXPECT_NEAR(lines.lo_bias, std::log(2.0), 1e-9);
  EXPECT_NEAR(lines.up_slope, 0.5, 1e-12);
  EXPECT_NEAR(lines.up_bias, std::log(2 * std::cosh(0.5)), 1e-9);
  EXPECT_EQ(lines.lo_t_min, -1);
  EXPECT_EQ(lines.lo_t_max, 1);
  Model m = bent_model("<float[1] h = {0.5}>\n{ s = Softplus(x)\n t = Mul(x, h)\n y = Sub(s, t) }",
                       "float[1] x", "float[1] y");
  const double sp1 = std::log1p(std::exp(1.0)), spm1 = std::log1p(std::exp(-1.0));
  auto ibp = output_bounds_of(m, box({-1}, {1}), Method::kIbp);
  EXPECT_NEAR(ibp[0].lo[0], spm1 - 0.5, 1e-12);
  EXPECT_NEAR(ibp[0].hi[0], sp1 + 0.5, 1e-12);
  auto crown = output_bounds_of(m, box({-1}, {1}), Method::kCrown);
  EXPECT_NEAR(crown[0].lo[0], std::log(2.0), 1e-9);
  EXPECT_LE(crown[0].lo[0], std::log(2.0));
  EXPECT_NEAR(crown[0].hi[0], std::log(2 * std::cosh(0.5)), 1e-9);
  EXPECT_GE(crown[0].hi[0], std::log(2 * std::cosh(0.5)));
}

// Log on [1, e] (concave): the chord k (x - 1) with k = 1 / (e - 1) below; above, the tangent of
// slope k, at t = 1 / k = e - 1: log(e - 1) + k (x - (e - 1)). y = log x - x: intervals
// [0 - e, 1 - 1] = [-e, 0]; CROWN's lower bound (k - 1) x - k at x = e is 1 - e, the minimum;
// its upper bound (k - 1) x + log(e - 1) - 1 at x = 1 is k + log(e - 1) - 2 = -0.877. alpha
// tunes the upper tangent towards t = 1, whose x - 1 gives y <= -1, the maximum. Where the
// interval reaches 0 or below, log has no line: [-inf, log u].
TEST(BentTest, LogChordBelowTangentsAbove) {
  const double e = std::numbers::e, k = 1 / (e - 1);
  const Lines lines = log_lines(1, e);
  EXPECT_NEAR(lines.lo_slope, k, 1e-12);
  EXPECT_NEAR(lines.lo_bias, -k, 1e-9);
  EXPECT_NEAR(lines.up_slope, k, 1e-9);
  EXPECT_NEAR(lines.up_bias, std::log(e - 1) - 1, 1e-9);
  EXPECT_EQ(lines.up_t_min, 1);
  EXPECT_EQ(lines.up_t_max, e);
  const Lines open = log_lines(0, 2);
  EXPECT_EQ(open.lo_bias, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(open.up_bias, std::log(2.0));
  Model m = bent_model("{ g = Log(x)\n y = Sub(g, x) }", "float[1] x", "float[1] y");
  auto ibp = output_bounds_of(m, box({1}, {e}), Method::kIbp);
  EXPECT_NEAR(ibp[0].lo[0], -e, 1e-12);
  EXPECT_NEAR(ibp[0].hi[0], 0, 1e-12);
  auto crown = output_bounds_of(m, box({1}, {e}), Method::kCrown);
  EXPECT_NEAR(crown[0].lo[0], 1 - e, 1e-9);
  EXPECT_LE(crown[0].lo[0], 1 - e);
  EXPECT_NEAR(crown[0].hi[0], k + std::log(e - 1) - 2, 1e-9);
  EXPECT_GE(crown[0].hi[0], k + std::log(e - 1) - 2);
  auto alpha = output_bounds_of(m, box({1}, {e}), Method::kAlpha);
  EXPECT_LT(alpha[0].hi[0], -0.95);
  EXPECT_GE(alpha[0].hi[0], -1);
  // Inputs reaching 0: unbounded below, log 2 - 0 above.
  auto wide = output_bounds_of(m, box({0}, {2}), Method::kCrown);
  EXPECT_EQ(wide[0].lo[0], -std::numeric_limits<double>::infinity());
}

}  // namespace
}  // namespace propdag

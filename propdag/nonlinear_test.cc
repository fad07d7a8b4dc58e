// Hand-worked bounds of the nonlinear rules (ops/elementwise_nonlinear.cc,
// ops/elementwise_compare.cc) and the reductions: every expected value below was computed by hand
// (shown in the comments).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "propdag/engine.h"
#include "propdag/test_util.h"

namespace propdag {
namespace {

using test::box;

Model build(const std::string& body, const std::string& inputs, const std::string& outputs) {
  return test::build("<ir_version: 8, opset_import: [\"\" : 15]>\n g (" + inputs + ") => (" +
                     outputs + ")\n" + body);
}

using test::output_bounds_of;

// x, z in [-1, 2]:
//   x * x  in [0, 4]      (a square: the product of independent factors would give [-2, 4])
//   x * z  in [-2, 4]     (corners: 1, -2, -2, 4)
//   x ^ 2  in [0, 4];  x ^ 3 in [-1, 8]
TEST(NonlinearTest, ProductsAndPowers) {
  Model m = build(
      "<float[1] two = {2}, float[1] three = {3}>\n"
      "{ s = Mul(x, x)\n p = Mul(x, z)\n q = Pow(x, two)\n c = Pow(x, three) }",
      "float[1] x, float[1] z", "float[1] s, float[1] p, float[1] q, float[1] c");
  for (Method method : {Method::kIbp, Method::kCrown}) {
    auto y = output_bounds_of(m, box({-1, -1}, {2, 2}), method, true);
    ASSERT_EQ(y.size(), 4u);
    EXPECT_DOUBLE_EQ(y[0].lo[0], 0);
    EXPECT_DOUBLE_EQ(y[0].hi[0], 4);
    EXPECT_DOUBLE_EQ(y[1].lo[0], -2);
    EXPECT_DOUBLE_EQ(y[1].hi[0], 4);
    EXPECT_NEAR(y[2].lo[0], 0, 1e-9);
    EXPECT_NEAR(y[2].hi[0], 4, 1e-9);
    EXPECT_DOUBLE_EQ(y[3].lo[0], -1);
    EXPECT_DOUBLE_EQ(y[3].hi[0], 8);
  }
}

// w = Cast<to = float>(1 / z) * v, z in [-1, 1] (1 / z unbounded), v in [0, 1]: the Cast's
// identity map turns [-inf, inf] into NaN bounds (inf - inf), and the product, which read its NaN
// corners as 0 * inf = 0, gave [0, 0]. A product with a NaN bound is the whole line.
TEST(NonlinearTest, ProductOfNanBoundsIsUnbounded) {
  Model m = build("<float[1] one = {1}>\n{ q = Div(one, z)\n f = Cast<to = 1>(q)\n w = Mul(f, v) }",
                  "float[1] z, float[1] v", "float[1] w");
  auto y = output_bounds_of(m, box({-1, 0}, {1, 1}), Method::kIbp, false);
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].lo[0], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(y[0].hi[0], std::numeric_limits<double>::infinity());
}

// r = Relu(Cast(1 / z)), z in [-1, 1]: 1 / z takes every value outside (-1, 1), so r is [0, inf).
// The Cast's identity map of [-inf, inf] gives NaN (inf - inf), which a max with 0 could read as a
// finite bound. NaN bounds are made [-inf, inf] where they arise: IBP gives [0, inf) for r and for
// Max(f, 0); CROWN and alpha, whose lines through an unbounded ReLU say nothing, give a lower bound
// of -inf on their own and [0, inf) intersected with IBP's; no NaN anywhere.
TEST(NonlinearTest, NanBoundsBecomeUnboundedNotFinite) {
  Model m = build(
      "<float[1] one = {1}, float[1] zero = {0}>\n"
      "{ q = Div(one, z)\n f = Cast<to = 1>(q)\n r = Relu(f)\n s = Max(f, zero) }",
      "float[1] z", "float[1] r, float[1] s");
  const double inf = std::numeric_limits<double>::infinity();
  for (Method method : {Method::kIbp, Method::kCrown, Method::kAlpha}) {
    for (bool intersect : {false, true}) {
      auto y = output_bounds_of(m, box({-1}, {1}), method, intersect);
      ASSERT_EQ(y.size(), 2u);
      for (const Interval& b : y) {
        const std::string what = std::to_string(static_cast<int>(method)) + " " +
                                 std::to_string(intersect) + " " + std::to_string(&b - &y[0]);
        EXPECT_EQ(b.hi[0], inf) << what;
        if (method == Method::kIbp || intersect)
          EXPECT_EQ(b.lo[0], 0) << what;
        else
          EXPECT_EQ(b.lo[0], -inf) << what;
      }
    }
  }
}

// y = x^2 - 2x for x in [-1, 2]; true range [-1, 3] (minimum at x = 1, maximum at x = -1).
// IBP:   x^2 in [0, 4], -2x in [-4, 2]: y in [-4, 6].
// CROWN: x^2 >= tangent at 0.5: x - 0.25;  x^2 <= chord: x + 2.
//        y >= (x - 0.25) - 2x = -x - 0.25 >= -2.25;  y <= (x + 2) - 2x = 2 - x <= 3.
TEST(NonlinearTest, SquareRelaxationBeatsIntervals) {
  Model m = build(
      "<float[1] two = {2}, float[1] m2 = {-2}>\n"
      "{ q = Pow(x, two)\n t = Mul(x, m2)\n y = Add(q, t) }",
      "float[1] x", "float[1] y");
  auto ibp = output_bounds_of(m, box({-1}, {2}), Method::kIbp, false);
  EXPECT_NEAR(ibp[0].lo[0], -4, 1e-9);
  EXPECT_NEAR(ibp[0].hi[0], 6, 1e-9);
  auto crown = output_bounds_of(m, box({-1}, {2}), Method::kCrown, false);
  EXPECT_NEAR(crown[0].lo[0], -2.25, 1e-9);
  EXPECT_NEAR(crown[0].hi[0], 3, 1e-9);
}

// x in [0, 4]:   sin in [sin 4, 1] (pi/2 inside, 3 pi/2 = 4.71 not);  cos in [-1, 1] (0, pi).
// x in [1, 2]:   cos in [cos 2, cos 1] (no extremum inside).
// x in [-1.5, 2.5]: floor in [-2, 2].
TEST(NonlinearTest, SinCosFloor) {
  Model m = build("{ s = Sin(x)\n c = Cos(x)\n f = Floor(x) }", "float[1] x",
                  "float[1] s, float[1] c, float[1] f");
  auto a = output_bounds_of(m, box({0}, {4}), Method::kCrown, true);
  EXPECT_DOUBLE_EQ(a[0].lo[0], std::sin(4.0));
  EXPECT_DOUBLE_EQ(a[0].hi[0], 1);
  EXPECT_DOUBLE_EQ(a[1].lo[0], -1);
  EXPECT_DOUBLE_EQ(a[1].hi[0], 1);
  auto b = output_bounds_of(m, box({1}, {2}), Method::kIbp, false);
  EXPECT_DOUBLE_EQ(b[1].lo[0], std::cos(2.0));
  EXPECT_DOUBLE_EQ(b[1].hi[0], std::cos(1.0));
  auto c = output_bounds_of(m, box({-1.5}, {2.5}), Method::kIbp, false);
  EXPECT_DOUBLE_EQ(c[2].lo[0], -2);
  EXPECT_DOUBLE_EQ(c[2].hi[0], 2);
}

// x in [1, 2], z in [2, 4]: x / z in [1/4, 1], -3 / z in [-3/2, -3/4].
// z in [-1, 1] contains 0: both unbounded.
TEST(NonlinearTest, Quotient) {
  Model m = build("<float[1] c = {-3}>\n{ q = Div(x, z)\n r = Div(c, z) }",
                  "float[1] x, float[1] z", "float[1] q, float[1] r");
  auto a = output_bounds_of(m, box({1, 2}, {2, 4}), Method::kCrown, true);
  EXPECT_DOUBLE_EQ(a[0].lo[0], 0.25);
  EXPECT_DOUBLE_EQ(a[0].hi[0], 1);
  EXPECT_DOUBLE_EQ(a[1].lo[0], -1.5);
  EXPECT_DOUBLE_EQ(a[1].hi[0], -0.75);
  auto b = output_bounds_of(m, box({1, -1}, {2, 1}), Method::kIbp, false);
  for (const Interval& y : b) {
    EXPECT_EQ(y.lo[0], -std::numeric_limits<double>::infinity());
    EXPECT_EQ(y.hi[0], std::numeric_limits<double>::infinity());
  }
}

// A [1, 2] with entries in [0, 1], B [2, 1] with entries in [-1, 1]: each a_k b_k in [-1, 1], so
// A B in [-2, 2]; with a_1 in [1, 1] (fixed) and b_1 in [0.5, 1]: a_1 b_1 in [0.5, 1], A B in
// [-0.5, 2].
TEST(NonlinearTest, MatMulOfTwoVariables) {
  Model m = build("{ y = MatMul(a, b) }", "float[1,2] a, float[2,1] b", "float[1,1] y");
  auto y = output_bounds_of(m, box({0, 0, -1, -1}, {1, 1, 1, 1}), Method::kCrown, true);
  EXPECT_DOUBLE_EQ(y[0].lo[0], -2);
  EXPECT_DOUBLE_EQ(y[0].hi[0], 2);
  y = output_bounds_of(m, box({1, 0, 0.5, -1}, {1, 1, 1, 1}), Method::kIbp, false);
  EXPECT_DOUBLE_EQ(y[0].lo[0], -0.5);
  EXPECT_DOUBLE_EQ(y[0].hi[0], 2);
}

// x, z in [0, 1]: y = x z - x = x (z - 1), true range [-1, 0]. IBP: [0, 1] - [0, 1] = [-1, 1].
// CROWN, McCormick planes: x z >= 0 x + 0 z - 0 = 0 and x z <= 1 x + 0 z - 0 = x, so
// y >= -x >= -1 and y <= x - x = 0. The same for a [1, 2] B [2, 1] - sum(A), entries in [0, 1]:
// a1 (b1 - 1) + a2 (b2 - 1) in [-2, 0]; IBP [0, 2] - [0, 2] = [-2, 2].
TEST(NonlinearTest, ProductPlanesBeatIntervals) {
  Model m = build(
      "<float[2,1] one = {1, 1}>\n"
      "{ p = Mul(x, z)\n y = Sub(p, x)\n q = MatMul(a, b)\n s = MatMul(a, one)\n"
      "  r = Sub(q, s) }",
      "float[1] x, float[1] z, float[1,2] a, float[2,1] b", "float[1] y, float[1,1] r");
  Interval in = box({0, 0, 0, 0, 0, 0}, {1, 1, 1, 1, 1, 1});
  auto ibp = output_bounds_of(m, in, Method::kIbp, false);
  EXPECT_DOUBLE_EQ(ibp[0].lo[0], -1);
  EXPECT_DOUBLE_EQ(ibp[0].hi[0], 1);
  EXPECT_DOUBLE_EQ(ibp[1].hi[0], 2);
  for (Method method : {Method::kCrown, Method::kAlpha}) {
    auto y = output_bounds_of(m, in, method, false);
    EXPECT_NEAR(y[0].lo[0], -1, 1e-9);
    EXPECT_NEAR(y[0].hi[0], 0, 1e-9);
    EXPECT_NEAR(y[1].lo[0], -2, 1e-9);
    EXPECT_NEAR(y[1].hi[0], 0, 1e-9);
  }
}

// y = sin x - x and w = cos x on x in [-1, 1] (true ranges [-0.1585, 0.1585], [cos 1, 1]).
// IBP: sin x - x in [-sin 1 - 1, sin 1 + 1]. CROWN: sin x between sin(1) x -+ d with
// d = cos 1 - sin 1 (pi/2 - 1) (relax_test), so y in +-(1 - sin 1 + d) = +-0.218523.
// cos on [-1, 1]: chord slope 0, lines cos 1 and 1, the exact range.
TEST(NonlinearTest, SineLinesBeatIntervals) {
  Model m =
      build("{ s = Sin(x)\n y = Sub(s, x)\n w = Cos(x) }", "float[1] x", "float[1] y, float[1] w");
  const double d = std::cos(1.0) - std::sin(1.0) * (std::numbers::pi / 2 - 1);
  const double half = 1 - std::sin(1.0) + d;
  EXPECT_NEAR(half, 0.218523, 1e-6);
  auto ibp = output_bounds_of(m, box({-1}, {1}), Method::kIbp, false);
  EXPECT_NEAR(ibp[0].hi[0], 1 + std::sin(1.0), 1e-12);
  auto y = output_bounds_of(m, box({-1}, {1}), Method::kCrown, false);
  EXPECT_NEAR(y[0].lo[0], -half, 1e-9);
  EXPECT_NEAR(y[0].hi[0], half, 1e-9);
  EXPECT_NEAR(y[1].lo[0], std::cos(1.0), 1e-9);
  EXPECT_NEAR(y[1].hi[0], 1, 1e-9);
}

// z in [1, 2]: y = 1 / z + z / 2, true range [sqrt 2, 3/2]. IBP: [1/2, 1] + [1/2, 1] = [1, 2].
// CROWN: 1/z <= 3/2 - z/2 (chord), so y <= 3/2; 1/z >= 4/3 - 4z/9 (tangent at 3/2), so
// y >= 4/3 + z/18 >= 4/3 + 1/18 = 25/18.
TEST(NonlinearTest, QuotientLinesBeatIntervals) {
  Model m = build(
      "<float[1] one = {1}, float[1] half = {0.5}>\n"
      "{ r = Div(one, z)\n h = Mul(z, half)\n y = Add(r, h) }",
      "float[1] z", "float[1] y");
  auto ibp = output_bounds_of(m, box({1}, {2}), Method::kIbp, false);
  EXPECT_DOUBLE_EQ(ibp[0].lo[0], 1);
  EXPECT_DOUBLE_EQ(ibp[0].hi[0], 2);
  auto y = output_bounds_of(m, box({1}, {2}), Method::kCrown, false);
  EXPECT_NEAR(y[0].lo[0], 25.0 / 18, 1e-9);
  EXPECT_NEAR(y[0].hi[0], 1.5, 1e-9);
}

// x [2, 3] row 0 in [1, 2], row 1 in [0, 3]. ReduceSum over axis 1: [3, 6] and [0, 9];
// ReduceMean over axis 1: [1, 2] and [0, 3]; both exact affine maps (CROWN = IBP here).
// ReduceMean over all axes (no axes): [0.5, 2.5].
TEST(NonlinearTest, Reductions) {
  Model m = build(
      "<int64[1] ax = {1}>\n"
      "{ s = ReduceSum<keepdims = 0>(x, ax)\n m = ReduceMean<axes = [1]>(x)\n"
      " a = ReduceMean<keepdims = 0>(x) }",
      "float[2,3] x", "float[2] s, float[2,1] m, float[] a");
  for (Method method : {Method::kIbp, Method::kCrown}) {
    auto y = output_bounds_of(m, box({1, 1, 1, 0, 0, 0}, {2, 2, 2, 3, 3, 3}), method, false);
    ASSERT_EQ(y.size(), 3u);
    EXPECT_NEAR(y[0].lo[0], 3, 1e-12);
    EXPECT_NEAR(y[0].hi[0], 6, 1e-12);
    EXPECT_NEAR(y[0].lo[1], 0, 1e-12);
    EXPECT_NEAR(y[0].hi[1], 9, 1e-12);
    EXPECT_NEAR(y[1].lo[0], 1, 1e-12);
    EXPECT_NEAR(y[1].hi[1], 3, 1e-12);
    EXPECT_NEAR(y[2].lo[0], 0.5, 1e-12);
    EXPECT_NEAR(y[2].hi[0], 2.5, 1e-12);
  }
}

// Cast, x in [-1.5, 2.7]: to int64 truncates, [-1, 2]; to float is exact; to bool [0, 1] (0 is
// inside). CROWN alone (no IBP intersection) takes trunc's lines x - 1 <= t <= x + 1: [-2.5, 3.7].
// x in [0.5, 2]: bool is [1, 1].
TEST(CompareTest, Cast) {
  Model m = build("{ i = Cast<to = 7>(x)\n f = Cast<to = 1>(x)\n b = Cast<to = 9>(x) }",
                  "float[1] x", "int64[1] i, float[1] f, bool[1] b");
  auto y = output_bounds_of(m, box({-1.5}, {2.7}), Method::kIbp, false);
  EXPECT_DOUBLE_EQ(y[0].lo[0], -1);
  EXPECT_DOUBLE_EQ(y[0].hi[0], 2);
  EXPECT_DOUBLE_EQ(y[1].lo[0], -1.5);
  EXPECT_DOUBLE_EQ(y[1].hi[0], 2.7);
  EXPECT_DOUBLE_EQ(y[2].lo[0], 0);
  EXPECT_DOUBLE_EQ(y[2].hi[0], 1);
  y = output_bounds_of(m, box({-1.5}, {2.7}), Method::kCrown, false);
  EXPECT_NEAR(y[0].lo[0], -2.5, 1e-12);
  EXPECT_NEAR(y[0].hi[0], 3.7, 1e-12);
  EXPECT_NEAR(y[1].lo[0], -1.5, 1e-12);
  EXPECT_NEAR(y[1].hi[0], 2.7, 1e-12);
  y = output_bounds_of(m, box({0.5}, {2}), Method::kCrown, true);
  EXPECT_DOUBLE_EQ(y[0].lo[0], 0);
  EXPECT_DOUBLE_EQ(y[0].hi[0], 2);
  EXPECT_DOUBLE_EQ(y[2].lo[0], 1);
  EXPECT_DOUBLE_EQ(y[2].hi[0], 1);
}

// z = Clip(x, 0, 6) - x/2, x in [-2, 4]; true range [0, 2].
//   IBP: [0, 4] + [-2, 1] = [-2, 5].
//   CROWN: ReLU-like lines (l = -2, u = 4): x <= Clip <= 2/3 x + 4/3, so z in [x/2, x/6 + 4/3]
//   = [-1, 2].
// w = Clip(x, 0, 2) - x/2, x in [-1, 3]; true range [0, 1]. IBP: [0, 2] + [-1.5, 0.5].
//   CROWN: chord slope 1/2 through the kinks: x/2 <= Clip <= x/2 + 1, so w in [0, 1].
// v = Min(x, 1) - x/2, x in [-1, 3]; true range [-0.5, 0.5]. IBP: [-1, 1] + [-1.5, 0.5].
//   CROWN: 1 - relu(1 - x), relu lines on [-2, 2]: 0 <= relu(t) <= t/2 + 1, so
//   x/2 - 1/2 <= Min <= 1 and v in [-1/2, 3/2].
TEST(CompareTest, ClipAndMinWithConstant) {
  Model m = build(
      "<float zero = {0}, float six = {6}, float two = {2}, float[1] one = {1},"
      " float[1] half = {-0.5}>\n"
      "{ c = Clip(x, zero, six)\n h = Mul(x, half)\n z = Add(c, h)\n"
      " d = Clip(x, zero, two)\n w = Add(d, h)\n n = Min(x, one)\n v = Add(n, h) }",
      "float[1] x", "float[1] z, float[1] w, float[1] v");
  auto a = output_bounds_of(m, box({-2}, {4}), Method::kIbp, false);
  EXPECT_NEAR(a[0].lo[0], -2, 1e-12);
  EXPECT_NEAR(a[0].hi[0], 5, 1e-12);
  a = output_bounds_of(m, box({-2}, {4}), Method::kCrown, false);
  EXPECT_NEAR(a[0].lo[0], -1, 1e-12);
  EXPECT_NEAR(a[0].hi[0], 2, 1e-12);
  auto b = output_bounds_of(m, box({-1}, {3}), Method::kIbp, false);
  EXPECT_NEAR(b[1].lo[0], -1.5, 1e-12);
  EXPECT_NEAR(b[1].hi[0], 2.5, 1e-12);
  EXPECT_NEAR(b[2].lo[0], -2.5, 1e-12);
  EXPECT_NEAR(b[2].hi[0], 1.5, 1e-12);
  b = output_bounds_of(m, box({-1}, {3}), Method::kCrown, false);
  EXPECT_NEAR(b[1].lo[0], 0, 1e-12);
  EXPECT_NEAR(b[1].hi[0], 1, 1e-12);
  EXPECT_NEAR(b[2].lo[0], -0.5, 1e-12);
  EXPECT_NEAR(b[2].hi[0], 1.5, 1e-12);
}

// x in [-1, 2], z in [0, 1], w in [3, 4]: Max(x, z) in [0, 2], Min(x, z) in [-1, 1],
// Equal(x, z) in [0, 1], Equal(x, w) in [0, 0] (they cannot meet).
// ArgMax of (x0, x1, x2) in ([0, 1], [2, 3], [2.5, 4]): x2 >= 2.5 > 1 rules out index 0, x1 may
// still reach 3 >= 2.5: [1, 2]. With x2 in [3.5, 4] only index 2 remains.
TEST(CompareTest, MinMaxEqualArgMax) {
  Model m = build(
      "{ mx = Max(x, z)\n mn = Min(x, z)\n e = Equal(x, z)\n f = Equal(x, w)\n"
      " a = ArgMax<axis = 0, keepdims = 0>(t) }",
      "float[1] x, float[1] z, float[1] w, float[3] t",
      "float[1] mx, float[1] mn, bool[1] e, bool[1] f, int64[] a");
  for (Method method : {Method::kIbp, Method::kCrown}) {
    auto y = output_bounds_of(m, box({-1, 0, 3, 0, 2, 2.5}, {2, 1, 4, 1, 3, 4}), method, false);
    ASSERT_EQ(y.size(), 5u);
    EXPECT_DOUBLE_EQ(y[0].lo[0], 0);
    EXPECT_DOUBLE_EQ(y[0].hi[0], 2);
    EXPECT_DOUBLE_EQ(y[1].lo[0], -1);
    EXPECT_DOUBLE_EQ(y[1].hi[0], 1);
    EXPECT_DOUBLE_EQ(y[2].lo[0], 0);
    EXPECT_DOUBLE_EQ(y[2].hi[0], 1);
    EXPECT_DOUBLE_EQ(y[3].lo[0], 0);
    EXPECT_DOUBLE_EQ(y[3].hi[0], 0);
    EXPECT_DOUBLE_EQ(y[4].lo[0], 1);
    EXPECT_DOUBLE_EQ(y[4].hi[0], 2);
  }
  auto y = output_bounds_of(m, box({-1, 0, 3, 0, 2, 3.5}, {2, 1, 4, 1, 3, 4}), Method::kIbp, false);
  EXPECT_DOUBLE_EQ(y[4].lo[0], 2);
  EXPECT_DOUBLE_EQ(y[4].hi[0], 2);
}

// MaxPool's lines, through o = max(x) - x0 for x in a 2 x 2 window (its true range is [0, 1]):
//   x0 in [1, 3], x1 in [-1, 2], x2 in [0, 0.5], x3 in [-2, 0]: x0 has the largest lower bound,
//   the others' largest upper bound is M = 2 in (1, 3): max >= x0, max <= chord of max(x0, 2)
//   over [1, 3] = 0.5 x0 + 1.5. CROWN: o in [0, 1.5 - 0.5 * 1] = [0, 1]; IBP: [1, 3] - [1, 3].
//   x0 in [3, 4]: x0 dominates, max = x0, o = 0.
//   x0 in [1, 1.5]: u <= M, max <= 2: o <= 2 - x0 <= 1.
TEST(NonlinearTest, MaxPoolLinesByHand) {
  Model m = build(
      "<int64[2] s14 = {1, 4}, int64[2] s11 = {1, 1}, float[4, 1] w = {1, 0, 0, 0}>\n"
      "{ y = MaxPool <kernel_shape = [2, 2]> (x)\n xf = Reshape(x, s14)\n a = MatMul(xf, w)\n"
      "  yf = Reshape(y, s11)\n o = Sub(yf, a) }",
      "float[1, 1, 2, 2] x", "float[1, 1] o");
  struct Case {
    double x0_lo, x0_hi, lo, hi;
  };
  for (Case c : {Case{1, 3, 0, 1}, Case{3, 4, 0, 0}, Case{1, 1.5, 0, 1}}) {
    Interval in = box({c.x0_lo, -1, 0, -2}, {c.x0_hi, 2, 0.5, 0});
    auto ibp = output_bounds_of(m, in, Method::kIbp, false);
    EXPECT_LT(ibp[0].lo[0], c.lo - 0.4);
    for (Method method : {Method::kCrown, Method::kAlpha}) {
      auto y = output_bounds_of(m, in, method, false);
      EXPECT_NEAR(y[0].lo[0], c.lo, 1e-9) << c.x0_lo;
      EXPECT_NEAR(y[0].hi[0], c.hi, 1e-9) << c.x0_lo;
    }
  }
}

// A sigmoid / tanh MLP: alpha tunes the tangent points and must stay sound (checked on a grid
// of points evaluated in double) and never looser than CROWN, here strictly tighter.
TEST(NonlinearTest, TunedTangentsStaySoundAndTighten) {
  Model m = build(
      "<float[2, 3] w1 = {1, -2, 0.5, 1.5, 1, -1}, float[3] b1 = {0.2, -0.1, 0.3},\n"
      " float[3, 3] w2 = {2, -1, 1, -1, 3, 0.5, 1, 1, -2}, float[3, 2] w3 = {1, -1, -2, 1, 1.5, "
      "1}>\n"
      "{ h = MatMul(x, w1)\n hb = Add(h, b1)\n s = Sigmoid(hb)\n g = MatMul(s, w2)\n"
      "  t = Tanh(g)\n y = MatMul(t, w3) }",
      "float[1, 2] x", "float[1, 2] y");
  Interval in = box({-1, -0.5}, {1, 1});
  auto crown = output_bounds_of(m, in, Method::kCrown, false);
  Options o;
  o.method = Method::kAlpha;
  o.intersect_ibp = false;
  o.alpha_steps = 30;
  auto alpha = output_bounds(m, in, o);
  ASSERT_TRUE(alpha.ok());
  const Interval& a = (*alpha)[0];
  double gain = 0;
  for (int j = 0; j < 2; ++j) {
    EXPECT_GE(a.lo[j], crown[0].lo[j] - 1e-12);
    EXPECT_LE(a.hi[j], crown[0].hi[j] + 1e-12);
    gain += (a.lo[j] - crown[0].lo[j]) + (crown[0].hi[j] - a.hi[j]);
  }
  EXPECT_GT(gain, 1e-3);
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  const double w1[2][3] = {{1, -2, 0.5}, {1.5, 1, -1}}, b1[3] = {0.2, -0.1, 0.3};
  const double w2[3][3] = {{2, -1, 1}, {-1, 3, 0.5}, {1, 1, -2}},
               w3[3][2] = {{1, -1}, {-2, 1}, {1.5, 1}};
  for (int i = 0; i <= 40; ++i) {
    for (int k = 0; k <= 40; ++k) {
      double x[2] = {-1 + 2.0 * i / 40, -0.5 + 1.5 * k / 40}, s[3], t[3];
      for (int c = 0; c < 3; ++c) s[c] = sig(x[0] * w1[0][c] + x[1] * w1[1][c] + b1[c]);
      for (int c = 0; c < 3; ++c)
        t[c] = std::tanh(s[0] * w2[0][c] + s[1] * w2[1][c] + s[2] * w2[2][c]);
      for (int j = 0; j < 2; ++j) {
        double y = t[0] * w3[0][j] + t[1] * w3[1][j] + t[2] * w3[2][j];
        ASSERT_GE(y, a.lo[j] - 1e-9);
        ASSERT_LE(y, a.hi[j] + 1e-9);
      }
    }
  }
}

}  // namespace
}  // namespace propdag

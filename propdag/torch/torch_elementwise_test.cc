// The torch engine's scalar and product kernels (torch_elementwise.cc) against the Eigen engine,
// which relaxes the same ops box by box: Sin, Cos, Tanh, Sign, Floor, an even Pow, a square,
// products with and without broadcasting, a constant divided by a variable, and a quotient whose
// divisor straddles 0 in some boxes of a batch and not in others.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>

#include "propdag/engine.h"
#include "propdag/test_util.h"
#include "propdag/torch/torch_test_util.h"

namespace propdag::torch_engine {
namespace {

using torch_test::engine_for;

// y1 mixes every kernel's output; y2 = (cos(x) / t) * sin(h) is unbounded in the boxes where t
// straddles 0, where its product has no planes (its factor's bounds are infinite).
constexpr const char* kElementwiseNet = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,4] x) => (float[1,3] y1, float[1,4] y2)
  <float[4,4] w1 = {1,-1,2,-3,-2,-2,3,-2,1,3,-2,3,-1,-2,-2,2}, float[4] b1 = {0.5,-0.25,0.1,0},
   float[1,4] w2 = {1,0.5,-1,0.25}, float[1] b2 = {0.2}, float[1] two = {2}, float[1] one = {1},
   float[4] num = {1,-2,3,0.5},
   float[3,32] wo = {2,-2,-1,-2,3,2,-2,3,-2,-1,-3,-3,3,-2,3,3,2,-2,-1,-2,3,-1,1,2,-1,3,-2,3,1,3,
                     -3,-1,-2,3,3,-3,-1,1,-2,3,-3,-2,3,-2,3,-1,2,-3,3,2,1,2,3,2,1,1,-1,-1,-3,-1,
                     -2,3,1,3,2,1,-3,2,1,3,-2,-2,3,2,-1,1,-1,2,2,-2,-3,-2,3,3,1,1,-3,1,3,2,3,2,
                     -2,-2,1,2},
   float[3] bo = {0.1,-0.2,0.3}> {
    h = Gemm <transB = 1> (x, w1, b1)
    s = Sin(h)
    c = Cos(x)
    p = Mul(s, c)
    t = Gemm <transB = 1> (x, w2, b2)
    bs = Mul(s, t)
    bc = Mul(t, c)
    sq = Mul(h, h)
    pw = Pow(h, two)
    d = Add(sq, one)
    r = Div(num, d)
    tn = Tanh(h)
    sg = Sign(x)
    fl = Floor(x)
    all = Concat <axis = 1> (p, bs, bc, pw, r, tn, sg, fl)
    y1 = Gemm <transB = 1> (all, wo, bo)
    q = Div(c, t)
    y2 = Mul(q, s)
  })";

// |a - b| <= 1e-9 max(1, |a|, |b|), or both the same infinity.
void expect_same(const Vec& a, const Vec& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (Eigen::Index i = 0; i < a.size(); ++i) {
    if (std::isinf(a[i]) || std::isinf(b[i])) {
      EXPECT_EQ(a[i], b[i]) << what << " element " << i;
      continue;
    }
    const double scale = std::max({1.0, std::abs(a[i]), std::abs(b[i])});
    EXPECT_LE(std::abs(a[i] - b[i]), 1e-9 * scale)
        << what << " element " << i << ": " << a[i] << " vs " << b[i];
  }
}

TEST(TorchElementwise, KernelsEqualTheEigenRulesBoxByBox) {
  Model model = test::build(kElementwiseNet);
  std::unique_ptr<Engine> engine = engine_for(model);
  EXPECT_EQ(engine->per_box_ops(), std::vector<std::string>{});
  std::map<std::string, int> kinds = engine->kinds();
  EXPECT_EQ(kinds["scalar"], 6);   // Sin, Cos, Pow, Tanh, Sign, Floor
  EXPECT_EQ(kinds["product"], 7);  // the four Muls, the square and the two Divs
  // Eight boxes in one call; t = x . w2 + 0.2 straddles 0 in some of them.
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-1, 1);
  const int k = 8;
  Boxes all{Mat(k, 4), Mat(k, 4)};
  for (int b = 0; b < k; ++b)
    for (Eigen::Index i = 0; i < 4; ++i) {
      const double c = 1.5 * u(rng), r = (b % 2 ? 0.05 : 0.6) * std::abs(u(rng));
      all.lo(b, i) = c - r, all.hi(b, i) = c + r;
    }
  int straddling = 0;
  for (Method m : {Method::kIbp, Method::kCrown}) {
    Options opt;
    opt.method = m;
    auto got = engine->output_bounds(all, opt);
    ASSERT_TRUE(got.ok()) << got.error().str();
    for (int b = 0; b < k; ++b) {
      const Interval box{all.lo.row(b).transpose(), all.hi.row(b).transpose()};
      auto ref = output_bounds(model, box, opt);
      ASSERT_TRUE(ref.ok()) << ref.error().str();
      const std::string what = (m == Method::kIbp ? "ibp box " : "crown box ") + std::to_string(b);
      for (size_t o = 0; o < 2; ++o) {
        expect_same((*ref)[o].lo, (*got)[o].lo.row(b).transpose(), what + " lo");
        expect_same((*ref)[o].hi, (*got)[o].hi.row(b).transpose(), what + " hi");
      }
      if (m == Method::kCrown && std::isinf((*got)[1].hi(b, 0))) ++straddling;
    }
  }
  // Both kinds of box are in the batch.
  EXPECT_GT(straddling, 0);
  EXPECT_LT(straddling, k);
  // float32: the kernels compute in double and hand back the engine's dtype; y1's CROWN bounds
  // within float32 rounding of float64's.
  {
    Options crown;
    auto f64 = engine->output_bounds(all, crown);
    auto f32 = engine_for(model, true)->output_bounds(all, crown);
    ASSERT_TRUE(f64.ok() && f32.ok());
    for (int b = 0; b < k; ++b)
      for (Eigen::Index o = 0; o < 3; ++o) {
        const double scale =
            std::max({1.0, std::abs((*f64)[0].lo(b, o)), std::abs((*f64)[0].hi(b, o))});
        EXPECT_NEAR((*f32)[0].lo(b, o), (*f64)[0].lo(b, o), 1e-4 * scale) << b << " " << o;
        EXPECT_NEAR((*f32)[0].hi(b, o), (*f64)[0].hi(b, o), 1e-4 * scale) << b << " " << o;
      }
  }
  // Linear bounds of combinations of y1 over the batch (y2 skipped).
  Options opt;
  const Mat c = (Mat(2, 3) << 1, -2, 0.5, 0, 1, 1).finished();
  auto lin = engine->linear_bounds(all, {c, Mat()}, opt);
  ASSERT_TRUE(lin.ok()) << lin.error().str();
  for (int b = 0; b < k; ++b) {
    const Interval box{all.lo.row(b).transpose(), all.hi.row(b).transpose()};
    auto ref = linear_bounds(model, box, {c, Mat()}, opt);
    ASSERT_TRUE(ref.ok()) << ref.error().str();
    expect_same(ref->lo, lin->lo.row(b).transpose(), "linear lo, box " + std::to_string(b));
    expect_same(ref->hi, lin->hi.row(b).transpose(), "linear hi, box " + std::to_string(b));
  }
}

}  // namespace
}  // namespace propdag::torch_engine

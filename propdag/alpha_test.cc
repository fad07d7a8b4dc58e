// Optimized bounds (alpha.cc) of products: the weights between a product's two pairs of
// McCormick planes are tuned, with every expected value worked out by hand below.
#include <gtest/gtest.h>

#include "propdag/engine.h"
#include "propdag/test_util.h"
#include "propdag/verify.h"

namespace propdag {
namespace {

Model build(const std::string& body, const std::string& inputs, const std::string& outputs) {
  return test::build("<ir_version: 8, opset_import: [\"\" : 15]>\n g (" + inputs + ") => (" +
                     outputs + ")\n" + body);
}

// p = x y on x in [-1, 2], y in [-1, 3]: the corners give 1, -3, -2, 6, so p in [-3, 6].
// CROWN's planes (relax.h): p >= -x - y - 1, whose least value on the box is -6, and
// p <= 3x - y + 3, at most 10. The other planes: p >= 3x + 2y - 6 (least -11) and
// p <= -x + 2y + 2 (at most 9). Weighting the first lower plane w and the second 1 - w gives
// (3 - 4w) x + (2 - 3w) y + 5w - 6, whose least value is -11 + 12w for w <= 2/3, -3 on
// [2/3, 3/4] and 6 - 12w above: -3, the true least value. Above, (4w - 1) x + (2 - 3w) y + w + 2
// is at most 6 for w in [1/4, 2/3], the true greatest value. a b, with a = (x, x) and
// b = (y, y) in the same ranges, sums two such products with one weight per side: [-6, 12]
// tuned, [-12, 20] by CROWN's planes.
TEST(AlphaTest, ProductPlanesAreTunedToTheTrueRange) {
  Model m = build("{ p = Mul(x, y)\n q = MatMul(a, b) }",
                  "float[1] x, float[1] y, float[1,2] a, float[2,1] b", "float[1] p, float[1,1] q");
  const Interval in = test::box({-1, -1, -1, -1, -1, -1}, {2, 3, 2, 2, 3, 3});
  auto crown = test::output_bounds_of(m, in, Method::kCrown, false);
  ASSERT_EQ(crown.size(), 2u);
  EXPECT_NEAR(crown[0].lo[0], -6, 1e-9);
  EXPECT_NEAR(crown[0].hi[0], 10, 1e-9);
  EXPECT_NEAR(crown[1].lo[0], -12, 1e-9);
  EXPECT_NEAR(crown[1].hi[0], 20, 1e-9);
  Options o;
  o.method = Method::kAlpha;
  o.intersect_ibp = false;
  o.alpha_steps = 30;
  auto alpha = output_bounds(m, in, o);
  ASSERT_TRUE(alpha.ok()) << alpha.error().str();
  const std::vector<Interval>& a = *alpha;
  // Sound: the true range's ends are reached at corners (x = -1, y = 3; x = 2, y = 3).
  EXPECT_LE(a[0].lo[0], -3 + 1e-9);
  EXPECT_GE(a[0].hi[0], 6 - 1e-9);
  EXPECT_LE(a[1].lo[0], -6 + 1e-9);
  EXPECT_GE(a[1].hi[0], 12 - 1e-9);
  // Tight: within 1% of the tuned optimum.
  EXPECT_GE(a[0].lo[0], -3.03);
  EXPECT_LE(a[0].hi[0], 6.06);
  EXPECT_GE(a[1].lo[0], -6.06);
  EXPECT_LE(a[1].hi[0], 12.12);
  // Off (as verify bounds): CROWN's planes; the model has nothing else to tune.
  o.alpha_planes = false;
  auto fixed = output_bounds(m, in, o);
  ASSERT_TRUE(fixed.ok()) << fixed.error().str();
  EXPECT_NEAR((*fixed)[0].lo[0], -6, 1e-9);
  EXPECT_NEAR((*fixed)[1].hi[0], 20, 1e-9);
}

// verify's search tunes the planes of the boxes it bounds (beside CROWN's, whose coefficients
// steer it). The same product, unsafe where p <= -3.5: tuned planes prove the whole box (-3),
// CROWN's leave it at -6 and need more bound computations.
TEST(AlphaTest, VerifyTunesPlanes) {
  Model m = build("{ p = Mul(x, y) }", "float[1] x, float[1] y", "float[1] p");
  const Spec unsafe = test::box_spec({-1, -1}, {2, 3}, 1, "(assert (<= Y_0 -3.5))");
  SplitOptions split{1000, 0};
  split.probe_boxes = 0;
  Options o;
  o.intersect_ibp = false;  // IBP gives this one product's range exactly
  o.method = Method::kCrown;
  auto crown = verify(m, unsafe, o, split);
  o.method = Method::kAlpha;
  auto alpha = verify(m, unsafe, o, split);
  ASSERT_TRUE(crown.ok()) << crown.error().str();
  ASSERT_TRUE(alpha.ok()) << alpha.error().str();
  EXPECT_TRUE(crown->verified);
  EXPECT_TRUE(alpha->verified);
  EXPECT_EQ(alpha->boxes, 1);
  EXPECT_GT(crown->boxes, 1);
}

// verify steers its search by a CROWN bound beside the tuned one (case_bounds.cc) that takes the
// tuned bound's intermediate bounds instead of refining its own: those are CROWN's, so the
// steering bound and its coefficients are full CROWN's. Two ReLU layers before the product make
// the refined bounds tighter than IBP's.
TEST(AlphaTest, TunedBoundsIntermediateBoundsAreCrowns) {
  Model m = build(
      "<float[2,2] w1 = {1, -1, 1, 1}, float[2,2] w2 = {1, 2, -1, 1}, float[2,1] v1 = {1, -2},"
      " float[2,1] v2 = {2, 1}>\n"
      "{ h = MatMul(x, w1)\n a = Relu(h)\n g = MatMul(a, v1)\n"
      " k = MatMul(x, w2)\n b = Relu(k)\n l = MatMul(b, v2)\n p = Mul(g, l) }",
      "float[1,2] x", "float[1,1] p");
  const Interval box = test::box({-1, -0.5}, {1, 1.5});
  const std::vector<Mat> objective = {Mat::Identity(1, 1)};
  auto bound = [&](Method method, bool refine, const std::vector<Interval>* nodes, BoundsOut& got) {
    Options o;
    o.method = method;
    o.refine_intermediate = refine;
    o.intersect_ibp = false;
    BoundsIn in;
    in.node_bounds = nodes;
    got.want.lower_coef = true;
    got.want.node_bounds = true;
    auto y = linear_bounds(m, box, objective, o, in, &got);
    EXPECT_TRUE(y.ok()) << y.error().str();
    return y.ok() ? *y : Interval{};
  };
  BoundsOut crown, tuned, steer, unrefined;
  const Interval full = bound(Method::kCrown, true, nullptr, crown);
  const Interval alpha = bound(Method::kAlpha, true, nullptr, tuned);
  const Interval steered = bound(Method::kCrown, false, &tuned.node_bounds, steer);
  const Interval ibp = bound(Method::kCrown, false, nullptr, unrefined);
  EXPECT_GT(alpha.lo[0], full.lo[0] + 1e-3);  // the planes were tuned
  EXPECT_NEAR(steered.lo[0], full.lo[0], 1e-12);
  EXPECT_NEAR(steered.hi[0], full.hi[0], 1e-12);
  EXPECT_TRUE(steer.lower_coef.isApprox(crown.lower_coef, 1e-12));
  EXPECT_NEAR(steer.lower_bias[0], crown.lower_bias[0], 1e-12);
  EXPECT_LT(ibp.lo[0], full.lo[0] - 1e-3);  // without the node bounds: looser
}

// Options::alpha_intermediate (alpha_rows.cc): z = relu(x) - x / 2 on x in [-1, 1] feeds a
// ReLU, so CROWN refines it. relu(x)'s lower line s x (s in [0, 1]) gives z >= (s - 1/2) x,
// whose least value is -|s - 1/2|: -1/2 from CROWN's s = 0 or 1, and 0 (the true least value,
// at x = 0) from s = 1/2, which tuning z's own lower bound reaches. The chord (x + 1) / 2 gives
// z <= 1/2, exact. IBP: [-1/2, 3/2].
TEST(AlphaTest, IntermediateBoundsAreTunedWhenAsked) {
  Model m = build(
      "<float[1,1] h = {-0.5}>\n"
      "{ r = Relu(x)\n k = MatMul(x, h)\n z = Add(r, k)\n y = Relu(z) }",
      "float[1,1] x", "float[1,1] y");
  const Interval box = test::box({-1}, {1});
  const int z = m.dag().find("z");
  auto node_z = [&](bool tune) {
    Options o;
    o.method = Method::kAlpha;
    o.alpha_steps = 30;
    o.alpha_intermediate = tune;
    BoundsOut got;
    got.want.node_bounds = true;
    auto y = linear_bounds(m, box, {Mat::Identity(1, 1)}, o, {}, &got);
    EXPECT_TRUE(y.ok()) << y.error().str();
    EXPECT_LE(y->lo[0], 0);  // y = relu(z) reaches 0 and 1/2 (x = 0, x = +-1)
    EXPECT_GE(y->hi[0], 0.5);
    return got.node_bounds.at(static_cast<size_t>(z));
  };
  const Interval crown = node_z(false), tuned = node_z(true);
  EXPECT_NEAR(crown.lo[0], -0.5, 1e-12);
  EXPECT_NEAR(crown.hi[0], 0.5, 1e-12);
  EXPECT_LE(tuned.lo[0], 1e-12);  // sound: z(0) = 0
  EXPECT_GE(tuned.lo[0], -0.02);  // tight: within 0.02 of it
  EXPECT_NEAR(tuned.hi[0], 0.5, 1e-12);
}

}  // namespace
}  // namespace propdag

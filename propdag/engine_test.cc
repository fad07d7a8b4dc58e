// Hand-worked tiny networks: every bound below was computed by hand (shown in the comments).
#include "propdag/engine.h"

#include <gtest/gtest.h>

#include <chrono>

#include "common/testing.h"
#include "propdag/test_util.h"

namespace propdag {
namespace {

using test::box;
using test::build;
using test::kNet1;

Interval run(const Model& m, const Interval& in, Method method, bool intersect = false) {
  Options o;
  o.method = method;
  o.intersect_ibp = intersect;
  auto b = output_bounds(m, in, o);
  EXPECT_TRUE(b.ok()) << b.error().str();
  return b->front();
}

// Network 1 (test::kNet1, test_util.h): y = relu(x1 + x2) + relu(x1 - x2).

TEST(EngineTest, Net1Ibp) {
  Model m = build(kNet1);
  Interval y = run(m, box({-1, -1}, {1, 1}), Method::kIbp);
  EXPECT_DOUBLE_EQ(y.lo[0], 0);
  EXPECT_DOUBLE_EQ(y.hi[0], 4);
  auto all = ibp_all(m, box({-1, -1}, {1, 1}));
  ASSERT_TRUE(all.ok());
  const Interval& h = (*all)[m.dag().find("h")];
  EXPECT_EQ(h.lo, Vec::Constant(2, -2));
  EXPECT_EQ(h.hi, Vec::Constant(2, 2));
}

TEST(EngineTest, Net1Crown) {
  Model m = build(kNet1);
  Interval y = run(m, box({-1, -1}, {1, 1}), Method::kCrown);
  EXPECT_DOUBLE_EQ(y.lo[0], 0);
  EXPECT_DOUBLE_EQ(y.hi[0], 3);
}

// Two ReLU layers, so that CROWN's refined bounds of the second layer's input are tighter than
// IBP's. With a deadline already past, CROWN refines no intermediate bound: its bounds are then
// exactly those of CROWN without refinement (Options::refine_intermediate = false), looser than
// on time on this network, and still contain every sampled output; alpha takes no step.
TEST(EngineTest, PastADeadlineCrownStopsRefiningAndStaysSound) {
  Model m = build(test::two_relu_net());
  const Interval b = box({-1, -1}, {1, 1});
  Options late{Method::kCrown};
  late.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  ASSERT_TRUE(late.past_deadline());
  EXPECT_FALSE(Options{}.past_deadline());
  Options unrefined{Method::kCrown};
  unrefined.refine_intermediate = false;
  auto on_time = output_bounds(m, b, {Method::kCrown});
  auto past = output_bounds(m, b, late);
  auto plain = output_bounds(m, b, unrefined);
  ASSERT_TRUE(on_time.ok() && past.ok() && plain.ok());
  const Interval &t = on_time->front(), &p = past->front();
  EXPECT_EQ(p.lo, plain->front().lo);
  EXPECT_EQ(p.hi, plain->front().hi);
  EXPECT_LE(p.lo[0], t.lo[0]);
  EXPECT_GE(p.hi[0], t.hi[0]);
  EXPECT_TRUE(p.lo[0] < t.lo[0] || p.hi[0] > t.hi[0]) << "refinement changes nothing here";
  Options alpha_late = late;
  alpha_late.method = Method::kAlpha;
  auto alpha = output_bounds(m, b, alpha_late);
  ASSERT_TRUE(alpha.ok());
  EXPECT_EQ(alpha->front().lo, p.lo);  // no step taken: CROWN's lower bound, unrefined
  for (double x0 = -1; x0 <= 1; x0 += 0.125)
    for (double x1 = -1; x1 <= 1; x1 += 0.125) {
      auto y = output_bounds(m, box({x0, x1}, {x0, x1}), {Method::kIbp});
      ASSERT_TRUE(y.ok());
      EXPECT_GE(y->front().lo[0], p.lo[0] - 1e-12);
      EXPECT_LE(y->front().hi[0], p.hi[0] + 1e-12);
    }
}

// Node bounds passed in are intersected with those computed on the box. Network 1 with h known to
// be in [0, 2] (as a verifier that has split both ReLUs as active would assert): the ReLUs are
// the identity, so CROWN's y = h1 + h2 = 2 x1 in [-2, 2], and with IBP's y in [0, 4]: [0, 2].
// Without them y in [0, 3] (above), and the bounds returned are the box's own: h in [-2, 2].
TEST(EngineTest, NodeBoundsPassedInNarrowThoseOfTheBox) {
  Model m = build(kNet1);
  const int h = m.dag().find("h");
  const std::vector<Mat> c{Mat::Identity(1, 1)};
  const Interval in = box({-1, -1}, {1, 1});
  BoundsOut got;
  got.want.node_bounds = true;
  auto y = linear_bounds(m, in, c, {Method::kCrown}, {}, &got);
  ASSERT_TRUE(y.ok()) << y.error().str();
  EXPECT_DOUBLE_EQ(y->hi[0], 3);
  std::vector<Interval> nodes = got.node_bounds;
  ASSERT_EQ(nodes.size(), static_cast<size_t>(m.dag().size()));
  EXPECT_EQ(nodes[h].lo, Vec::Constant(2, -2));
  EXPECT_EQ(nodes[h].hi, Vec::Constant(2, 2));

  for (Interval& n : nodes) n = Interval{};  // empty entries: nothing known
  nodes[h] = {Vec::Constant(2, 0), Vec::Constant(2, 2)};
  BoundsIn known;
  known.node_bounds = &nodes;
  y = linear_bounds(m, in, c, {Method::kCrown}, known, &got);
  ASSERT_TRUE(y.ok()) << y.error().str();
  EXPECT_DOUBLE_EQ(y->lo[0], 0);
  EXPECT_DOUBLE_EQ(y->hi[0], 2);
  EXPECT_EQ(got.node_bounds[h].lo, Vec::Constant(2, 0));

  y = linear_bounds(m, in, c, {Method::kIbp}, known, &got);
  ASSERT_TRUE(y.ok()) << y.error().str();
  EXPECT_TRUE(got.node_bounds.empty());
}

// Network 2: a bias, a residual connection from x, and x shared by two branches.
//   h = [x1 + x2 + 1, x1 - x2],  r = relu(h),  y = r1 + r2 - x1   (the -x1 is a second MatMul
//   on x, added to the first branch by a two-variable Add).
//
// IBP:   h1 in [-1, 3], h2 in [-2, 2];  r1 in [0, 3], r2 in [0, 2];  -x1 in [-1, 1];  y in [-1, 6].
// CROWN: relu(h1), l=-1 u=3: upper r1 <= 0.75 h1 + 0.75, lower r1 >= h1 (u > -l: slope 1).
//        relu(h2), l=-2 u=2: upper r2 <= 0.5 h2 + 1,    lower r2 >= 0.
//        upper: 0.75 (x1 + x2 + 1) + 0.75 + 0.5 (x1 - x2) + 1 - x1 = 0.25 x1 + 0.25 x2 + 2.5 <= 3
//        lower: (x1 + x2 + 1) + 0 - x1 = x2 + 1 >= 0.       So y in [0, 3].
const char* kNet2 = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,2] x) => (float[1,1] y)
  <float[2,2] w1 = {1, 1, 1, -1}, float[2] b1 = {1, 0}, float[2,1] w2 = {1, 1},
   float[2,1] p = {-1, 0}> {
    h0 = MatMul(x, w1)
    h = Add(h0, b1)
    r = Relu(h)
    z = MatMul(r, w2)
    s = MatMul(x, p)
    y = Add(z, s)
  })";

TEST(EngineTest, Net2ResidualIbpAndCrown) {
  Model m = build(kNet2);
  Interval in = box({-1, -1}, {1, 1});
  Interval ibp = run(m, in, Method::kIbp);
  EXPECT_DOUBLE_EQ(ibp.lo[0], -1);
  EXPECT_DOUBLE_EQ(ibp.hi[0], 6);
  Interval crown = run(m, in, Method::kCrown);
  EXPECT_DOUBLE_EQ(crown.lo[0], 0);
  EXPECT_DOUBLE_EQ(crown.hi[0], 3);
}

// Network 3: CROWN's intermediate bounds. x in [-1, 1]^2, h = [x1 + x2, x1 - x2],
// r = relu(h), g = r1 - r2 (a second hidden layer of one neuron), y = relu(g).
// g's IBP bounds: [0 - 2, 2 - 0] = [-2, 2]. g's CROWN bounds: lower r1 >= 0, -r2 >= -(0.5 h2 + 1)
//   -> g >= -0.5 (x1 - x2) - 1 >= -2;  upper r1 <= 0.5 h1 + 1, -r2 <= 0 -> g <= 0.5 (x1 + x2) + 1
//   <= 2: the same [-2, 2], so y's relaxation is the same as IBP's: upper 0.5 g + 1.
// y: IBP [0, 2]. CROWN upper: 0.5 g + 1 with g <= 0.5 h1 + 1 - 0 -> 0.25 (x1 + x2) + 1.5 <= 2;
// lower: relu lower slope 0 -> 0.  So [0, 2] for both; y's bounds never get looser.
const char* kNet3 = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,2] x) => (float[1,1] y)
  <float[2,2] w1 = {1, 1, 1, -1}, float[2,1] w2 = {1, -1}> {
    h = MatMul(x, w1)
    r = Relu(h)
    g = MatMul(r, w2)
    y = Relu(g)
  })";

TEST(EngineTest, Net3TwoLayers) {
  Model m = build(kNet3);
  Interval in = box({-1, -1}, {1, 1});
  Interval ibp = run(m, in, Method::kIbp), crown = run(m, in, Method::kCrown);
  EXPECT_DOUBLE_EQ(ibp.lo[0], 0);
  EXPECT_DOUBLE_EQ(ibp.hi[0], 2);
  EXPECT_DOUBLE_EQ(crown.lo[0], 0);
  EXPECT_DOUBLE_EQ(crown.hi[0], 2);
}

// Linear objectives: for Net1, y - 0 and -y give [0, 3] and [-3, 0]; for the objective
// 2 y the bounds double (CROWN is linear in the objective).
TEST(EngineTest, LinearObjectives) {
  Model m = build(kNet1);
  Mat c(3, 1);
  c << 1, -1, 2;
  auto b = linear_bounds(m, box({-1, -1}, {1, 1}), {c});
  ASSERT_TRUE(b.ok()) << b.error().str();
  EXPECT_DOUBLE_EQ(b->lo[0], 0);
  EXPECT_DOUBLE_EQ(b->hi[0], 3);
  EXPECT_DOUBLE_EQ(b->lo[1], -3);
  EXPECT_DOUBLE_EQ(b->hi[1], 0);
  EXPECT_DOUBLE_EQ(b->lo[2], 0);
  EXPECT_DOUBLE_EQ(b->hi[2], 6);
}

// alpha-CROWN. Network 4: x in [-1, 1], h = 2 x, r = relu(h), y = 0.5 r - 0.5 x (= relu(x) -
// 0.5 x, whose true range is [0, 0.5]).
// CROWN: relu on [-2, 2]: lower line r >= 0 (u > -l is false), so y >= -0.5 x >= -0.5; upper line
//   r <= 0.5 h + 1 = x + 1, so y <= 0.5 (x + 1) - 0.5 x = 0.5, the true maximum: [-0.5, 0.5].
// With any lower slope a in [0, 1]: r >= a h = 2 a x, y >= (a - 0.5) x >= -|a - 0.5|, best at
//   a = 0.5: y >= 0, the true minimum. The upper bound only uses the upper line: still 0.5.
// Each objective row has its own slope: for 3 y, CROWN gives -1.5 and the tuned bound 0 again.
const char* kNet4 = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,1] x) => (float[1,1] y)
  <float[1] two = {2}, float[1] half = {0.5}> {
    h = Mul(x, two)
    r = Relu(h)
    a = Mul(r, half)
    b = Mul(x, half)
    y = Sub(a, b)
  })";

TEST(EngineTest, AlphaTunesTheReluLowerLine) {
  Model m = build(kNet4);
  Interval in = box({-1}, {1});
  Interval crown = run(m, in, Method::kCrown, true);
  EXPECT_DOUBLE_EQ(crown.lo[0], -0.5);
  EXPECT_DOUBLE_EQ(crown.hi[0], 0.5);
  Interval alpha = run(m, in, Method::kAlpha, true);
  EXPECT_LE(alpha.lo[0], 0);  // sound: y(0) = 0
  EXPECT_GT(alpha.lo[0], -1e-6);
  EXPECT_DOUBLE_EQ(alpha.hi[0], 0.5);
  Mat c(2, 1);
  c << 1, 3;
  Options o;
  o.method = Method::kAlpha;
  BoundsOut got;
  got.want.lower_coef = true;
  auto b = linear_bounds(m, in, {c}, o, {}, &got);
  ASSERT_TRUE(b.ok()) << b.error().str();
  const Mat& coef = got.lower_coef;
  for (Eigen::Index r = 0; r < 2; ++r) {
    EXPECT_LE(b->lo[r], 0);
    EXPECT_GT(b->lo[r], -1e-6);
    // The input coefficients of the tuned lower bound: (a - 0.5) x per unit of objective, ~0.
    EXPECT_NEAR(coef(r, 0), 0, 1e-6);
  }
  // Without steps, the same as CROWN.
  o.alpha_steps = 0;
  b = linear_bounds(m, in, {c}, o);
  ASSERT_TRUE(b.ok());
  EXPECT_DOUBLE_EQ(b->lo[0], -0.5);
  EXPECT_DOUBLE_EQ(b->lo[1], -1.5);
}

// Slopes carried from one call to the next (as a verifier does from a box to its halves): the
// first call tunes Net4's slope to a = 0.5 (the hand-worked optimum above); with no steps at
// all, the second call starts from it and gets the bound 0 that CROWN's own slope (0) misses.
TEST(EngineTest, AlphaStartsFromCarriedSlopes) {
  Model m = build(kNet4);
  Interval in = box({-1}, {1});
  Mat c = Mat::Ones(1, 1);
  Options o;
  o.method = Method::kAlpha;
  BoundsOut got;  // no slopes given: the first call starts from CROWN's slopes
  got.want.slopes = true;
  auto first = linear_bounds(m, in, {c}, o, {}, &got);
  ASSERT_TRUE(first.ok());
  Slopes slopes = got.slopes;
  ASSERT_EQ(slopes.size(), 1u);
  const Mat& relu = slopes[0][m.dag().find("r")];
  ASSERT_EQ(relu.size(), 1);
  EXPECT_NEAR(relu(0, 0), 0.5, 1e-6);
  o.alpha_warm_steps = 0;
  BoundsIn carried;
  carried.slopes = &slopes;
  auto second = linear_bounds(m, in, {c}, o, carried);
  ASSERT_TRUE(second.ok());
  EXPECT_LE(second->lo[0], 0);
  EXPECT_GT(second->lo[0], -1e-6);
  // The same with the slopes given from, and returned into, the same BoundsOut.
  BoundsIn own;
  own.slopes = &got.slopes;
  auto aliased = linear_bounds(m, in, {c}, o, own, &got);
  ASSERT_TRUE(aliased.ok());
  EXPECT_EQ(aliased->lo[0], second->lo[0]);
  ASSERT_EQ(got.slopes.size(), 1u);
  EXPECT_EQ(got.slopes[0][m.dag().find("r")](0, 0), relu(0, 0));
  // Carried slopes worse than CROWN's: on [-1, 0.5] (h in [-2, 1], CROWN's slope 0) CROWN gives
  // y >= -0.5 x >= -0.25 and a = 1 gives y >= 0.5 x >= -0.5; each row keeps the better start.
  // (IBP's bound is -0.25 too, so the intersection is off for this check.)
  o.intersect_ibp = false;
  slopes[0][m.dag().find("r")](0, 0) = 1;
  auto third = linear_bounds(m, box({-1}, {0.5}), {c}, o, carried);
  ASSERT_TRUE(third.ok());
  EXPECT_DOUBLE_EQ(third->lo[0], -0.25);
}

// On Net1, CROWN's lower bound 0 is already the true minimum; the slopes stay at 0 (any other
// slope pair gives -|a1 + a2| - |a1 - a2| < 0), so the tuned bound is exactly 0 too.
TEST(EngineTest, AlphaKeepsATightCrownBound) {
  Model m = build(kNet1);
  Interval alpha = run(m, box({-1, -1}, {1, 1}), Method::kAlpha);
  EXPECT_DOUBLE_EQ(alpha.lo[0], 0);
  EXPECT_DOUBLE_EQ(alpha.hi[0], 3);
}

// A ReLU that crosses zero but reaches the output only through Floor (an interval-only rule): no
// coefficient reaches it, so there is nothing to tune and alpha's bounds are CROWN's.
// x in [-1, 1]: r = relu(x) in [0, 1], p = floor(r) in [0, 1], y = p + x in [-1, 2].
TEST(EngineTest, AlphaWithATunableReluNoCoefficientReaches) {
  Model m = build(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,1] x) => (float[1,1] y) {
      r = Relu(x)
      p = Floor(r)
      y = Add(p, x)
    })");
  Interval in = box({-1}, {1});
  Interval crown = run(m, in, Method::kCrown), alpha = run(m, in, Method::kAlpha);
  EXPECT_DOUBLE_EQ(crown.lo[0], -1);
  EXPECT_DOUBLE_EQ(crown.hi[0], 2);
  EXPECT_DOUBLE_EQ(alpha.lo[0], -1);
  EXPECT_DOUBLE_EQ(alpha.hi[0], 2);
}

TEST(EngineTest, OpWithoutRuleNamesOpAndNode) {
  auto g = common::testing::parse_text(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,2] x) => (float[1,2] y) {
      y = Erf(x)
    })");
  ASSERT_TRUE(g.ok());
  g->nodes[0].name = "the_erf";
  auto m = Model::build(std::move(g).value());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().node, "the_erf");
  EXPECT_EQ(m.error().op, "Erf");
  EXPECT_NE(m.error().message.find("no bound rule for op Erf"), std::string::npos);
}

TEST(EngineTest, WrongInputSizeIsAnError) {
  Model m = build(kNet1);
  auto b = output_bounds(m, box({0}, {1}));
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("input box has 1 elements, the model takes 2"),
            std::string::npos);
}

}  // namespace
}  // namespace propdag

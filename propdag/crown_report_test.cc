// What CROWN reports it cut short (Options::report), and the default refinement budget, on a
// hand-worked network whose pass costs are counted below.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>

#include "propdag/crown.h"
#include "propdag/engine.h"
#include "propdag/test_util.h"
#include "propdag/verify.h"

namespace propdag {
namespace {

using test::box;
using test::build;

// x (2) -> h1 = x w1 (3) -> r1 -> h2 = r1 w2 (3) -> r2 -> y = r2 w3 (1). The inputs of the
// nonlinear ops are h1 and h2. Cost of one row (Crown::row_cost: elements of every node crossed
// plus the weight entries of each affine op): from h1, h1 3 + w1 6 + x 2 = 11, so its pass (3
// rows) costs 33; from h2, 3 + 9 + r1 3 + 11 = 26, 78 for 3 rows; from y, 1 + 3 + r2 3 + 26 = 33.
const std::string kNet = test::two_relu_net();

BoundsReport bound_with(const Model& m, Options o, Interval* y = nullptr) {
  BoundsReport r;
  o.report = &r;
  auto b = output_bounds(m, box({-1, -1}, {1, 1}), o);
  EXPECT_TRUE(b.ok()) << b.error().str();
  if (b.ok() && y != nullptr) *y = b->front();
  return r;
}

TEST(CrownReportTest, FullCrownByDefaultReportsNothingCutShort) {
  Model m = build(kNet);
  EXPECT_TRUE(std::isinf(Options{}.refine_budget));
  BoundsReport r = bound_with(m, Options{});
  EXPECT_EQ(r.boxes, 1);
  EXPECT_EQ(r.refined, 2);
  EXPECT_EQ(r.ibp_budget + r.ibp_deadline + r.ibp_option + r.outputs_forward, 0);
  EXPECT_FALSE(r.cut_short());
}

// Full CROWN's price (what verify's probe reads): h1's and h2's passes over all their rows, 33 +
// 78, and the outputs' rows at 33 each: 144 with one row, 177 with two. On the box above every
// row straddles 0, and the engine's own count of that bound is the same 144.
TEST(CrownReportTest, FullCrownCostPricesEveryRow) {
  Model m = build(kNet);
  EXPECT_DOUBLE_EQ(internal::full_crown_cost(m, Options{}, {1}), 144);
  EXPECT_DOUBLE_EQ(internal::full_crown_cost(m, Options{}, {2}), 177);
  EXPECT_DOUBLE_EQ(bound_with(m, Options{}).cost, 144);
}

TEST(CrownReportTest, BudgetCutsAreCountedWithTheirCost) {
  Model m = build(kNet);
  Options o;
  o.refine_budget = 40;  // h1's pass (33) runs, h2's (78) does not; y's (33 <= 50 x 40) does
  BoundsReport r = bound_with(m, o);
  EXPECT_EQ(r.refined, 1);
  EXPECT_EQ(r.ibp_budget, 1);
  EXPECT_EQ(r.elements_ibp, 3);
  EXPECT_EQ(r.outputs_forward, 0);
  EXPECT_DOUBLE_EQ(r.largest_skipped, 78);
  EXPECT_TRUE(r.cut_short());
  o.refine_budget = 0.5;  // nothing refined, and y's pass (33 > 25) is left out too
  Interval y, full;
  r = bound_with(m, o, &y);
  bound_with(m, Options{}, &full);
  EXPECT_EQ(r.ibp_budget, 2);
  EXPECT_EQ(r.outputs_forward, 1);
  EXPECT_DOUBLE_EQ(r.largest_skipped, 78);
  EXPECT_LE(y.lo[0], full.lo[0]);
  EXPECT_GE(y.hi[0], full.hi[0]);
  EXPECT_TRUE(y.lo[0] < full.lo[0] || y.hi[0] > full.hi[0]);
  // Reports add up over calls.
  BoundsReport sum = bound_with(m, o);
  sum.add(bound_with(m, o));
  EXPECT_EQ(sum.boxes, 2);
  EXPECT_EQ(sum.ibp_budget, 4);
}

TEST(CrownReportTest, DeadlineAndOptionAreToldApart) {
  Model m = build(kNet);
  Options late;
  late.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  BoundsReport r = bound_with(m, late);
  EXPECT_EQ(r.ibp_deadline, 2);
  EXPECT_EQ(r.elements_ibp, 6);
  EXPECT_TRUE(r.cut_short());
  Options off;
  off.refine_intermediate = false;  // asked for: not cut short
  r = bound_with(m, off);
  EXPECT_EQ(r.ibp_option, 2);
  EXPECT_FALSE(r.cut_short());
}

TEST(CrownReportTest, LinearBoundsAndVerifyReportToo) {
  Model m = build(kNet);
  Options o;
  o.refine_budget = 0.5;
  BoundsReport r;
  o.report = &r;
  auto b = linear_bounds(m, box({-1, -1}, {1, 1}), {Mat::Identity(1, 1)}, o);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(r.boxes, 1);
  EXPECT_EQ(r.ibp_budget, 2);
  EXPECT_EQ(r.outputs_forward, 1);
  Spec spec;  // unsafe: y >= 100, which no bound rules out without the final pass either
  spec.num_inputs = 2, spec.num_outputs = 1;
  spec.cases.push_back({box({-1, -1}, {1, 1}), {{Vec::Constant(1, -1), -100}}});
  BoundsReport v;
  o.report = &v;
  auto res = verify(m, spec, o);
  ASSERT_TRUE(res.ok()) << res.error().str();
  EXPECT_GE(v.boxes, 1);
  EXPECT_GE(v.ibp_budget, 2);
  EXPECT_TRUE(v.cut_short());
}

// Network 2 (test_util.h): CROWN refines only the rows of an input of ReLUs that straddle 0. h1's
// two rows straddle (a row costs h1 2 + w1 4 + x 2 = 8: 16); of h2, rows 1 and 3 do (a row costs
// h2 4 + w2 8 + r1 2 + 8 = 22: 44, where all four rows would cost 88); y's pass costs
// 1 + w3 4 + r2 4 + 22 = 31. h2's rows 0 and 2 keep IBP's bounds, and y's bounds are those of
// refining every row, since no relaxation differs.
TEST(CrownReportTest, RefinesOnlyTheRowsThatStraddleZero) {
  Model m = build(test::kStableRowsNet);
  const Interval x = box({-1, -1}, {1, 1});
  Options o;
  o.refine_budget = 44;  // h2's two rows fit, its four would not
  BoundsReport r;
  o.report = &r;
  BoundsOut got;
  got.want.node_bounds = true;
  auto y = linear_bounds(m, x, {Mat::Identity(1, 1)}, o, {}, &got);
  ASSERT_TRUE(y.ok()) << y.error().str();
  const std::vector<Interval>& nodes = got.node_bounds;
  EXPECT_EQ(r.refined, 2);
  EXPECT_FALSE(r.cut_short());
  EXPECT_DOUBLE_EQ(r.cost, 16 + 44 + 31);
  const Interval& h2 = nodes[m.dag().find("h2")];
  EXPECT_EQ(h2.lo, (Vec(4) << 1, -2.5, -4.5, -3.5).finished());  // rows 0, 2: IBP's
  EXPECT_EQ(h2.hi, (Vec(4) << 5, 0.5, -0.5, -0.5).finished());   // rows 1, 3: CROWN's
  EXPECT_DOUBLE_EQ(y->lo[0], 1);
  EXPECT_DOUBLE_EQ(y->hi[0], 4.5);
  // The default budget prices a pass with each dense weight entry at 1/8 (kDenseEntryCost): a
  // row costs h1 2 + 4/8 + 2 = 4.5, h2 4 + 8/8 + 2 + 4.5 = 11.5, y 1 + 4/8 + 4 + 11.5 = 17. On
  // the box it prices h2's pass at its two straddling rows (in all 17 + 9 + 23 = 49); without a
  // box, at all four (17 + 9 + 46 = 72).
  EXPECT_TRUE(std::isinf(default_refine_budget(m, 72)));
  EXPECT_DOUBLE_EQ(default_refine_budget(m, 71), 16);
  auto on_box = default_refine_budget(m, x, 49);
  ASSERT_TRUE(on_box.ok());
  EXPECT_TRUE(std::isinf(*on_box));
  on_box = default_refine_budget(m, x, 48);
  ASSERT_TRUE(on_box.ok());
  EXPECT_DOUBLE_EQ(*on_box, 16);
}

// When a later pass is left to IBP, it is computed from every row of the nodes before it, so
// those are refined on all their rows where that fits the budget. At budget 100, h3's pass (123)
// does not fit; h2's over all four rows (88) does: h2 gets CROWN's [1, 4], [-2.5, 0.5],
// [-3.5, -0.5], [-3.5, -0.5] (test_util.h), r2 in [1, 4], [0, 0.5], 0, 0, t in [1, 4.5] and
// h3's IBP bounds are [-2, 1.5], [-1, 2.5], [-3, 0.5]. From h2's two straddling rows only
// (IBP's [1, 5] and [-4.5, -0.5] on rows 0 and 2), t would be in [1, 5.5] and h3 one wider.
// At budget 123 nothing is cut short and h2 refines its two straddling rows only.
TEST(CrownReportTest, RefinesEveryRowBeforeAPassLeftToIbp) {
  Model m = build(test::kThreeReluNet);
  const Interval x = box({-1, -1}, {1, 1});
  const int h2 = m.dag().find("h2"), h3 = m.dag().find("h3");
  Options o;
  o.refine_budget = 100;
  BoundsReport r;
  o.report = &r;
  BoundsOut got;
  got.want.node_bounds = true;
  ASSERT_TRUE(linear_bounds(m, x, {Mat::Identity(1, 1)}, o, {}, &got).ok());
  const std::vector<Interval>& nodes = got.node_bounds;
  EXPECT_EQ(r.refined, 2);
  EXPECT_EQ(r.ibp_budget, 1);
  EXPECT_EQ(r.elements_ibp, 3);
  EXPECT_EQ(r.outputs_forward, 0);
  EXPECT_DOUBLE_EQ(r.largest_skipped, 123);
  EXPECT_DOUBLE_EQ(r.cost, 16 + 88 + 48);
  const double kTol = 1e-12;
  EXPECT_TRUE(nodes[h2].lo.isApprox((Vec(4) << 1, -2.5, -3.5, -3.5).finished(), kTol));
  EXPECT_TRUE(nodes[h2].hi.isApprox((Vec(4) << 4, 0.5, -0.5, -0.5).finished(), kTol));
  EXPECT_TRUE(nodes[h3].lo.isApprox((Vec(3) << -2, -1, -3).finished(), kTol));
  EXPECT_TRUE(nodes[h3].hi.isApprox((Vec(3) << 1.5, 2.5, 0.5).finished(), kTol));
  o.refine_budget = 123;
  r = BoundsReport{};
  ASSERT_TRUE(linear_bounds(m, x, {Mat::Identity(1, 1)}, o, {}, &got).ok());
  EXPECT_EQ(r.refined, 3);
  EXPECT_FALSE(r.cut_short());
  EXPECT_DOUBLE_EQ(r.cost, 16 + 44 + 123 + 48);
  EXPECT_EQ(nodes[h2].lo, (Vec(4) << 1, -2.5, -4.5, -3.5).finished());
  EXPECT_EQ(nodes[h2].hi, (Vec(4) << 5, 0.5, -0.5, -0.5).finished());
}

// A split row is refined even where the split leaves it on one side of 0: h2_3 >= 0 narrows IBP's
// [-3.5, 0.5] to [0, 0.5], and CROWN's h2_3 <= -0.5 then shows that no point of the box meets it.
TEST(CrownReportTest, SplitRowsAreRefinedToFindContradictions) {
  Model m = build(test::kStableRowsNet);
  std::vector<NeuronSplit> splits{{m.dag().find("h2"), 3, true}};
  BoundsIn in;
  in.splits = &splits;
  BoundsOut got;
  auto y = linear_bounds(m, box({-1, -1}, {1, 1}), {Mat::Identity(1, 1)}, Options{}, in, &got);
  ASSERT_TRUE(y.ok()) << y.error().str();
  EXPECT_TRUE(got.empty);
}

// The default budget lets the cheapest passes run while their summed cost fits; passes are
// ordered by the budget they need (an output's: its cost / 50): y (0.66), h1 (33), h2 (78). Their
// summed cost prices each dense weight entry at 1/8 (kDenseEntryCost): a row costs h1 3 + 6/8 +
// 2 = 5.75, h2 3 + 9/8 + 3 + 5.75 = 12.875, y 1 + 3/8 + 3 + 12.875 = 17.25, so the passes cost
// y 17.25, h1 17.25 and h2 38.625 (in all 73.125).
TEST(CrownReportTest, DefaultBudgetFitsTheTotalCost) {
  Model m = build(kNet);
  EXPECT_TRUE(std::isinf(default_refine_budget(m)));
  EXPECT_TRUE(std::isinf(default_refine_budget(m, 73.125)));
  EXPECT_DOUBLE_EQ(default_refine_budget(m, 73), 33);
  EXPECT_DOUBLE_EQ(default_refine_budget(m, 34.5), 33);
  EXPECT_DOUBLE_EQ(default_refine_budget(m, 34), 0.66);
  EXPECT_DOUBLE_EQ(default_refine_budget(m, 17), 0);
}

}  // namespace
}  // namespace propdag

namespace propdag {
namespace {

// A Conv's matrix is built lazily; its entry count, known without building it (the cost model
// reads it), is the built matrix's, and building leaves the bounds those of an explicit product.
TEST(LazyConvTerm, CountsItsEntriesWithoutBuildingThem) {
  Model m = test::build(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,2,5,4] x) => (float[1,3,3,2] y)
    <float[3,2,2,2] w = {1,0,-2,1, 0,0,3,1, 2,-1,0,0, 1,1,1,0, 0,2,-1,1, 1,0,0,-3}> {
      y = Conv <pads = [1, 0, 0, 1], strides = [2, 2], dilations = [1, 2]> (x, w)
    })");
  const auto* conv = dynamic_cast<const AffineOp*>(m.op(m.dag().find("y")));
  ASSERT_NE(conv, nullptr);
  const LinearTerm& t = conv->terms().front();
  ASSERT_TRUE(static_cast<bool>(t.row_entries));
  EXPECT_EQ(t.s.size(), 0);  // not built at load
  const int64_t counted = t.stored();
  const SpMat& s = t.sparse();
  EXPECT_EQ(s.rows(), 18);
  EXPECT_EQ(s.cols(), 40);
  EXPECT_EQ(s.nonZeros(), counted);
  EXPECT_EQ(t.stored(), counted);
  // Output (oc 0, oy 1, ox 0) reads x[c, 2*1 - 1 + ky, 0 + 2 kx] for kx = 0, 1 (2 kx = 2 < 4).
  Mat d = Mat(s);
  EXPECT_EQ(d(2, 0 * 20 + 1 * 4 + 0), 1);                   // c 0, ky 0, kx 0: w = 1
  EXPECT_EQ(d(2, 0 * 20 + 2 * 4 + 0), -2);                  // c 0, ky 1, kx 0: w = -2
  EXPECT_EQ(d(2, 0 * 20 + 2 * 4 + 2), 1);                   // c 0, ky 1, kx 1: w = 1
  EXPECT_EQ(d(2, 1 * 20 + 2 * 4 + 0), 3);                   // c 1, ky 1, kx 0: w = 3
  EXPECT_EQ(d.row(2).cwiseAbs().sum(), 1 + 2 + 1 + 3 + 1);  // c 1, ky 1, kx 1: w = 1 too
}

// An AveragePool's matrix is lazy too (a fuzzed pool over 10M elements took 5.4 GB when it was
// built from triplets at load): entries counted without building, the built rows averaging the
// taps inside the input, divided by the taps inside input + pads with count_include_pad.
TEST(LazyPoolTerm, CountsItsEntriesWithoutBuildingThem) {
  for (const int include : {0, 1}) {
    SCOPED_TRACE(include);
    Model m = test::build(R"(
      <ir_version: 8, opset_import: ["" : 15]>
      g (float[1,2,4,5] x) => (float[1,2,4,2] y) {
        y = AveragePool <kernel_shape = [2, 3], pads = [1, 0, 0, 1], strides = [1, 2],
                         count_include_pad = )" +
                          std::to_string(include) + R"(> (x)
      })");
    const auto* pool = dynamic_cast<const AffineOp*>(m.op(m.dag().find("y")));
    ASSERT_NE(pool, nullptr);
    const LinearTerm& t = pool->terms().front();
    ASSERT_TRUE(static_cast<bool>(t.row_entries));
    EXPECT_EQ(t.s.size(), 0);  // not built at load
    const int64_t counted = t.stored();
    const Mat d = Mat(t.sparse());
    EXPECT_EQ(d.rows(), 16);
    EXPECT_EQ(d.cols(), 40);
    EXPECT_EQ(t.sparse().nonZeros(), counted);
    // Row (c 1, oy 0, ox 1) = 9 reads rows -1, 0 (-1 is the top pad) and columns 2, 3, 4: three
    // taps inside, six with the pad counted.
    for (int64_t ix = 2; ix <= 4; ++ix)
      EXPECT_DOUBLE_EQ(d(9, 20 + ix), include ? 1.0 / 6 : 1.0 / 3);
    EXPECT_NEAR(d.row(9).sum(), include ? 0.5 : 1.0, 1e-15);
    // Row (c 0, oy 3, ox 0) = 6 reads rows 2, 3 and columns 0, 1, 2, all inside: 1/6 each.
    for (int64_t iy = 2; iy <= 3; ++iy)
      for (int64_t ix = 0; ix <= 2; ++ix) EXPECT_DOUBLE_EQ(d(6, iy * 5 + ix), 1.0 / 6);
    EXPECT_NEAR(d.row(6).sum(), 1.0, 1e-15);
    // Every output has 3 or 6 taps inside: 2 of the 8 outputs per channel (oy 0) touch the top pad.
    EXPECT_EQ(counted, 2 * (2 * 3 + 6 * 6));
  }
}

}  // namespace
}  // namespace propdag

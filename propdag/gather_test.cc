#include "propdag/gather.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/op_params.h"
#include "propdag/engine.h"
#include "propdag/test_util.h"

namespace propdag {
namespace {

std::vector<int64_t> all(const IndexMap& m, int64_t begin = 0) {
  std::vector<int64_t> j(m.size() - begin);
  m.fill(begin, static_cast<int64_t>(j.size()), j.data());
  return j;
}

TEST(IndexMap, BroadcastMatchesCommonMap) {
  for (const auto& [in, out] :
       std::vector<std::pair<common::Dims, common::Dims>>{{{3, 1}, {2, 3, 4}},
                                                          {{2, 1, 4}, {2, 3, 4}},
                                                          {{1}, {5, 7}},
                                                          {{5, 7}, {5, 7}},
                                                          {{1, 4, 1, 1}, {1, 4, 3, 5}},
                                                          {{1, 1, 1, 5}, {2, 4, 3, 5}}}) {
    const IndexMap m = IndexMap::broadcast(in, out);
    EXPECT_EQ(all(m), common::broadcast_map(in, out));
    EXPECT_EQ(m.count(), common::num_elements(out));
    std::vector<int64_t> tail = common::broadcast_map(in, out);
    tail.erase(tail.begin(), tail.begin() + 3);
    EXPECT_EQ(all(m, 3), tail);  // from the middle of a row
  }
}

TEST(IndexMap, ListKeepsHolesAndRecognizesTheIdentity) {
  const IndexMap m = IndexMap::list({2, -1, 0, 1});
  EXPECT_TRUE(m.listed());
  EXPECT_EQ(all(m), (std::vector<int64_t>{2, -1, 0, 1}));
  EXPECT_EQ(m.count(), 3);
  EXPECT_FALSE(IndexMap::list({0, 1, 2}).listed());
}

// A broadcast Mul by a constant [2, 1] over [2, 3] from x: [3], with one row left out of the
// listed form: its products equal Eigen's sparse products bit for bit.
TEST(Gather, ProductsEqualTheSparseMatrix) {
  for (bool listed : {false, true}) {
    Gather g;
    g.rows = 6, g.cols = 3;
    g.col = listed ? IndexMap::list({0, 1, -1, 0, 1, 2}) : IndexMap::broadcast({3}, {2, 3});
    g.values = {0.1, -3.7};
    g.scale_at = IndexMap::broadcast({2, 1}, {2, 3});
    const SpMat s = gather_sparse(g);
    EXPECT_EQ(s.nonZeros(), g.entries());
    const Mat a = Mat::Random(4, 6), b = Mat::Random(4, 3);
    EXPECT_EQ(gather_left(a, g), Mat(a * s));
    EXPECT_EQ(gather_left_transposed(b, g), Mat(b * s.transpose()));
  }
}

// x: [1, side] in the box x_k in [k, k + 1]; t = x reshaped to [side, 1];
//   y = x + t    y[i, j] = x_j + x_i          (both operands broadcast)
//   z = 2 y      z[i, j] = 2 x_j + 2 x_i      (a broadcast constant)
//   w = z - x    w[i, j] = x_j + 2 x_i        (x broadcast again)
// IBP bounds each operand on its own: y in [i + j, i + j + 2], z in [2 (i + j), 2 (i + j) + 4],
// w in [2 (i + j) - (j + 1), 2 (i + j) + 4 - j] = [2 i + j - 1, 2 i + j + 4].
// CROWN is exact on affine maps: w in [2 i + j, 2 i + j + 3] (i != j), [3 i, 3 i + 3] (i == j).
std::string square(int64_t side) {
  const std::string n = std::to_string(side);
  return R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,)" +
         n + R"(] x) => (float[)" + n + "," + n + R"(] w)
    <int64[2] shape = {)" +
         n + R"(, 1}, float[1] two = {2}> {
      t = Reshape(x, shape)
      y = Add(x, t)
      z = Mul(y, two)
      w = Sub(z, x)
    })";
}

Interval ramp_box(int64_t side) {
  Vec lo = Vec::LinSpaced(side, 0, static_cast<double>(side - 1));
  return {lo, lo.array() + 1.0};
}

// 2^24 elements in y, z and w: IBP from maps that hold no matrix.
TEST(Gather, LargeBroadcastAddIbpByHand) {
  const int64_t side = 4096;
  Model m = test::build(square(side));
  Options o;
  o.method = Method::kIbp;
  auto b = output_bounds(m, ramp_box(side), o);
  ASSERT_TRUE(b.ok()) << b.error().str();
  const Interval& w = b->front();
  ASSERT_EQ(w.size(), side * side);
  int64_t wrong = 0;
  for (int64_t i = 0; i < side; ++i)
    for (int64_t j = 0; j < side; ++j) {
      const auto e = static_cast<double>(2 * i + j);
      wrong += w.lo[i * side + j] != e - 1 || w.hi[i * side + j] != e + 4;
    }
  EXPECT_EQ(wrong, 0);
  for (int n = 0; n < m.dag().size(); ++n) {
    const auto* affine = dynamic_cast<const AffineOp*>(m.op(n));
    if (affine == nullptr) continue;
    for (const LinearTerm& t : affine->terms()) {
      ASSERT_NE(t.gather, nullptr);
      EXPECT_EQ(t.s.nonZeros(), 0);  // no sparse matrix was built
      EXPECT_FALSE(t.gather->col.listed());
    }
  }
}

// 1,024 output rows over nodes of 1,024 elements, in passes of 64 rows (chunk_entries 2^16).
TEST(Gather, BroadcastAddCrownAndAlphaByHand) {
  const int64_t side = 32;
  Model m = test::build(square(side));
  for (Method method : {Method::kCrown, Method::kAlpha}) {
    Options o;
    o.method = method;
    o.chunk_entries = 1 << 16;
    auto b = output_bounds(m, ramp_box(side), o);
    ASSERT_TRUE(b.ok()) << b.error().str();
    const Interval& w = b->front();
    for (int64_t i = 0; i < side; ++i)
      for (int64_t j = 0; j < side; ++j) {
        const auto lo = static_cast<double>(i == j ? 3 * i : 2 * i + j);
        EXPECT_NEAR(w.lo[i * side + j], lo, 1e-9) << i << ", " << j;
        EXPECT_NEAR(w.hi[i * side + j], lo + 3, 1e-9) << i << ", " << j;
      }
  }
}

TEST(Gather, IntervalKeepsASmallEndBesideAHugeOne) {
  Model m = test::build(test::kFarEnds);
  Options o;
  o.method = Method::kIbp;
  auto b = output_bounds(m, test::far_ends_box(), o);
  ASSERT_TRUE(b.ok()) << b.error().str();
  const Interval &y = (*b)[0], &z = (*b)[1];
  for (Eigen::Index i : {0, 1}) {
    EXPECT_EQ(y.lo[i], -2.0);
    EXPECT_EQ(y.hi[i], 1e22);
    EXPECT_EQ(y.lo[2 + i], -1.0);
    EXPECT_EQ(y.hi[2 + i], 1.0);
    EXPECT_EQ(z.lo[i], 0.0);
    EXPECT_EQ(z.hi[i], 1.0);
  }
}

// Dense and convolution (sparse) terms take their ends the same way, and so does CROWN's (and
// alpha's) concretization over the input box: from the centre and radius, y0 >= 0.
TEST(Affine, DenseAndConvIntervalsKeepASmallEndBesideAHugeOne) {
  Model m = test::build(test::kFarEndsAffine);
  for (Method method : {Method::kIbp, Method::kCrown, Method::kAlpha}) {
    SCOPED_TRACE(static_cast<int>(method));
    Options o;
    o.method = method;
    auto b = output_bounds(m, test::far_ends_box(3), o);
    ASSERT_TRUE(b.ok()) << b.error().str();
    test::expect_far_ends_affine((*b)[0].lo, (*b)[0].hi, (*b)[1].lo, (*b)[1].hi);
  }
}

// alpha's own lower pass concretizes the same way (its ReLU is tuned, so the pass runs).
TEST(Affine, CrownAndAlphaKeepASmallEndThroughAReLU) {
  Model m = test::build(test::kFarEndsRelu);
  for (Method method : {Method::kCrown, Method::kAlpha}) {
    SCOPED_TRACE(static_cast<int>(method));
    Options o;
    o.method = method;
    auto b = output_bounds(m, test::far_ends_box(1), o);
    ASSERT_TRUE(b.ok()) << b.error().str();
    EXPECT_LE((*b)[0].lo[0], -2.0);
    EXPECT_GE((*b)[0].lo[0], -2.0 - 1e-9);
  }
}

}  // namespace
}  // namespace propdag

// Large dense weights read from float32 data are held as float (half the memory), and give the
// bounds that the same weights held as double give.
#include <gtest/gtest.h>

#include "propdag/engine.h"
#include "propdag/test_util.h"

namespace propdag {
namespace {

// x (16384) -> MatMul w1 (16384 x 320: 5.2M entries, more than one 2^22-entry block of widening)
// -> Relu -> MatMul w2 (320 x 4), with w1 and w2 given as `dtype` tensors of the same float values.
Model wide_net(common::DType dtype) { return test::two_layer_net(16384, 320, 4, dtype, 7); }

const LinearTerm& first_term(const Model& m) {
  for (int n = 0; n < m.dag().size(); ++n)
    if (auto* a = dynamic_cast<const AffineOp*>(m.op(n))) return a->terms().front();
  ADD_FAILURE() << "no affine op";
  static const LinearTerm none;
  return none;
}

TEST(FloatWeightsTest, LargeFloatWeightsGiveTheBoundsOfDoubleOnes) {
  Model f = wide_net(common::DType::kFloat), d = wide_net(common::DType::kDouble);
  // The first layer (float data, over 2^20 entries) is held as float, the double one as double.
  EXPECT_EQ(first_term(f).wf.size(), 320 * 16384);
  EXPECT_EQ(first_term(f).w.size(), 0);
  EXPECT_EQ(first_term(d).w.size(), 320 * 16384);
  EXPECT_EQ(first_term(d).wf.size(), 0);
  Interval box{Vec::Constant(16384, -0.01), Vec::Constant(16384, 0.01)};
  box.lo[3] = 0.005;
  for (Method method : {Method::kIbp, Method::kCrown, Method::kAlpha}) {
    auto bf = output_bounds(f, box, {method}), bd = output_bounds(d, box, {method});
    ASSERT_TRUE(bf.ok() && bd.ok());
    for (Eigen::Index i = 0; i < 4; ++i) {  // summation order differs: rounding only
      EXPECT_NEAR((*bf)[0].lo[i], (*bd)[0].lo[i], 1e-9 * (1 + std::abs((*bd)[0].lo[i])));
      EXPECT_NEAR((*bf)[0].hi[i], (*bd)[0].hi[i], 1e-9 * (1 + std::abs((*bd)[0].hi[i])));
    }
  }
}

}  // namespace
}  // namespace propdag

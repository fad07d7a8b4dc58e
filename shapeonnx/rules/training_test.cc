#include <gtest/gtest.h>

#include "shapeonnx/rules/test_util.h"

namespace shapeonnx::testing {
namespace {

TEST(LossRules, ReductionNoneKeepsTargetShape) {
  // input [N 2, C 5, d 3], target [2, 3]: "none" -> [2,3]; "mean" (default) / "sum" -> [].
  // SoftmaxCrossEntropyLoss's log_prob output has the scores' shape [2,5,3].
  expect_shapes(header(13) + R"(g (float[2,5,3] x, int64[2,3] t) => (a, b, c, p) {
    a = NegativeLogLikelihoodLoss <reduction = "none"> (x, t)
    b = NegativeLogLikelihoodLoss(x, t)
    c, p = SoftmaxCrossEntropyLoss <reduction = "sum"> (x, t)
  })",
                {{"a", {2, 3}}, {"b", {}}, {"c", {}}, {"p", {2, 5, 3}}});
}

}  // namespace
}  // namespace shapeonnx::testing

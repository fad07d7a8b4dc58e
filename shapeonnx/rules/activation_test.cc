#include <gtest/gtest.h>

#include "shapeonnx/rules/test_util.h"

namespace shapeonnx::testing {
namespace {

TEST(ActivationRules, SoftmaxFamilyKeepsShape) {
  expect_shapes(header(13) + R"(g (float[2,5] x) => (a, b, c) {
    a = Softmax(x)
    b = LogSoftmax <axis = 0> (x)
    c = Hardmax(x)
  })",
                {{"a", {2, 5}}, {"b", {2, 5}}, {"c", {2, 5}}});
  expect_shapes(header(11) + R"(g (float[2,5] x) => (a) { a = Softmax(x) })", {{"a", {2, 5}}});
}

}  // namespace
}  // namespace shapeonnx::testing

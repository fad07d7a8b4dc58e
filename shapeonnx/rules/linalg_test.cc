#include <gtest/gtest.h>

#include "shapeonnx/rules/test_util.h"

namespace shapeonnx::testing {
namespace {

TEST(LinalgRules, MatMulBatchBroadcast) {
  // [2,1,3,4] x [5,4,6]: batch [2,1] vs [5] -> [2,5]; matrices [3,4] x [4,6] -> [3,6].
  expect_shapes(header(13) + R"(g (float[2,1,3,4] a, float[5,4,6] b) => (y) { y = MatMul(a, b) })",
                {{"y", {2, 5, 3, 6}}});
}

TEST(LinalgRules, MatMulVectors) {
  // [4] x [4,6] -> [6] (prepended 1 dropped); [3,4] x [4] -> [3]; [4] x [4] -> [].
  expect_shapes(header(13) + R"(g (float[4] v, float[4,6] m, float[3,4] n) => (a, b, c) {
    a = MatMul(v, m)
    b = MatMul(n, v)
    c = MatMul(v, v)
  })",
                {{"a", {6}}, {"b", {3}}, {"c", {}}});
}

TEST(LinalgRules, MatMulInnerMismatchFails) {
  expect_error(header(13) + R"(g (float[3,4] a, float[5,6] b) => (y) { y = MatMul(a, b) })",
               "MatMul inner dims differ: 4 vs 5");
}

TEST(LinalgRules, GemmTransposes) {
  // A [4,3] with transA -> M 3, K 4; B [5,4] with transB -> N 5: [3,5]. C [5] broadcasts.
  expect_shapes(header(13) + R"(g (float[4,3] a, float[5,4] b, float[5] c, float[3,4] a2,
      float[4,5] b2) => (y, z) {
    y = Gemm <transA = 1, transB = 1> (a, b, c)
    z = Gemm <alpha = 2.0> (a2, b2)
  })",
                {{"y", {3, 5}}, {"z", {3, 5}}});
}

TEST(LinalgRules, GemmMismatchFails) {
  expect_error(header(13) + R"(g (float[3,4] a, float[5,6] b) => (y) { y = Gemm(a, b) })",
               "Gemm inner dims differ: 4 vs 5");
}

TEST(LinalgRules, EinsumExplicitImplicitEllipsis) {
  // bij,bjk->bik: [2,3,4] x [2,4,5] -> [2,3,5]. Implicit "ij,jk": letters used once, sorted -> ik
  // [3,5]. "...ij,...jk->...ik": ellipsis [7] vs [] -> [7], then [3,5].
  expect_shapes(header(13) + R"(g (float[2,3,4] a, float[2,4,5] b, float[3,4] m, float[4,5] n,
      float[7,3,4] e) => (x, y, z, t) {
    x = Einsum <equation = "bij,bjk->bik"> (a, b)
    y = Einsum <equation = "ij,jk"> (m, n)
    z = Einsum <equation = "...ij,...jk->...ik"> (e, n)
    t = Einsum <equation = "ij->ji"> (m)
  })",
                {{"x", {2, 3, 5}}, {"y", {3, 5}}, {"z", {7, 3, 5}}, {"t", {4, 3}}},
                OnnxCheck::kPartial);  // ONNX 1.12 infers only Einsum's rank
}

TEST(LinalgRules, Det) {
  // [2,3,3] -> [2]; a single [3,3] matrix -> [].
  expect_shapes(header(13) + R"(g (float[2,3,3] x, float[3,3] m) => (a, b) {
    a = Det(x)
    b = Det(m)
  })",
                {{"a", {2}}, {"b", {}}});
}

}  // namespace
}  // namespace shapeonnx::testing

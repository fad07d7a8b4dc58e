// Helpers of propdag's C++ tests: a Model from ONNX text, an input box, and Network 1, the
// hand-worked network several tests share.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "common/testing.h"
#include "propdag/model.h"

namespace propdag::test {

// Network 1: x1, x2 in [-1, 1]
//
//   x1 ──┬─(+1)─► h1 ─ relu ─► r1 ─(+1)─┐
//        └─(+1)─► h2 ─ relu ─► r2 ─(+1)─┴─► y = r1 + r2
//   x2 ──┬─(+1)─► h1
//        └─(-1)─► h2
//
// IBP:   h1, h2 in [-2, 2];  r1, r2 in [0, 2];  y in [0, 4].
// CROWN: l = -2, u = 2 for both ReLUs: upper line r <= 0.5 h + 1; lower line r >= 0 (u > -l is
//        false, so slope 0). y <= 0.5 (x1 + x2) + 1 + 0.5 (x1 - x2) + 1 = x1 + 2 <= 3;  y >= 0.
//        So y in [0, 3]. (True range: [0, 2].)
inline constexpr const char* kNet1 = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,2] x) => (float[1,1] y)
  <float[2,2] w1 = {1, 1, 1, -1}, float[2,1] w2 = {1, 1}> {
    h = MatMul(x, w1)
    r = Relu(h)
    y = MatMul(r, w2)
  })";

// x (2) -> MatMul (3) -> Relu -> MatMul (3) -> Relu -> MatMul (1): two ReLU layers, so that
// CROWN's refined bounds of the second layer's input are tighter than IBP's.
inline constexpr const char* kTwoReluNet = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,2] x) => (float[1,1] y)
  <float[2,3] w1 = {1, -1, 0.5, 1, 1, -2}, float[3,3] w2 = {1, -1, 2, -1, 1, 1, 0.5, 2, -1},
   float[3,1] w3 = {1, -2, 1}> {
    h1 = MatMul(x, w1)
    r1 = Relu(h1)
    h2 = MatMul(r1, w2)
    r2 = Relu(h2)
    y = MatMul(r2, w3)
  })";

inline Model build(const std::string& text) {
  auto g = common::testing::parse_text(text);
  EXPECT_TRUE(g.ok()) << g.error().str();
  auto m = Model::build(std::move(g).value());
  EXPECT_TRUE(m.ok()) << m.error().str();
  return std::move(m).value();
}

inline Interval box(std::vector<double> lo, std::vector<double> hi) {
  return {Eigen::Map<Vec>(lo.data(), lo.size()), Eigen::Map<Vec>(hi.data(), hi.size())};
}

}  // namespace propdag::test

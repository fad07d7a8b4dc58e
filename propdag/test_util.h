// Helpers of propdag's C++ tests: a Model from ONNX text, an input box, and Network 1, the
// hand-worked network several tests share.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/testing.h"
#include "propdag/engine.h"
#include "propdag/model.h"
#include "propdag/vnnlib.h"

namespace propdag::test {

// y = x - x for x in [-1, 1]. IBP bounds the two operands independently: y in [-w, w] over a box
// of width w, though y is 0 everywhere (the verify tests' network).
inline constexpr const char* kZero = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,1] x) => (float[1,1] y) {
    y = Sub(x, x)
  })";

// A property of the inputs X_i in [lo_i, hi_i] and `outputs` outputs Y_j, with
// `output_constraint` added.
inline Spec box_spec(const std::vector<double>& lo, const std::vector<double>& hi, int outputs,
                     const std::string& output_constraint) {
  std::string text;
  char buf[160];  // two lines of at most 14 + 20 + 1 + 24 + 3 characters each
  for (size_t i = 0; i < lo.size(); ++i)
    text += "(declare-const X_" + std::to_string(i) + " Real)\n";
  for (int j = 0; j < outputs; ++j) text += "(declare-const Y_" + std::to_string(j) + " Real)\n";
  for (size_t i = 0; i < lo.size(); ++i) {
    std::snprintf(buf, sizeof buf, "(assert (>= X_%zu %.17g))\n(assert (<= X_%zu %.17g))\n", i,
                  lo[i], i, hi[i]);
    text += buf;
  }
  auto s = parse_vnnlib(text + output_constraint, "p.vnnlib");
  EXPECT_TRUE(s.ok()) << s.error().str();
  return std::move(s).value();
}

// A property of one input X_0 in [-1, 1] and one output Y_0, with `output_constraint` added.
inline Spec one_input_spec(const std::string& output_constraint) {
  return box_spec({-1}, {1}, 1, output_constraint);
}

// y = |x - 0.3| through two ReLUs, x of shape [1, 1]; with `and_input`, x as a second output
// (y of shape [1, 2]).
inline std::string distance_net(bool and_input) {
  return std::string(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,1] x) => (float[1,)") +
         (and_input ? "2" : "1") + R"(] y) {
      c = Constant<value = float[1,1] {0.3}>()
      d = Sub(x, c)
      e = Sub(c, x)
      p = Relu(d)
      q = Relu(e)
      )" +
         (and_input ? "s = Add(p, q)\n      y = Concat<axis = 1>(s, x)" : "y = Add(p, q)") +
         R"(
    })";
}

// y = (floor(x) - 3) (floor(x) - 3) + c, the two factors computed apart. Over x in [0, 9], IBP
// takes each factor in [-3, 6] and their product in [-18, 36]: y >= c - 18. Within one cell
// [k, k + 1), floor(x) = k and IBP is exact: y = (k - 3)^2 + c (the integer-split tests).
inline std::string floor_net(double c) {
  return R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,1] x) => (float[1,1] y) <float[1] three = {3}, float[1] c = {)" +
         std::to_string(c) + R"(}> {
      f = Floor(x)
      d = Sub(f, three)
      e = Sub(f, three)
      s = Mul(d, e)
      y = Add(s, c)
    })";
}

// A property of one input X_0 in [0, hi] and one output Y_0, with `output_constraint` added.
inline Spec floor_spec(double hi, const std::string& output_constraint) {
  return box_spec({0}, {hi}, 1, output_constraint);
}

// Copies and scalings of inputs whose box [-2, 1e22] has one small and one huge end: a Concat
// (gather entries 1) of x and sin(x), and relu(-0.5 x) (entries -0.5). IBP: y in [-2, 1e22] for
// x's copies, [-1, 1] for the sines; z in [0, 1]. From the centre 5e21 - 1 and the radius
// 5e21 + 1 the small end rounds away: -2 and 1 became 0.
inline constexpr const char* kFarEnds = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,2] x) => (float[1,4] y, float[1,2] z) <float[1] h = {-0.5}> {
    a = Sin(x)
    y = Concat <axis = 1> (x, a)
    s = Mul(x, h)
    z = Relu(s)
  })";
inline Interval far_ends_box(Eigen::Index n = 2) {
  return {Vec::Constant(n, -2.0), Vec::Constant(n, 1e22)};
}

// A dense product and a convolution of x in the same box [-2, 1e22] (3 elements), each output
// with one small end: y = x W, W = [[1, -1], [0.25, -0.25], [0.5, -0.5]]: y0 in [-3.5, 1.75e22],
// y1 in [-1.75e22, 3.5]; c = Conv(x as [1, 1, 1, 3], kernels (1, 0.5) and (-1, -0.25)): channel
// 0 in [-3, 1.5e22], channel 1 in [-1.25e22, 2.5]. From centre and radius each small end rounds
// to 0 (or to a multiple of the huge end's last digit).
inline constexpr const char* kFarEndsAffine = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,3] x) => (float[1,2] y, float[1,2,1,2] c)
  <float[3,2] w = {1, -1, 0.25, -0.25, 0.5, -0.5}, float[2,1,1,2] k = {1, 0.5, -1, -0.25},
   int64[4] s = {1, 1, 1, 3}> {
    y = MatMul(x, w)
    t = Reshape(x, s)
    c = Conv(t, k)
  })";
// Checks those bounds: y's ends (y_lo, y_hi) and c's, flat. The small ends are exact sums of
// products of -2; the huge ones within rounding.
inline void expect_far_ends_affine(const Vec& y_lo, const Vec& y_hi, const Vec& c_lo,
                                   const Vec& c_hi) {
  EXPECT_EQ(y_lo[0], -3.5);
  EXPECT_DOUBLE_EQ(y_hi[0], 1.75e22);
  EXPECT_DOUBLE_EQ(y_lo[1], -1.75e22);
  EXPECT_EQ(y_hi[1], 3.5);
  for (Eigen::Index i : {0, 1}) {
    EXPECT_EQ(c_lo[i], -3.0);
    EXPECT_DOUBLE_EQ(c_hi[i], 1.5e22);
    EXPECT_DOUBLE_EQ(c_lo[2 + i], -1.25e22);
    EXPECT_EQ(c_hi[2 + i], 2.5);
  }
}

// y = x - 0.5 Relu(x) on x in [-2, 1e22]: y's minimum is -2, at x = -2. CROWN (and alpha, whose
// ReLU straddles 0) bound it by 0.5 x - 1 from the ReLU's upper line; concretized from the
// centre and radius that gave -1.
inline constexpr const char* kFarEndsRelu = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,1] x) => (float[1,1] y) <float[1] h = {-0.5}> {
    r = Relu(x)
    s = Mul(r, h)
    y = Add(x, s)
  })";

// A Softmax after a linear layer: y = softmax(x W), z = y summed (1 everywhere).
inline constexpr const char* kSoftmaxNet = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,2] x) => (float[1,1] z, float[1,3] y)
  <float[2,3] w = {1, -1, 0.5, 0.5, 1, -1}, float[3,1] ones = {1, 1, 1}> {
    h = MatMul(x, w)
    y = Softmax <axis = -1> (h)
    z = MatMul(y, ones)
  })";

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

// Network 1's layers with `inputs` inputs and `outputs` outputs: h1 = x w1 (w1: [inputs, 3],
// row-major `w1`), r1 = relu(h1), h2 = r1 w2 (w2 = {1, -1, 2, -1, 1, 1, 0.5, 2, -1}), r2 =
// relu(h2), y = r2 w3 (w3: [3, outputs], row-major `w3`).
inline std::string two_relu_net(int inputs, const std::string& w1, int outputs,
                                const std::string& w3) {
  const std::string in = std::to_string(inputs), out = std::to_string(outputs);
  return R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1,)" +
         in + R"(] x) => (float[1,)" + out + R"(] y)
    <float[)" +
         in + R"(,3] w1 = {)" + w1 +
         R"(}, float[3,3] w2 = {1, -1, 2, -1, 1, 1, 0.5, 2, -1},
     float[3,)" +
         out + R"(] w3 = {)" + w3 + R"(}> {
      h1 = MatMul(x, w1)
      r1 = Relu(h1)
      h2 = MatMul(r1, w2)
      r2 = Relu(h2)
      y = MatMul(r2, w3)
    })";
}

// x (2) -> MatMul (3) -> Relu -> MatMul (3) -> Relu -> MatMul (1): two ReLU layers, so that
// CROWN's refined bounds of the second layer's input are tighter than IBP's.
inline std::string two_relu_net() { return two_relu_net(2, "1, -1, 0.5, 1, 1, -2", 1, "1, -2, 1"); }

// Network 1's weights with two outputs (the objective-cone tests): y0 = r2_0 - 2 r2_1 and
// y1 = r2_2. On [-1, 1]^2: h1 in [-2, 2], [-2, 2], [-2.5, 2.5]; every row of h2 = r1 w2
// straddles 0 (IBP: [-2, 3.25], [-2, 7], [-2.5, 6]). A pass from h2 costs 26 per row
// (crown_report_test.cc), so 52 for the two rows y0 reads and 78 for all three; h1's pass 33.
inline std::string two_outputs_net() {
  return two_relu_net(2, "1, -1, 0.5, 1, 1, -2", 2, "1, 0, -2, 0, 0, 1");
}

// Network 2: x1, x2 in [-1, 1]; h1 = (x1 + x2, x1 - x2), r1 = relu(h1), s = r1_0 + r1_1;
// h2 = (s + 1, s - 2.5, -s - 0.5, s - 3.5), r2 = relu(h2), y = r2_0 + r2_1 + r2_2 + r2_3.
//
// IBP:   h1 in [-2, 2]^2 (both straddle 0); s in [0, 4];
//        h2 in [1, 5], [-2.5, 1.5], [-4.5, -0.5], [-3.5, 0.5]: rows 1 and 3 straddle 0.
// CROWN: r1 <= 0.5 h1 + 1, r1 >= 0, so s <= x1 + 2 <= 3 and s >= 0:
//        h2 in [1, 4], [-2.5, 0.5], [-3.5, -0.5], [-3.5, -0.5]. Rows 0 and 2 keep their sign
//        either way (relu exact: r2_0 = h2_0, r2_2 = 0), so refining them changes no
//        relaxation; row 3 turns out negative (r2_3 = 0); row 1's lines on [-2.5, 0.5]:
//        0 <= r2_1 <= (h2_1 + 2.5) / 6. y <= s + 1 + s / 6 <= 7/6 (x1 + 2) + 1 <= 4.5,
//        y >= s + 1 >= 1. So y in [1, 4.5]. (True range: [1, 3].)
inline constexpr const char* kStableRowsNet = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,2] x) => (float[1,1] y)
  <float[2,2] w1 = {1, 1, 1, -1}, float[2,4] w2 = {1, 1, -1, 1, 1, 1, -1, 1},
   float[4] b2 = {1, -2.5, -0.5, -3.5}, float[4,1] w3 = {1, 1, 1, 1}> {
    h1 = MatMul(x, w1)
    r1 = Relu(h1)
    h2 = Gemm(r1, w2, b2)
    r2 = Relu(h2)
    y = MatMul(r2, w3)
  })";

// Network 3: Network 2 with a third ReLU layer, h3 = (t - 3, t - 2, t - 4) for
// t = r2_0 + r2_1 + r2_2 + r2_3 (Network 2's y), r3 = relu(h3), y = r3_0 + r3_1 + r3_2. A row
// from h3 costs h3 3 + w4 12 + r2 4 + 22 (from h2) = 41: 123 for its pass; y's costs
// 1 + w5 3 + r3 3 + 41 = 48.
inline constexpr const char* kThreeReluNet = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[1,2] x) => (float[1,1] y)
  <float[2,2] w1 = {1, 1, 1, -1}, float[2,4] w2 = {1, 1, -1, 1, 1, 1, -1, 1},
   float[4] b2 = {1, -2.5, -0.5, -3.5}, float[4,3] w4 = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
   float[3] b3 = {-3, -2, -4}, float[3,1] w5 = {1, 1, 1}> {
    h1 = MatMul(x, w1)
    r1 = Relu(h1)
    h2 = Gemm(r1, w2, b2)
    r2 = Relu(h2)
    h3 = Gemm(r2, w4, b3)
    r3 = Relu(h3)
    y = MatMul(r3, w5)
  })";

// Slices with variable starts and ends (index_test.cc works their bounds by hand). x: 6 values,
// p: a position; s = trunc(p) (Cast to int64) places windows of x:
//   y = x[s : s + 3]              (positive starts and ends)
//   n = x[s - 6 : s - 3]          (negative: the same windows as y)
//   k = x[s + 2 : s + 5]          (clamped at 6: s = 2 gives 2 elements, not the static 3)
//   r = x[s + 3 : s - 7 : -1]     (negative step, 4 elements: x[s + 3], ..., x[s])
//   d = y - x[2 : 5]              (a plain slice subtracted)
// Shape inference gives y, n, k 3 elements and r 4 (the windows' extent for in-range indices).
inline constexpr const char* kSlices = R"(
  <ir_version: 8, opset_import: ["" : 15]>
  g (float[6] x, float[1] p) => (float[3] y, float[3] n, float[3] k, float[4] r, float[3] d)
  <int64[1] zero = {0}, int64[1] two = {2}, int64[1] three = {3}, int64[1] five = {5},
   int64[1] m3 = {-3}, int64[1] m6 = {-6}, int64[1] m7 = {-7}, int64[1] mone = {-1}> {
    s = Cast<to = 7>(p)
    e = Add(s, three)
    y = Slice(x, s, e, zero)
    ns = Add(s, m6)
    ne = Add(s, m3)
    n = Slice(x, ns, ne, zero)
    ks = Add(s, two)
    ke = Add(s, five)
    k = Slice(x, ks, ke, zero)
    re = Add(s, m7)
    r = Slice(x, e, re, zero, mone)
    c = Slice(x, two, five, zero)
    d = Sub(y, c)
  })";

inline Model build(const std::string& text) {
  auto g = common::testing::parse_text(text);
  EXPECT_TRUE(g.ok()) << g.error().str();
  auto m = Model::build(std::move(g).value());
  EXPECT_TRUE(m.ok()) << m.error().str();
  return std::move(m).value();
}

// Network 1 reading 2 of 20 inputs (x_0, x_1; the others' weights 0): with all 20 varying,
// the input counts as large (more than 16 varying dimensions).
inline Model wide_network1() {
  std::string w1;
  const double first[6] = {1, -1, 0.5, 1, 1, -2};
  for (int i = 0; i < 60; ++i) w1 += (i > 0 ? ", " : "") + std::to_string(i < 6 ? first[i] : 0);
  return build(two_relu_net(20, w1, 1, "1, -2, 1"));
}

/// x (in) -> MatMul w1 (in x hidden) -> Relu -> MatMul w2 (hidden x out) => (y, h): random normal
/// weights (float values, exact in either dtype, from `seed`) given as `dtype` tensors, for tests
/// of how large dense weights are held.
inline Model two_layer_net(int64_t in, int64_t hidden, int64_t out, common::DType dtype,
                           unsigned seed) {
  const std::string d = std::to_string(in), k = std::to_string(hidden), o = std::to_string(out);
  auto g = common::testing::parse_text(
      "<ir_version: 8, opset_import: [\"\" : 15]>\ng (float[1," + d + "] x) => (float[1," + o +
      "] y, float[1," + k + "] h) <float[1] w1 = {1}, float[1] w2 = {1}> {\n" +
      "  h = MatMul(x, w1)\n  r = Relu(h)\n  y = MatMul(r, w2)\n}");
  EXPECT_TRUE(g.ok()) << g.error().str();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  for (auto [name, rows, cols] : {std::tuple{"w1", in, hidden}, std::tuple{"w2", hidden, out}}) {
    std::vector<double> v(static_cast<size_t>(rows * cols));
    for (double& e : v) e = normal(rng);
    common::Tensor t = common::Tensor::from_double(v, {rows, cols}, dtype);
    g->initializers[name] = t;
    g->values[name].shape = t.dims;
    g->values[name].dtype = dtype;
    if (g->values[name].known) g->values[name].known = t;
  }
  auto m = Model::build(std::move(*g));
  EXPECT_TRUE(m.ok()) << m.error().str();
  return std::move(*m);
}

inline Interval box(std::vector<double> lo, std::vector<double> hi) {
  return {Eigen::Map<Vec>(lo.data(), lo.size()), Eigen::Map<Vec>(hi.data(), hi.size())};
}

/// Every output's bounds with `method` (IBP intersected into CROWN's when `intersect`); empty, with
/// a test failure, when bounding fails.
inline std::vector<Interval> output_bounds_of(const Model& m, const Interval& in, Method method,
                                              bool intersect = false) {
  Options o;
  o.method = method;
  o.intersect_ibp = intersect;
  auto b = output_bounds(m, in, o);
  EXPECT_TRUE(b.ok()) << b.error().str();
  return b.ok() ? *b : std::vector<Interval>{};
}

/// The box [0, 1]^n.
inline Interval unit_box(int n) { return {Vec::Zero(n), Vec::Ones(n)}; }

}  // namespace propdag::test

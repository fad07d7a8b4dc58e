#include <gtest/gtest.h>

#include "shapeonnx/rules/test_util.h"

namespace shapeonnx::testing {
namespace {

TEST(SignalRules, WindowsAndMel) {
  // Windows of size 10 -> [10]. MelWeightMatrix(8 bins, dft_length 16) -> [16 / 2 + 1, 8] = [9, 8].
  expect_shapes(header(17) + R"(g (float[1] unused) => (b, h, m) {
    n = Constant <value = int64 {10}> ()
    b = BlackmanWindow(n)
    h = HannWindow <periodic = 0> (n)
    bins = Constant <value = int64 {8}> ()
    len = Constant <value = int64 {16}> ()
    rate = Constant <value = int64 {8000}> ()
    lo = Constant <value = float {0.0}> ()
    hi = Constant <value = float {4000.0}> ()
    m = MelWeightMatrix(bins, len, rate, lo, hi)
  })",
                {{"b", {10}}, {"h", {10}}, {"m", {9, 8}}});
}

TEST(SignalRules, Dft) {
  // [1, 10, 1] real signal on axis 1 -> [1, 10, 2]; onesided -> 10 / 2 + 1 = 6 bins.
  expect_shapes(header(17) + R"(g (float[1,10,1] x) => (a, b) {
    a = DFT(x)
    b = DFT <onesided = 1> (x)
  })",
                {{"a", {1, 10, 2}}, {"b", {1, 6, 2}}});
}

TEST(SignalRules, DftOpset20AxisInput) {
  // Opset 20: the axis is input 2, default -2. [1, 4, 6, 1]: default axis -2 -> dim 2 (6 entries,
  // onesided 6 / 2 + 1 = 4); axis 1 given -> dim 1 (4 entries, onesided 3); dft_length 8 on
  // axis -2 -> 8. The installed ONNX (1.12) knows only opset 17's DFT, so no cross-check.
  expect_shapes(header(20) + R"(g (float[1,4,6,1] x) => (a, b, c) {
    one = Constant <value = int64 {1}> ()
    len = Constant <value = int64 {8}> ()
    a = DFT <onesided = 1> (x)
    b = DFT <onesided = 1> (x, , one)
    c = DFT(x, len)
  })",
                {{"a", {1, 4, 4, 2}}, {"b", {1, 3, 6, 2}}, {"c", {1, 4, 8, 2}}}, OnnxCheck::kNone);
}

TEST(SignalRules, Stft) {
  // length 128, frame_length 16, step 8: floor((128 - 16) / 8) + 1 = 15 frames; onesided bins
  // 16 / 2 + 1 = 9 -> [1, 15, 9, 2]. The backend node test test_stft expects this [1,15,9,2];
  // ONNX 1.12's inference ignores the onesided default and says 16 bins, so no cross-check.
  expect_shapes(header(17) + R"(g (float[1,128,1] x) => (y) {
    step = Constant <value = int64 {8}> ()
    fl = Constant <value = int64 {16}> ()
    y = STFT(x, step, , fl)
  })",
                {{"y", {1, 15, 9, 2}}}, OnnxCheck::kNone);
}

TEST(SignalRules, UnknownWindowSizeFails) {
  expect_error(header(17) + R"(g (int64 n) => (y) { y = HammingWindow(n) })",
               "window size (input 0, 'n') is not known statically");
}

}  // namespace
}  // namespace shapeonnx::testing

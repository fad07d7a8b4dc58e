#include <gtest/gtest.h>

#include "shapeonnx/rules/test_util.h"

namespace shapeonnx::testing {
namespace {

TEST(RecurrentRules, LstmForwardSequenceFirst) {
  // X [seq 5, batch 2, input 3], hidden 4, one direction:
  // Y [5, 1, 2, 4], Y_h and Y_c [1, 2, 4]. W is [dirs, 4 * hidden, input] = [1,16,3].
  expect_shapes(header(14) + R"(g (float[5,2,3] x, float[1,16,3] w, float[1,16,4] r) => (y, h, c) {
    y, h, c = LSTM <hidden_size = 4> (x, w, r)
  })",
                {{"y", {5, 1, 2, 4}}, {"h", {1, 2, 4}}, {"c", {1, 2, 4}}});
}

TEST(RecurrentRules, GruBidirectionalBatchFirst) {
  // layout 1: X [batch 2, seq 5, input 3], bidirectional: Y [2, 5, 2, 4], Y_h [2, 2, 4].
  expect_shapes(header(14) + R"(g (float[2,5,3] x, float[2,12,3] w, float[2,12,4] r) => (y, h) {
    y, h = GRU <hidden_size = 4, direction = "bidirectional", layout = 1> (x, w, r)
  })",
                {{"y", {2, 5, 2, 4}}, {"h", {2, 2, 4}}});
}

TEST(RecurrentRules, RnnNeedsHiddenSize) {
  expect_error(header(14) + R"(g (float[5,2,3] x, float[1,4,3] w, float[1,4,4] r) => (y) {
    y = RNN(x, w, r)
  })",
               "hidden_size");
}

}  // namespace
}  // namespace shapeonnx::testing

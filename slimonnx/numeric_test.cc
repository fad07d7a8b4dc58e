// Numeric tests per fusion: random weights, the slimmed model must compute what the original
// computes, as judged by an independent executor (onnxruntime, via vnncomp.compare).
// Each case also asserts the node count it expects, so a fusion that silently stops firing fails.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/onnx_io.h"
#include "common/testing.h"
#include "slimonnx/test_util.h"

namespace slimonnx {
namespace {

// Text of a float initializer `name` of `dims` with values uniform in [lo, hi].
class Weights {
 public:
  std::string operator()(const std::string& name, const std::vector<int64_t>& dims, double lo = -1,
                         double hi = 1) {
    std::uniform_real_distribution<double> dist(lo, hi);
    int64_t n = 1;
    std::ostringstream os;
    os << "float[";
    for (size_t i = 0; i < dims.size(); ++i) {
      os << (i ? "," : "") << dims[i];
      n *= dims[i];
    }
    os << "] " << name << " = {";
    for (int64_t i = 0; i < n; ++i) os << (i ? "," : "") << static_cast<float>(dist(rng_));
    os << "}";
    return os.str();
  }

 private:
  std::mt19937 rng_{12345};
};

// Batch-norm parameters for C channels (positive variance), as four initializers.
std::string bn_params(Weights& w, const std::string& p, int64_t c) {
  return w(p + "s", {c}) + ", " + w(p + "b", {c}) + ", " + w(p + "m", {c}) + ", " +
         w(p + "v", {c}, 0.1, 2.0);
}

std::string model(const std::string& signature, const std::string& inits, const std::string& body,
                  int opset = 13) {
  return "<ir_version: 7, opset_import: [\"\" : " + std::to_string(opset) + "]>\n" + signature +
         "\n<" + inits + ">\n{\n" + body + "\n}\n";
}

// Slims `text`, expects `nodes_after` nodes, and compares both models under onnxruntime.
void check(const std::string& text, int64_t nodes_after) {
  Report report;
  common::Graph slim = testing::slim_text(text, {}, &report);
  EXPECT_EQ(report.nodes_after, nodes_after);
  ASSERT_TRUE(common::check_graph(slim).ok()) << common::check_graph(slim).error().str();
  if (!testing::ort_available()) GTEST_SKIP() << "node / onnxruntime-node not installed";
  const std::string dir = common::testing::temp_dir("slim_numeric");
  const std::string a = dir + "/original.onnx", b = dir + "/slim.onnx";
  ASSERT_TRUE(common::write_output_atomic(a, common::testing::text_to_bytes(text)).ok());
  forget_untrusted_shapes(slim);  // as the CLI does before it writes
  ASSERT_TRUE(common::save_graph(slim, b).ok());
  std::string why;
  std::optional<double> err = testing::ort_max_error(a, b, "", &why);
  ASSERT_TRUE(err.has_value()) << why;
  EXPECT_LE(*err, 1e-6);
  std::filesystem::remove_all(dir);
}

TEST(Numeric, BatchNormAfterPaddedConv) {
  Weights w;
  check(model("g (float[1,3,8,8] X) => (float[1,4,8,8] Y)",
              w("W", {4, 3, 3, 3}) + ", " + w("B", {4}) + ", " + bn_params(w, "n", 4),
              "C = Conv<pads = [1,1,1,1]>(X, W, B)\n"
              "Y = BatchNormalization<epsilon = 0.01>(C, ns, nb, nm, nv)"),
        1);
}

TEST(Numeric, BatchNormAfterGroupedConvWithoutBias) {
  Weights w;
  check(model("g (float[1,4,6,6] X) => (float[1,6,5,5] Y)",
              w("W", {6, 2, 2, 2}) + ", " + bn_params(w, "n", 6),
              "C = Conv<group = 2>(X, W)\n"
              "Y = BatchNormalization<epsilon = 0.001>(C, ns, nb, nm, nv)"),
        1);
}

TEST(Numeric, BatchNormAfterDepthwiseStridedConv) {
  Weights w;
  check(model("g (float[1,4,7,7] X) => (float[1,4,4,4] Y)",
              w("W", {4, 1, 3, 3}) + ", " + w("B", {4}) + ", " + bn_params(w, "n", 4),
              "C = Conv<group = 4, pads = [1,1,1,1], strides = [2,2]>(X, W, B)\n"
              "Y = BatchNormalization(C, ns, nb, nm, nv)"),
        1);
}

TEST(Numeric, BatchNormAfterGroupedConvTranspose) {
  Weights w;
  check(model("g (float[1,4,3,3] X) => (float[1,6,6,6] Y)",
              w("W", {4, 3, 2, 2}) + ", " + w("B", {6}) + ", " + bn_params(w, "n", 6),
              "C = ConvTranspose<group = 2, strides = [2,2]>(X, W, B)\n"
              "Y = BatchNormalization<epsilon = 0.1>(C, ns, nb, nm, nv)"),
        1);
}

TEST(Numeric, BatchNormBeforeUnpaddedGroupedConv) {
  Weights w;
  check(model("g (float[1,4,6,6] X) => (float[1,6,4,4] Y)",
              bn_params(w, "n", 4) + ", " + w("W", {6, 2, 3, 3}) + ", " + w("B", {6}),
              "N = BatchNormalization<epsilon = 0.001>(X, ns, nb, nm, nv)\n"
              "Y = Conv<group = 2>(N, W, B)"),
        1);
}

TEST(Numeric, BatchNormBeforePaddedConvIsKept) {
  // Padding adds zeros after the shift, not before it: folding would be wrong at the border.
  Weights w;
  check(model("g (float[1,2,5,5] X) => (float[1,3,5,5] Y)",
              bn_params(w, "n", 2) + ", " + w("W", {3, 2, 3, 3}),
              "N = BatchNormalization(X, ns, nb, nm, nv)\n"
              "Y = Conv<pads = [1,1,1,1]>(N, W)"),
        2);
}

TEST(Numeric, BatchNormAroundGemmAndThroughReshape) {
  Weights w;
  check(model("g (float[1,6] X) => (float[1,2,2,2] Y)",
              bn_params(w, "a", 6) + ", " + w("W", {8, 6}) + ", " + w("B", {8}) + ", " +
                  bn_params(w, "n", 2) + ", int64[4] shape = {1,2,2,2}",
              "A = BatchNormalization(X, as, ab, am, av)\n"
              "G = Gemm<transB = 1, alpha = 0.5, beta = 2.0>(A, W, B)\n"
              "R = Reshape(G, shape)\n"
              "Y = BatchNormalization(R, ns, nb, nm, nv)"),
        2);
}

TEST(Numeric, BatchNormBetweenTransposesBeforeMatMul) {
  Weights w;
  // As in vit_2023: the shift becomes a bias that the MatMul (rank 3) hands to the next Add.
  check(model("g (float[1,5,4] X) => (float[1,5,3] Y)",
              bn_params(w, "n", 4) + ", " + w("W", {4, 3}) + ", " + w("B", {3}),
              "T = Transpose<perm = [0,2,1]>(X)\n"
              "N = BatchNormalization(T, ns, nb, nm, nv)\n"
              "U = Transpose<perm = [0,2,1]>(N)\n"
              "M = MatMul(U, W)\nY = Add(B, M)"),
        2);
}

TEST(Numeric, MatMulAddAndLinearChains) {
  Weights w;
  check(model("g (float[2,5] X) => (float[2,3] Y)",
              w("W1", {5, 7}) + ", " + w("B1", {7}) + ", " + w("W2", {7, 4}) + ", " +
                  w("B2", {1, 4}) + ", " + w("W3", {4, 3}),
              "M1 = MatMul(X, W1)\nA1 = Add(B1, M1)\nG2 = Gemm(A1, W2, B2)\n"
              "Y = MatMul(G2, W3)"),
        1);
}

TEST(Numeric, InputNormalizationIntoFirstLayer) {
  Weights w;
  check(model("g (float[1,3,2,2] X) => (float[1,5] Y)",
              w("mean", {1, 3, 1, 1}) + ", " + w("std", {1, 3, 1, 1}, 0.2, 2.0) + ", " +
                  w("W", {12, 5}) + ", " + w("B", {5}),
              "S = Sub(X, mean)\nD = Div(S, std)\nF = Flatten(D)\nM = MatMul(F, W)\n"
              "Y = Add(M, B)"),
        2);
}

TEST(Numeric, ScaleAfterConvAndNormalizationBeforeUnpaddedConv) {
  Weights w;
  check(model("g (float[1,2,5,5] X) => (float[1,3,3,3] Y)",
              w("mean", {2, 1, 1}) + ", " + w("W", {3, 2, 3, 3}) + ", " + w("k", {3, 1, 1}),
              "S = Sub(X, mean)\nC = Conv(S, W)\nY = Mul(C, k)"),
        1);
}

TEST(Numeric, PadIntoConv) {
  Weights w;
  check(model("g (float[1,2,4,4] X) => (float[1,3,5,5] Y)",
              w("W", {3, 2, 3, 3}) + ", int64[8] pads = {0,0,1,0,0,0,2,2}",
              "P = Pad(X, pads)\nY = Conv<pads = [0,1,0,0]>(P, W)", 11),
        1);
}

TEST(Numeric, WholeInputConvBecomesGemm) {
  Weights w;
  check(model("g (float[1,3,4,4] X) => (float[1,6] Y)", w("W", {6, 3, 4, 4}) + ", " + w("B", {6}),
              "C = Conv(X, W, B)\nY = Flatten(C)"),
        2);
}

// Slice -> Unsqueeze -> Mul and Transpose -> MatMul -> Transpose, summed: one Gemm over the
// flattened inputs (P stays: the Relu reads it), reshaped back to [1, 2, 3].
TEST(Numeric, LinearRegionAcrossLayoutOps) {
  Weights w;
  check(model("g (float[1,6] X, float[1,2,3] Z) => (float[1,2,3] Y, float[1,4] R)",
              w("W1", {6, 4}) + ", " + w("b1", {4}) + ", " + w("c", {1, 1, 3}) + ", " +
                  w("W3", {2, 2}) +
                  ", int64[1] st = {1}, int64[1] en = {3}, int64[1] ax = {1}, int64[1] ua = {2}",
              "P = Gemm(X, W1, b1)\n"
              "R = Relu(P)\n"
              "S = Slice(P, st, en, ax)\n"
              "U = Unsqueeze(S, ua)\n"
              "T = Mul(U, c)\n"
              "Q = Transpose<perm = [0,2,1]>(Z)\n"
              "V = MatMul(Q, W3)\n"
              "VT = Transpose<perm = [0,2,1]>(V)\n"
              "Y = Add(T, VT)"),
        6);
}

// Gather on a middle axis, Div by a constant, ReduceSum, Neg, Slice and Concat from one input:
// Flatten + Gemm.
TEST(Numeric, LinearRegionOfSelectionsAndSums) {
  Weights w;
  check(model("g (float[1,3,4] X) => (float[1,5] Y)",
              w("d", {4}, 0.5, 2.0) +
                  ", int64[2] idx = {2, 0}, int64[1] rax = {1}, int64[1] st = {11}, "
                  "int64[1] en = {12}, int64[1] ax = {1}",
              "G = Gather<axis = 1>(X, idx)\n"
              "D = Div(G, d)\n"
              "S = ReduceSum<keepdims = 0>(D, rax)\n"
              "N = Neg(S)\n"
              "F = Flatten(X)\n"
              "L = Slice(F, st, en, ax)\n"
              "Y = Concat<axis = 1>(N, L)"),
        2);
}

// Gemm -> Reshape -> ConvTranspose -> Pad (a generator's first layers, as in cgan_2023): one Gemm
// and a Reshape.
TEST(Numeric, LinearRegionThroughConvTranspose) {
  Weights w;
  check(model("g (float[1,5] X) => (float[1,4,7,7] Y)",
              w("W", {5, 32}) + ", " + w("b", {32}) + ", " + w("K", {8, 4, 3, 3}) + ", " +
                  w("kb", {4}) +
                  ", int64[4] shape = {1, 8, 2, 2}, int64[8] pads = {0, 0, 1, 1, 0, 0, 1, 1}",
              "G = Gemm(X, W, b)\n"
              "R = Reshape(G, shape)\n"
              "C = ConvTranspose<strides = [2,2]>(R, K, kb)\n"
              "Y = Pad(C, pads)"),
        2);
}
// The slimmed graph's nodes as "Op(input kinds)", where an input kind is "c" for a constant and
// the producing op's type otherwise ("in" for a graph input).
std::vector<std::string> node_forms(const common::Graph& g) {
  std::map<std::string, std::string> producer;
  for (const common::Node& n : g.nodes) {
    for (const std::string& out : n.outputs) producer[out] = n.op_type;
  }
  std::vector<std::string> forms;
  for (const common::Node& n : g.nodes) {
    std::string form = n.op_type + "(";
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const std::string& in = n.inputs[k];
      form += (k ? "," : "") + (g.initializer(in)    ? std::string("c")
                                : producer.count(in) ? producer[in]
                                                     : std::string("in"));
    }
    forms.push_back(form + ")");
  }
  return forms;
}

// Slims `text`, expects exactly the node forms `forms` (see node_forms), and compares both models
// under onnxruntime.
void check_forms(const std::string& text, const std::vector<std::string>& forms) {
  EXPECT_EQ(node_forms(testing::slim_text(text)), forms);
  check(text, static_cast<int64_t>(forms.size()));
}

// A class token concatenated in front of computed tokens, then a position embedding of lower
// rank added: the Add moves onto the computed part (with the embedding's rows for it) and the
// token's sum is folded.
TEST(Numeric, AddAfterConcatWithAConstantPartMovesOntoTheComputedPart) {
  Weights w;
  const std::string text =
      model("g (float[1,4,6] X) => (float[1,5,6] Y)", w("cls", {1, 1, 6}) + ", " + w("pos", {5, 6}),
            "R = Relu(X)\n"
            "C = Concat<axis = 1>(cls, R)\n"
            "Y = Add(C, pos)");
  check_forms(text, {"Relu(in)", "Add(Relu,c)", "Concat(c,Add)"});
}

// The constant on the left of a Sub, broadcast along the Concat's (negative) axis, and the
// computed part last: the order of the operands and of the parts is kept.
TEST(Numeric, SubFromAConstantOverAConcatKeepsTheOperandOrder) {
  Weights w;
  const std::string text =
      model("g (float[2,3] X) => (float[2,5] Y)", w("k", {2, 2}) + ", " + w("c", {2, 1}),
            "R = Relu(X)\n"
            "C = Concat<axis = -1>(k, R)\n"
            "Y = Sub(c, C)");
  check_forms(text, {"Relu(in)", "Sub(c,Relu)", "Concat(c,Sub)"});
}

// Two computed parts would need an op each: the graph is left as it is.
TEST(Numeric, ConcatOfTwoComputedPartsKeepsItsOp) {
  Weights w;
  const std::string text =
      model("g (float[1,4] X) => (float[1,10] Y)", w("k", {1, 2}) + ", " + w("c", {10}),
            "R = Relu(X)\n"
            "S = Sigmoid(X)\n"
            "C = Concat<axis = 1>(R, k, S)\n"
            "Y = Mul(C, c)");
  check_forms(text, {"Relu(in)", "Sigmoid(in)", "Concat(Relu,c,Sigmoid)", "Mul(Concat,c)"});
}

}  // namespace
}  // namespace slimonnx

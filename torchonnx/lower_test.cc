// Lowering decisions, checked on the generated forward text: fusions, functional forms, dead code,
// the header and imports, and the error for unsupported ops (the batch: lower_batch_test.cc).
#include "torchonnx/lower.h"

#include <gtest/gtest.h>

#include "common/testing.h"
#include "torchonnx/convert.h"
#include "torchonnx/emit.h"
#include "torchonnx/pyfmt.h"
#include "torchonnx/test_util.h"

namespace torchonnx {
namespace {

using testing::body_of;

TEST(Lower, ConvFollowedByBatchNormIsOneLayer) {
  EXPECT_EQ(body_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] x) => (float[1,2,4,4] y)
    <float[2,2,1,1] w = {1, 0, 0, 1}, float[2] s = {2, 3}, float[2] b = {0, 1},
     float[2] m = {0, 0}, float[2] v = {1, 1}> {
      c = Conv(x, w)
      y = BatchNormalization(c, s, b, m, v)
    })"),
            "conv1 = F.conv2d(x, self.conv1.weight, self.conv1.bias)\nreturn conv1\n");
}

// An ONNX-text model of one Conv over x with initializer weights (all 0.5) and optional bias.
std::string conv_model(const std::string& x, const std::vector<int64_t>& w, bool bias,
                       const std::string& attrs) {
  auto values = [](int64_t n) {
    std::string v;
    for (int64_t i = 0; i < n; ++i) v += i ? ", 0.5" : "0.5";
    return "{" + v + "}";
  };
  int64_t count = 1;
  std::string dims;
  for (int64_t d : w) {
    count *= d;
    dims += (dims.empty() ? "" : ",") + std::to_string(d);
  }
  return "<ir_version: 8, opset_import: [\"\" : 13]>\n g (float[" + x +
         "] x) => (float y) <float[" + dims + "] w = " + values(count) +
         (bias ? ", float[" + std::to_string(w[0]) + "] b = " + values(w[0]) : "") +
         "> {\n y = Conv " + attrs + " (x, w" + (bias ? ", b" : "") + ")\n}";
}

// A kernel that tiles its input (stride = kernel) is one F.linear over the tiles; one that covers
// the whole input, F.linear over the flattened input; a remainder keeps the convolution (F.conv2d
// with the nn.Conv2d layer's parameters).
TEST(Lower, ConvolutionsOverTilesAreLinear) {
  EXPECT_EQ(body_of(conv_model("1,3,8,12", {6, 3, 4, 3}, true, "<strides = [4, 3]>")),
            "conv1 = F.linear(x.reshape(-1, 3, 2, 4, 4, 3).permute(0, 2, 4, 1, 3, 5).flatten(3), "
            "self.conv1.weight.flatten(1), self.conv1.bias).permute(0, 3, 1, 2)\nreturn conv1\n");
  EXPECT_EQ(body_of(conv_model("2,3,12", {5, 3, 4}, false, "<strides = [4]>")),
            "conv1 = F.linear(x.reshape(-1, 3, 3, 4).permute(0, 2, 1, 3).flatten(2), "
            "self.conv1.weight.flatten(1)).permute(0, 2, 1)\nreturn conv1\n");
  EXPECT_EQ(body_of(conv_model("1,3,7", {5, 3, 7}, false, "")),
            "conv1 = F.linear(x.flatten(1), self.conv1.weight.flatten(1)).reshape(-1, 5, 1)\n"
            "return conv1\n");
  EXPECT_EQ(
      body_of(conv_model("1,3,9,12", {6, 3, 4, 3}, true, "<strides = [4, 3]>")),
      "conv1 = F.conv2d(x, self.conv1.weight, self.conv1.bias, stride=(4, 3))\nreturn conv1\n");
  EXPECT_EQ(body_of(conv_model("1,3,8,12", {6, 3, 4, 3}, true,
                               "<strides = [4, 3], pads = [0, 0, 0, 0]>")),
            "conv1 = F.linear(x.reshape(-1, 3, 2, 4, 4, 3).permute(0, 2, 4, 1, 3, 5).flatten(3), "
            "self.conv1.weight.flatten(1), self.conv1.bias).permute(0, 3, 1, 2)\nreturn conv1\n");
  EXPECT_EQ(body_of(conv_model("1,3,8,12", {6, 3, 4, 3}, true,
                               "<strides = [4, 3], pads = [1, 0, 1, 0]>")),
            "conv1 = F.conv2d(x, self.conv1.weight, self.conv1.bias, stride=(4, 3), padding=(1, "
            "0))\nreturn conv1\n");
  EXPECT_EQ(body_of(conv_model("1,3,8,12", {6, 3, 1, 1}, true, "")),
            "conv1 = F.conv2d(x, self.conv1.weight, self.conv1.bias)\nreturn conv1\n");
}

// LayerNormalization with constant scale and bias over the normalized dims is an nn.LayerNorm;
// a scale given at run time (or broadcast over other dims) is applied after F.layer_norm.
TEST(Lower, LayerNormWithConstantScaleIsALayer) {
  EXPECT_EQ(body_of(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3,4] x) => (float[2,3,4] y) <float[4] s = {1, 2, 3, 4}, float[4] b = {0, 1, 0, 1}> {
      y = LayerNormalization <axis = -1> (x, s, b)
    })"),
            "layer_norm1 = self.layer_norm1(x)\nreturn layer_norm1\n");
  EXPECT_EQ(body_of(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3,4] x) => (float[2,3,4] y) <float[1,3,4] s = {1,2,3,4,5,6,7,8,9,10,11,12}> {
      y = LayerNormalization <axis = 1, epsilon = 0.001> (x, s)
    })"),
            "layer_norm1 = self.layer_norm1(x)\nreturn layer_norm1\n");
  EXPECT_EQ(body_of(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3,4] x, float[4] s) => (float[2,3,4] y) {
      y = LayerNormalization <axis = -1> (x, s)
    })"),
            "layer_norm1 = F.layer_norm(x, (4,), eps=1e-05) * s\nreturn layer_norm1\n");
}

TEST(Lower, UnsqueezeConcatIsStackUnlessAnUnsqueezeIsReadElsewhere) {
  // torch.stack as PyTorch exports it; the batch stays free when the new axis is not dim 0.
  EXPECT_EQ(body_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3] x) => (float[1,2,3] y) <int64[1] ax = {1}> {
      s = Sigmoid(x)
      a = Unsqueeze(x, ax)
      b = Unsqueeze(s, ax)
      y = Concat<axis = 1>(a, b)
    })"),
            "sigmoid1 = torch.sigmoid(x)\nstack1 = torch.stack([x, sigmoid1], 1)\nreturn stack1\n");
  // An Unsqueeze that is also a graph output keeps its statement, and so the Concat stays a cat.
  EXPECT_EQ(body_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3] x) => (float[1,2,3] y, float[1,1,3] a) <int64[1] ax = {1}> {
      s = Sigmoid(x)
      a = Unsqueeze(x, ax)
      b = Unsqueeze(s, ax)
      y = Concat<axis = 1>(a, b)
    })"),
            "sigmoid1 = torch.sigmoid(x)\nunsqueeze1 = x.unsqueeze(1)\nunsqueeze2 = "
            "sigmoid1.unsqueeze(1)\ncat1 = torch.cat([unsqueeze1, unsqueeze2], 1)\nreturn cat1\n"
            "return unsqueeze1\n");
}

TEST(Lower, NodesReadingTheSameWeightsShareOneLayer) {
  // Two Gemms on one weight and bias (a shared layer, or an unrolled loop body): one nn.Linear.
  // A third with the same shapes but its own bias gets its own layer.
  EXPECT_EQ(body_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2] x) => (float[1,2] y)
    <float[2,2] w = {1, 2, 3, 4}, float[2] b = {1, -1}, float[2] c = {0, 2}> {
      h1 = Gemm<transB = 1>(x, w, b)
      r1 = Tanh(h1)
      h2 = Gemm<transB = 1>(r1, w, b)
      r2 = Tanh(h2)
      y = Gemm<transB = 1>(r2, w, c)
    })"),
            "fc1 = F.linear(x, self.fc1.weight, self.fc1.bias)\ntanh1 = torch.tanh(fc1)\n"
            "fc2 = F.linear(tanh1, self.fc1.weight, self.fc1.bias)\ntanh2 = torch.tanh(fc2)\n"
            "fc3 = F.linear(tanh2, self.fc2.weight, self.fc2.bias)\nreturn fc3\n");
}

TEST(Lower, ThreeProductsOfOneInputAreOneLinearAndASplit) {
  // Gemm, MatMul + Add and a bare MatMul of x: one nn.Linear with their rows stacked (the bare
  // product's bias rows are zero). A pair of products of r is left as two calls.
  const std::string model = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2] x) => (float[1,1] a, float[1,2] b, float[1,1] c, float[1,1] d, float[1,1] e)
    <float[1,2] w1 = {1, 2}, float[1] b1 = {5}, float[2,2] w2 = {1, 2, 3, 4}, float[2] b2 = {6, 7},
     float[2,1] w3 = {8, 9}, float[2,1] w4 = {1, 1}, float[2,1] w5 = {2, 2}> {
      a = Gemm<transB = 1>(x, w1, b1)
      m = MatMul(x, w2)
      b = Add(m, b2)
      c = MatMul(x, w3)
      r = Relu(x)
      d = MatMul(r, w4)
      e = MatMul(r, w5)
    })";
  EXPECT_EQ(body_of(model),
            "fc1, fc2, fc3 = F.linear(x, self.fc1.weight, self.fc1.bias).split([1, 2, 1], -1)\n"
            "relu1 = x.relu()\nfc4 = F.linear(relu1, self.fc2.weight)\n"
            "fc5 = F.linear(relu1, self.fc3.weight)\n"
            "return fc1\nreturn fc2\nreturn fc3\nreturn fc4\nreturn fc5\n");
  auto g = common::testing::parse_text(model, "m.onnx");
  ASSERT_TRUE(g.ok());
  ConvertOptions options;
  options.slim = false;
  auto c = convert(std::move(*g), options);
  ASSERT_TRUE(c.ok());
  const Layer& fc1 = c->module.layers.at(0);
  EXPECT_EQ(fc1.ctor.str(), "nn.Linear(2, 4)");
  EXPECT_EQ(fc1.params.at(0).tensor.to_double(), (std::vector<double>{1, 2, 1, 3, 2, 4, 8, 9}));
  EXPECT_EQ(fc1.params.at(1).tensor.to_double(), (std::vector<double>{5, 6, 7, 0}));
}

TEST(Lower, ChainsOfSlicesGathersAndSplitsAreOneSubscript) {
  // Slice -> Split -> Slice (-> Gather) index x once. The Split stays for its part p, a graph
  // output; its other part is read by nothing now and unpacks into "_".
  EXPECT_EQ(body_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,12,9] x) => (float[1,4,9] p, float[1,2,9] y, float[1,2] z)
    <int64[1] s = {2}, int64[1] e = {11}, int64[1] one = {1}, int64[2] sizes = {4, 5},
     int64[1] s2 = {1}, int64[1] e2 = {3}, int64 k = {7}> {
      a = Slice(x, s, e, one)
      p, q = Split<axis = 1>(a, sizes)
      y = Slice(p, s2, e2, one, s2)
      b = Slice(q, s2, e2, one)
      z = Gather<axis = 2>(b, k)
    })"),
            "split1, _ = torch.split(x[:, 2:11], [4, 5], 1)\nslice2 = x[:, 3:5]\n"
            "gather1 = x[:, 7:9, 7]\nreturn split1\nreturn slice2\nreturn gather1\n");
}

TEST(Lower, ScalarConstantsAreInlinedAndNegativeStepsFlip) {
  EXPECT_EQ(body_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4,5] x) => (float[4,2] y)
    <float half = {0.5}, int64[1] st = {4}, int64[1] en = {0}, int64[1] ax = {1},
     int64[1] sp = {-2}> {
      h = Mul(x, half)
      y = Slice(h, st, en, ax, sp)
    })"),
            "mul1 = x * 0.5\nslice1 = mul1.flip(1)[:, :3:2]\nreturn slice1\n");
}

TEST(Lower, DataDependentGatherIsIndexing) {
  EXPECT_EQ(body_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[5,3] x, int64[2] i) => (float[2,3] y) {
      y = Gather(x, i)
    })"),
            "gather1 = x[i]\nreturn gather1\n");
}

TEST(Lower, UnsupportedOpNamesOpNodeAndOpset) {
  EXPECT_EQ(body_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,2] x) => (float[2,2] y) {
      y = RandomUniformLike(x)
    })"),
            "error: m.onnx: node 'RandomUniformLike_0' (RandomUniformLike): op has no PyTorch "
            "lowering (opset 13)");
}

// Python literals: the shortest text that reads back as the same float, in plain notation for
// ordinary magnitudes (the expected texts are Python's own repr of these values).
TEST(PyFloat, ShortestRoundTripPlainNotation) {
  EXPECT_EQ(py_float(10.0), "10.0");
  EXPECT_EQ(py_float(-300.0), "-300.0");
  EXPECT_EQ(py_float(0.1), "0.1");
  EXPECT_EQ(py_float(2.5e-05), "2.5e-05");
  EXPECT_EQ(py_float(1e20), "1e+20");
  EXPECT_EQ(py_float(0.1, false), "0.1");
  EXPECT_EQ(py_float(1.0 / 3.0, false), "0.3333333333333333");
  const float big = 123456792.0f;  // float32 nearest to 123456789
  const std::string text = py_float(big);
  EXPECT_EQ(text.find('e'), std::string::npos) << text;
  EXPECT_EQ(std::strtof(text.c_str(), nullptr), big) << text;
}

TEST(Emit, HeaderImportsAndDeterminism) {
  const std::string text = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3] x) => (float[1,3] y) {
      y = LeakyRelu <alpha = 0.5> (x)
    })";
  auto g1 = common::testing::parse_text(text, "dir/m.onnx");
  auto g2 = common::testing::parse_text(text, "dir/m.onnx");
  ASSERT_TRUE(g1.ok() && g2.ok());
  auto a = convert(std::move(*g1), {});
  auto b = convert(std::move(*g2), {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->python, b->python);
  EXPECT_EQ(a->python, "# Generated by torchonnx " SUITE_VERSION
                       " from dir/m.onnx; regenerate rather than edit.\n"
                       "# Inputs (positional arguments of forward):\n"
                       "#   x: float [N, 3]\n"
                       "# Outputs:\n"
                       "#   y: float [N, 3]\n"
                       "# N: batch size, any value.\n"
                       "import torch.nn.functional as F\n"
                       "from torch import nn\n"
                       "\n\n"
                       "class Model(nn.Module):\n"
                       "    def __init__(self):\n"
                       "        super().__init__()\n"
                       "\n"
                       "    def forward(self, x):\n"
                       "        leaky_relu1 = F.leaky_relu(x, 0.5)  # LeakyRelu_0\n"
                       "        return leaky_relu1\n");
}

}  // namespace
}  // namespace torchonnx

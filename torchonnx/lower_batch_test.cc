// How lowering keeps the batch free: reshapes that write -1, the batch followed out of dim 0 by
// the probe (inference at twice the batch size), and the declared sizes where it cannot be.
#include <gtest/gtest.h>

#include "common/testing.h"
#include "shapeonnx/infer.h"
#include "torchonnx/batch_probe.h"
#include "torchonnx/convert.h"
#include "torchonnx/test_util.h"

namespace torchonnx {
namespace {

using testing::body_of;

// Einsum keeps the batch when every input is batched and dim 0 keeps its label; otherwise the
// model keeps its declared sizes (the reshape below writes the batch size 1 out).
TEST(Lower, EinsumKeepsTheBatchWhenItsLabelLeads) {
  const std::string model = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3] x, float[1,3,4] y) => (float[1,8] z) <int64[2] shape = {1, 8}> {
      e = Einsum <equation = "EQUATION"> (x, y)
      z = Reshape(e, shape)
    })";
  auto with = [&](const std::string& equation) {
    std::string text = model;
    text.replace(text.find("EQUATION"), 8, equation);
    return body_of(text);
  };
  EXPECT_EQ(with("bij,bjk->bik"),
            "einsum1 = torch.einsum(\"bij,bjk->bik\", x, y)\nreshape1 = einsum1.reshape(-1, 8)\n"
            "return reshape1\n");
  EXPECT_EQ(with("...ij,...jk->...ik"),
            "einsum1 = torch.einsum(\"...ij,...jk->...ik\", x, y)\n"
            "reshape1 = einsum1.reshape(-1, 8)\nreturn reshape1\n");
  EXPECT_EQ(with("bij,cjk->cik"),
            "einsum1 = torch.einsum(\"bij,cjk->cik\", x, y)\nreshape1 = einsum1.reshape(1, 8)\n"
            "return reshape1\n");
}

// Sequence-first attention (as nn.MultiheadAttention exports): the batch moves to dim 1, merges
// with the heads (Reshape to [seq, batch * heads, d]) and comes back. Inference at twice the batch
// size shows where it is, so every reshape writes -1 there and the batch stays free.
constexpr const char* kSeqFirstAttention = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3,4] x) => (float[N,3,4] y) <int64[3] heads = {3, TARGET, 2}, int64[3] back = {3, -1, 4}> {
      t = Transpose <perm = [1, 0, 2]> (x)
      h = Reshape(t, heads)
      p = Transpose <perm = [1, 0, 2]> (h)
      a = Softmax <axis = -1> (p)
      q = Transpose <perm = [1, 0, 2]> (a)
      r = Reshape(q, back)
      y = Transpose <perm = [1, 0, 2]> (r)
    })";

common::Result<Converted> convert_attention(const std::string& target) {
  std::string text = kSeqFirstAttention;
  text.replace(text.find("TARGET"), 6, target);
  auto g = common::testing::parse_text(text, "m.onnx");
  if (!g.ok()) return g.error();
  ConvertOptions options;
  options.slim = false;
  return convert(std::move(*g), options);
}

TEST(Lower, BatchMovedByTransposesAndMergedByReshapesStaysFree) {
  auto c = convert_attention("-1");
  ASSERT_TRUE(c.ok()) << c.error().str();
  EXPECT_EQ(c->module.fixed_batch, "");
  std::string body;
  for (const Statement& s : c->module.body) body += s.targets[0] + " = " + s.expr.str() + "\n";
  EXPECT_EQ(body,
            "permute1 = x.permute(1, 0, 2)\nreshape1 = permute1.reshape(3, -1, 2)\n"
            "permute2 = reshape1.permute(1, 0, 2)\nsoftmax1 = F.softmax(permute2, -1)\n"
            "permute3 = softmax1.permute(1, 0, 2)\nreshape2 = permute3.reshape(3, -1, 4)\n"
            "permute4 = reshape2.permute(1, 0, 2)\n");
  EXPECT_NE(c->python.find("# N: batch size, any value."), std::string::npos);
}

TEST(Lower, BatchHardCodedInAMovedReshapeKeepsTheDeclaredSizes) {
  // [3, 2, 2] only fits batch 1: at batch 2 the model does not infer, so nothing tells where the
  // batch went, and the code keeps the declared sizes.
  auto c = convert_attention("2");
  ASSERT_TRUE(c.ok()) << c.error().str();
  EXPECT_EQ(c->module.fixed_batch, "Reshape_1 (Reshape)");
  EXPECT_NE(c->python.find("reshape(3, 2, 2)"), std::string::npos);
}

// The probe names the dim that doubles with the batch: dim 1 after the transpose and inside
// [seq, batch * heads, d], dim 0 again after the transpose back; -2 where a dim grows by another
// rule (N + 1 rows after appending a token).
TEST(BatchProbe, FindsTheDimThatDoublesWithTheBatch) {
  std::string text = kSeqFirstAttention;
  text.replace(text.find("TARGET"), 6, "-1");
  auto parsed = common::testing::parse_text(text, "m.onnx");
  ASSERT_TRUE(parsed.ok());
  common::Graph inferred = *parsed;
  ASSERT_TRUE(shapeonnx::infer(inferred).ok());
  const BatchAxes axes = probe_batch_axes(*parsed, inferred, {});
  auto axis = [&](const char* v) { return axes.count(v) ? axes.at(v).axis : -99; };
  EXPECT_EQ(axis("t"), 1);
  EXPECT_EQ(axis("h"), 1);
  EXPECT_EQ(axis("p"), 0);
  EXPECT_EQ(axis("r"), 1);
  EXPECT_EQ(axis("y"), 0);
  EXPECT_EQ(axes.at("h").dims, (common::Dims{3, 2, 2}));

  auto token = common::testing::parse_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3] x) => (float[M,3] y) <float[1,3] t = {1, 2, 3}> {
      y = Concat <axis = 0> (x, t)
    })",
                                           "t.onnx");
  ASSERT_TRUE(token.ok());
  common::Graph token_inferred = *token;
  ASSERT_TRUE(shapeonnx::infer(token_inferred).ok());
  EXPECT_EQ(probe_batch_axes(*token, token_inferred, {}).at("y").axis, -2);
}

TEST(Lower, MatMulPlusBiasIsLinearAndBatchIsFree) {
  // Reshape to a hard-coded [1, 6] keeps the batch: written as -1.
  EXPECT_EQ(body_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3] x) => (float[1,2] y)
    <int64[2] shape = {1, 6}, float[6,2] w = {1,2,3,4,5,6,7,8,9,10,11,12}, float[2] b = {1, 2}> {
      f = Reshape(x, shape)
      m = MatMul(f, w)
      a = Add(m, b)
      y = Relu(a)
    })"),
            "reshape1 = x.reshape(-1, 6)\nfc1 = F.linear(reshape1, self.fc1.weight, "
            "self.fc1.bias)\nrelu1 = fc1.relu()\n"
            "return relu1\n");
}

TEST(Lower, ModelWithoutBatchKeepsDeclaredShapes) {
  EXPECT_EQ(body_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[6] x) => (float[2,3] y) <int64[2] shape = {2, 3}> {
      y = Reshape(x, shape)
    })"),
            "reshape1 = x.reshape(2, 3)\nreturn reshape1\n");
}

}  // namespace
}  // namespace torchonnx

#include "slimonnx/pass.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/testing.h"
#include "shapeonnx/infer.h"
#include "slimonnx/slim.h"

namespace slimonnx {
namespace {

TEST(PassRegistryTest, EveryPassHasOneNameAndListsInRunOrder) {
  const PassRegistry& passes = registered_passes();
  EXPECT_EQ(passes.duplicates(), std::vector<std::string>{});
  const std::vector<PassInfo> listed = list_passes();
  ASSERT_EQ(listed.size(), passes.size());
  for (size_t i = 0; i < listed.size(); ++i) {
    EXPECT_EQ(listed[i].name, passes.entries()[i].name);
    EXPECT_NE(passes.entries()[i].rule.run, nullptr) << listed[i].name;
  }
  EXPECT_EQ(listed.front().name, "constant-folding");
  EXPECT_EQ(passes.find("no-such-pass"), nullptr);
}

// A Slice whose starts come from a graph input, inferred with that input's contents given in
// advance: its output's shape rests on a guess about run-time data. run keeps it (torchonnx lowers
// the slimmed graph with it, inferring nothing again); forget_untrusted_shapes, which slimonnx
// calls before it writes a file, drops it.
TEST(SlimShapes, RunKeepsUntrustedShapesUntilTheFileIsWritten) {
  common::Result<common::Graph> g = common::testing::parse_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,8] X, int64[1] S) => (float[2,6] Y) <int64[1] E = {8}, int64[1] A = {1}> {
      Z = Slice(X, S, E, A)
      R = Relu(Z)
      Y = Identity(R)
    })");
  ASSERT_TRUE(g.ok()) << g.error().str();
  shapeonnx::Options guess;
  guess.input_values["S"] = common::Tensor::from_int64({2}, {1});
  common::Status inferred = shapeonnx::infer(*g, guess);
  ASSERT_TRUE(inferred.ok()) << inferred.error().str();
  ASSERT_EQ(g->value("Z").shape, (common::Dims{2, 6}));
  ASSERT_TRUE(run(*g).ok());
  EXPECT_TRUE(g->value("Z").shape.has_value());
  forget_untrusted_shapes(*g);
  EXPECT_FALSE(g->value("Z").shape.has_value());
  EXPECT_EQ(g->value("Z").dtype, common::DType::kUndefined);
  ASSERT_TRUE(g->value("Y").shape.has_value());  // a graph output keeps its shape
  EXPECT_EQ(*g->value("Y").shape, (common::Dims{2, 6}));
}

}  // namespace
}  // namespace slimonnx

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shapeonnx/rules/rules.h"
#include "shapeonnx/rules/util.h"

namespace shapeonnx {
namespace {

// The 50 op types of the VNN-COMP 2024 models (docs/DESIGN.md).
constexpr std::string_view kVnncompOps =
    "Add ArgMax AveragePool BatchNormalization Cast Clip Concat Constant ConstantOfShape Conv "
    "ConvTranspose Cos Div Dropout Equal Expand Flatten Floor Gather Gemm LeakyRelu MatMul Max "
    "MaxPool Min Mul Neg Pad Pow Range ReduceMean ReduceSum Relu Reshape Resize ScatterND Shape "
    "Sigmoid Sign Sin Slice Softmax Split Squeeze Sub Tanh Transpose Unsqueeze Upsample Where";

TEST(RuleRegistry, CoversEveryVnncompOp) {
  ShapeRegistry ops;
  add_rules(ops, kVnncompOps, nullptr);
  ASSERT_EQ(ops.size(), 50u);
  for (const auto& [op, unused] : ops.entries()) {
    EXPECT_NE(find_rule(op), nullptr) << "no rule for " << op;
  }
}

TEST(RuleRegistry, NoOpIsRegisteredTwice) {
  ShapeRegistry table;
  register_elementwise_rules(table);
  register_activation_rules(table);
  register_shape_rules(table);
  register_index_rules(table);
  register_conv_rules(table);
  register_pool_rules(table);
  register_norm_rules(table);
  register_linalg_rules(table);
  register_quant_rules(table);
  register_reduce_rules(table);
  register_generator_rules(table);
  register_resize_rules(table);
  register_recurrent_rules(table);
  register_signal_rules(table);
  register_training_rules(table);
  register_text_rules(table);
  EXPECT_EQ(table.duplicates(), std::vector<std::string>{});
  for (const auto& [op, rule] : table.entries()) EXPECT_NE(rule, nullptr) << op;
  EXPECT_EQ(rule_ops(), table.names());
}

}  // namespace
}  // namespace shapeonnx

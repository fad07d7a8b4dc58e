#include "propdag/registry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace propdag {
namespace {

TEST(RegistryTest, EveryOpHasOneRule) {
  EXPECT_EQ(op_rules().duplicates(), std::vector<std::string>{});
  for (const auto& [op, rule] : op_rules().entries()) EXPECT_NE(rule, nullptr) << op;
  EXPECT_EQ(supported_ops(), op_rules().names());
  EXPECT_NE(find_rule("Relu"), nullptr);
  EXPECT_EQ(find_rule("NoSuchOp"), nullptr);
}

}  // namespace
}  // namespace propdag

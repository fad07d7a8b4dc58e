#include "slimonnx/pass.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

}  // namespace
}  // namespace slimonnx

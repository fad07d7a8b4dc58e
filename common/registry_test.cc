#include "common/registry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/eval/kernels.h"

namespace common {
namespace {

using Strings = std::vector<std::string>;

int one() { return 1; }
int two() { return 2; }
using Fn = int (*)();

TEST(RegistryTest, FindsWhatWasAddedAndNothingElse) {
  Registry<Fn> r;
  EXPECT_TRUE(r.add("Relu", one));
  EXPECT_TRUE(r.add("Add", two));
  ASSERT_NE(r.find("Relu"), nullptr);
  EXPECT_EQ((*r.find("Relu"))(), 1);
  EXPECT_EQ((*r.find("Add"))(), 2);
  EXPECT_EQ(r.find("NoSuchOp"), nullptr);
  EXPECT_EQ(r.find("relu"), nullptr);  // op types are case-sensitive
  EXPECT_EQ(r.find(""), nullptr);
  EXPECT_TRUE(r.contains("Add"));
  EXPECT_FALSE(r.contains("Sub"));
  EXPECT_EQ(r.size(), 2u);
}

TEST(RegistryTest, RefusesASecondRuleForAName) {
  Registry<Fn> r;
  EXPECT_TRUE(r.add("Relu", one));
  EXPECT_FALSE(r.add("Relu", two));
  EXPECT_EQ((*r.find("Relu"))(), 1);  // the first registration stays
  EXPECT_EQ(r.size(), 1u);
  EXPECT_EQ(r.duplicates(), Strings{"Relu"});
  EXPECT_FALSE(r.add("Relu", one));
  EXPECT_EQ(r.duplicates(), (Strings{"Relu", "Relu"}));
}

TEST(RegistryTest, ListsNamesSortedAndEntriesInRegistrationOrder) {
  Registry<Fn> r;
  r.add({{"Sub", one}, {"Add", two}, {"Mul", one}, {"Add", one}});
  EXPECT_EQ(r.names(), (Strings{"Add", "Mul", "Sub"}));
  Strings order;
  for (const auto& [name, rule] : r.entries()) order.push_back(name);
  EXPECT_EQ(order, (Strings{"Sub", "Add", "Mul"}));
  EXPECT_EQ(r.duplicates(), Strings{"Add"});
  EXPECT_EQ((*r.find("Add"))(), 2);
}

TEST(RegistryTest, EmptyRegistryListsNothing) {
  const Registry<Fn> r;
  EXPECT_EQ(r.find("Add"), nullptr);
  EXPECT_TRUE(r.names().empty());
  EXPECT_TRUE(r.entries().empty());
  EXPECT_TRUE(r.duplicates().empty());
}

TEST(RegistryTest, EvaluatorRegistersEveryKernelOnce) {
  const eval::KernelRegistry& kernels = eval::registry();
  EXPECT_EQ(kernels.duplicates(), Strings{});
  EXPECT_NE(kernels.find("Add"), nullptr);
  EXPECT_EQ(kernels.find("NoSuchOp"), nullptr);
  for (const auto& [name, kernel] : kernels.entries()) EXPECT_NE(kernel.fn, nullptr) << name;
}

}  // namespace
}  // namespace common

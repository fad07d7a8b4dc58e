#include "common/names.h"

#include <gtest/gtest.h>

namespace common {
namespace {

TEST(NameScopeTest, SanitizesAndKeepsNamesUnique) {
  NameScope scope;
  EXPECT_EQ(scope.make("input.1"), "input_1");
  EXPECT_EQ(scope.make("input:1"), "input_1_1");  // sanitizes alike, gets a distinct name
  EXPECT_EQ(scope.make("class"), "class_1");      // keyword
  EXPECT_EQ(scope.make("__import__"), "v_import");
  EXPECT_EQ(scope.make("9lives"), "v9lives");
  EXPECT_EQ(scope.make("x\n\"y"), "x_y");
  EXPECT_EQ(scope.make("\xc3\xa9t\xc3\xa9"), "v_t");  // "été": non-ASCII bytes become '_'
}

TEST(NameScopeTest, NumbersByKind) {
  NameScope scope;
  EXPECT_EQ(scope.make("conv", true), "conv1");
  EXPECT_EQ(scope.make("conv", true), "conv2");
  EXPECT_EQ(scope.make("fc2", true), "fc2_1");  // hint ending in a digit keeps it readable
  scope.reserve("relu1");
  EXPECT_EQ(scope.make("relu", true), "relu2");
}

TEST(NameScopeTest, LiteralsAndCommentsAreEscaped) {
  EXPECT_EQ(python_string_literal("a\"b\\c\nd"), "\"a\\\"b\\\\c\\u000ad\"");
  EXPECT_EQ(python_string_literal("\xc3\xa9"), "\"\\u00e9\"");  // é is U+00E9
  EXPECT_EQ(python_comment_text("x\ny"), "x\\u000ay");
}

}  // namespace
}  // namespace common

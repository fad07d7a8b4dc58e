#include "common/error.h"

#include <gtest/gtest.h>

namespace common {
namespace {

TEST(ErrorTest, RendersFileNodeAndOp) {
  Error e{"m.onnx", "conv1", "Conv", "kernel rank 3 does not match input rank 4"};
  EXPECT_EQ(e.str(), "m.onnx: node 'conv1' (Conv): kernel rank 3 does not match input rank 4");
}

TEST(ErrorTest, OmitsMissingParts) {
  EXPECT_EQ((Error{"m.onnx", "", "", "empty input"}).str(), "m.onnx: empty input");
  EXPECT_EQ((Error{"", "", "", "bad"}).str(), "bad");
}

TEST(ErrorTest, HostileNamesStayOnOneLine) {
  Error e{"a\nb.onnx", "x\ny", "Op\t", "line1\nline2"};
  EXPECT_EQ(e.str(), "a\\nb.onnx: node 'x\\ny' (Op\\t): line1\\nline2");
  EXPECT_EQ(e.str().find('\n'), std::string::npos);
}

Result<int> half(int x) {
  if (x % 2) return Error{"", "", "", "odd"};
  return x / 2;
}

Result<int> quarter(int x) {
  ASSIGN_OR_RETURN(int h, half(x));
  return half(h);
}

TEST(ErrorTest, ResultPropagatesErrors) {
  EXPECT_EQ(*quarter(8), 2);
  EXPECT_FALSE(quarter(6).ok());
  EXPECT_EQ(quarter(6).error().message, "odd");
}

}  // namespace
}  // namespace common

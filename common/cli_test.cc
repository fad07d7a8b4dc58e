#include "common/cli.h"

#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace common {
namespace {

TEST(RunGuarded, ReturnsTheBodysExitCode) {
  EXPECT_EQ(run_guarded("tool", "in.onnx", [] { return 0; }), 0);
  EXPECT_EQ(run_guarded("tool", "in.onnx", [] { return 2; }), 2);
}

TEST(RunGuarded, OutOfMemoryIsOneLineNamingTheInput) {
  ::testing::internal::CaptureStderr();
  const int code = run_guarded("tool", "big.onnx", []() -> int { throw std::bad_alloc(); });
  EXPECT_EQ(code, 2);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "tool: big.onnx: out of memory\n");
}

TEST(RunGuarded, OtherExceptionsAreOneLineWithTheirMessage) {
  ::testing::internal::CaptureStderr();
  const int code = run_guarded("tool", "m.onnx", []() -> int {
    std::vector<int> v;
    return v.at(3);  // throws std::out_of_range
  });
  EXPECT_EQ(code, 2);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.rfind("tool: m.onnx: internal error: ", 0), 0u) << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << err;
}

TEST(RunGuarded, MultiLineMessagesStayOnOneLine) {
  ::testing::internal::CaptureStderr();
  run_guarded("tool", "", []() -> int { throw std::runtime_error("first\nsecond"); });
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "tool: internal error: first\\nsecond\n");
}

TEST(ParseInputShape, NameMayHoldEqualsSigns) {
  auto parsed = parse_input_shape("a=b=1,3,224");
  ASSERT_TRUE(parsed.ok()) << parsed.error().str();
  EXPECT_EQ(parsed->first, "a=b");
  EXPECT_EQ(parsed->second, (Dims{1, 3, 224}));
}

TEST(ParseInputShapes, ANameGivenTwiceIsAnError) {
  auto parsed = parse_input_shapes({"x=1,2", "x=3"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().message.find("'x'"), std::string::npos) << parsed.error().str();
}

}  // namespace
}  // namespace common

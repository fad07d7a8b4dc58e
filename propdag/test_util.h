// Helpers of propdag's C++ tests: a Model from ONNX text, and an input box.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "common/testing.h"
#include "propdag/model.h"

namespace propdag::test {

inline Model build(const std::string& text) {
  auto g = common::testing::parse_text(text);
  EXPECT_TRUE(g.ok()) << g.error().str();
  auto m = Model::build(std::move(g).value());
  EXPECT_TRUE(m.ok()) << m.error().str();
  return std::move(m).value();
}

inline Interval box(std::vector<double> lo, std::vector<double> hi) {
  return {Eigen::Map<Vec>(lo.data(), lo.size()), Eigen::Map<Vec>(hi.data(), hi.size())};
}

}  // namespace propdag::test

#include "propdag/vnnlib.h"

#include <gtest/gtest.h>

#include <string>

#include "common/testing.h"

namespace propdag {
namespace {

TEST(VnnlibTest, BoxAndConjunction) {
  auto spec = parse_vnnlib(R"(
    ; comment
    (declare-const X_0 Real)
    (declare-const X_1 Real)
    (declare-const Y_0 Real)
    (declare-const Y_1 Real)
    (assert (<= X_0 0.5))
    (assert (>= X_0 -0.5))
    (assert (and (<= X_1 2) (>= X_1 1e-1)))
    (assert (<= Y_0 Y_1))
    (assert (>= Y_0 3.5))
  )",
                           "p.vnnlib");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  EXPECT_EQ(spec->num_inputs, 2);
  EXPECT_EQ(spec->num_outputs, 2);
  ASSERT_EQ(spec->cases.size(), 1u);
  const SpecCase& c = spec->cases[0];
  EXPECT_EQ(c.box.lo, (Vec(2) << -0.5, 0.1).finished());
  EXPECT_EQ(c.box.hi, (Vec(2) << 0.5, 2).finished());
  ASSERT_EQ(c.unsafe.size(), 2u);
  EXPECT_EQ(c.unsafe[0].coef, (Vec(2) << 1, -1).finished());  // Y_0 - Y_1 <= 0
  EXPECT_EQ(c.unsafe[0].rhs, 0);
  EXPECT_EQ(c.unsafe[1].coef, (Vec(2) << -1, 0).finished());  // -Y_0 <= -3.5
  EXPECT_EQ(c.unsafe[1].rhs, -3.5);
}

TEST(VnnlibTest, DisjunctionsOverOutputsAndInputs) {
  auto spec = parse_vnnlib(R"(
    (declare-const X_0 Real)
    (declare-const Y_0 Real)
    (declare-const Y_1 Real)
    (assert (or (and (>= X_0 0) (<= X_0 1)) (and (>= X_0 2) (<= X_0 3))))
    (assert (or (and (<= Y_0 1)) (and (>= (+ Y_0 (* 2 Y_1)) (- 1)))))
  )",
                           "p");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  ASSERT_EQ(spec->cases.size(), 4u);
  EXPECT_EQ(spec->cases[0].box.lo[0], 0);
  EXPECT_EQ(spec->cases[3].box.hi[0], 3);
  // -(Y_0 + 2 Y_1) <= 1
  EXPECT_EQ(spec->cases[1].unsafe[0].coef, (Vec(2) << -1, -2).finished());
  EXPECT_EQ(spec->cases[1].unsafe[0].rhs, 1);
  Interval h = spec->hull();
  EXPECT_EQ(h.lo[0], 0);
  EXPECT_EQ(h.hi[0], 3);
}

// Asserts are conjoined one at a time, extending the conjunctions so far in place; a disjunction
// among them multiplies the cases. 3,000 inputs bounded by one assert each (as image properties
// are), one `or` of two output constraints, then one more output constraint.
TEST(VnnlibTest, ManyAssertsAndADisjunctionAmongThem) {
  const int n = 3000;
  std::string text;
  for (int i = 0; i < n; ++i) text += "(declare-const X_" + std::to_string(i) + " Real)\n";
  text += "(declare-const Y_0 Real)\n(declare-const Y_1 Real)\n";
  for (int i = 0; i < n; ++i) {
    text += "(assert (>= X_" + std::to_string(i) + " " + std::to_string(-i) + "))\n";
    if (i == n / 2) text += "(assert (or (<= Y_0 1) (<= Y_1 2)))\n";
    text += "(assert (<= X_" + std::to_string(i) + " " + std::to_string(i) + "))\n";
  }
  text += "(assert (>= Y_0 Y_1))\n";
  auto spec = parse_vnnlib(text, "p.vnnlib");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  ASSERT_EQ(spec->cases.size(), 2u);
  for (const SpecCase& c : spec->cases) {
    ASSERT_EQ(c.box.lo.size(), n);
    for (int i = 0; i < n; i += 499) {
      EXPECT_EQ(c.box.lo[i], -i);
      EXPECT_EQ(c.box.hi[i], i);
    }
    ASSERT_EQ(c.unsafe.size(), 2u);
    EXPECT_EQ(c.unsafe[1].coef, (Vec(2) << -1, 1).finished());  // Y_1 - Y_0 <= 0
  }
  EXPECT_EQ(spec->cases[0].unsafe[0].coef, (Vec(2) << 1, 0).finished());
  EXPECT_EQ(spec->cases[0].unsafe[0].rhs, 1);
  EXPECT_EQ(spec->cases[1].unsafe[0].coef, (Vec(2) << 0, 1).finished());
  EXPECT_EQ(spec->cases[1].unsafe[0].rhs, 2);
}

TEST(VnnlibTest, ErrorsHaveLines) {
  auto a = parse_vnnlib("(declare-const X_0 Real)\n(assert (<= X_0 1)", "p.vnnlib");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().str(), "p.vnnlib:2: unclosed '('");
  auto b = parse_vnnlib("(declare-const X_0 Real)\n(assert (<= X_0 1))", "p.vnnlib");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("X_0 is not bounded"), std::string::npos);
  auto c = parse_vnnlib("(declare-const X_0 Real)\n\n(assert (<= X_0 foo))", "p.vnnlib");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().str(), "p.vnnlib:3: unknown term 'foo'");
}

// Found by fuzzing: "X_-1" was read as index -1, and the box was then indexed at -1.
TEST(VnnlibTest, NegativeAndHugeIndicesAreNotVariables) {
  const std::string box = "(declare-const X_0 Real)\n(declare-const Y_0 Real)\n";
  auto a = parse_vnnlib(box + "(assert (<= X_-1 2))", "p.vnnlib");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().str(), "p.vnnlib:3: unknown term 'X_-1'");
  auto b = parse_vnnlib("(declare-const X_9223372036854775807 Real)", "p.vnnlib");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().str(), "p.vnnlib:1: unsupported variable 'X_9223372036854775807'");
}

TEST(VnnlibTest, ReadsGzippedAcasXuProperty) {
  std::string dir = common::testing::vnncomp_dir();
  if (dir.empty()) GTEST_SKIP() << "no VNN-COMP benchmarks";
  auto spec = read_vnnlib(dir + "/acasxu_2023/vnnlib/prop_3.vnnlib.gz");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  EXPECT_EQ(spec->num_inputs, 5);
  ASSERT_EQ(spec->cases.size(), 1u);
  EXPECT_EQ(spec->cases[0].unsafe.size(), 4u);  // Y_0 <= Y_i for i = 1..4
  EXPECT_DOUBLE_EQ(spec->cases[0].box.lo[2], 0.493380324);
}

}  // namespace
}  // namespace propdag

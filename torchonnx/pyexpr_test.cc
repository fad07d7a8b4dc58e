#include "torchonnx/pyexpr.h"

#include <gtest/gtest.h>

namespace torchonnx::py {
namespace {

Expr n(const char* s) { return Expr::name(s); }

TEST(PyExpr, CallsWithKeywords) {
  Expr e = call(torch("div"), {n("a"), n("b")}, {{"rounding_mode", str_lit("trunc")}});
  EXPECT_EQ(e.str(), "torch.div(a, b, rounding_mode=\"trunc\")");
  EXPECT_EQ(n("x").method("to", {torch("float64")}).str(), "x.to(torch.float64)");
  EXPECT_EQ(call(nn("Linear"), ints({2, 4}), {{"bias", lit("False")}}).str(),
            "nn.Linear(2, 4, bias=False)");
}

TEST(PyExpr, Precedence) {
  Expr sum = binary("+", n("a"), n("b"));
  EXPECT_EQ(binary("*", sum, n("c")).str(), "(a + b) * c");
  EXPECT_EQ(binary("+", sum, n("c")).str(), "a + b + c");
  EXPECT_EQ(binary("-", n("c"), sum).str(), "c - (a + b)");
  EXPECT_EQ(binary("**", binary("**", n("a"), n("b")), n("c")).str(), "(a ** b) ** c");
  EXPECT_EQ(binary("**", n("a"), binary("**", n("b"), n("c"))).str(), "a ** b ** c");
  EXPECT_EQ(unary("-", sum).str(), "-(a + b)");
  EXPECT_EQ(unary("-", binary("**", n("a"), n("b"))).str(), "-a ** b");
  EXPECT_EQ(binary("**", unary("-", n("a")), n("b")).str(), "(-a) ** b");
  EXPECT_EQ(sum.method("sum", {lit(-1)}).str(), "(a + b).sum(-1)");
  EXPECT_EQ(binary("<", binary("<", n("a"), n("b")), n("c")).str(), "(a < b) < c");
  EXPECT_EQ(paren(call(torch("exp"), {n("x")})).method("to", {torch("int64")}).str(),
            "(torch.exp(x)).to(torch.int64)");
}

TEST(PyExpr, SubscriptsTuplesLists) {
  EXPECT_EQ(n("x")[lit(0)].str(), "x[0]");
  EXPECT_EQ(n("x").index({lit(":"), lit("1:3"), n("i")}).str(), "x[:, 1:3, i]");
  EXPECT_EQ(binary("+", n("a"), n("b"))[lit(0)].str(), "(a + b)[0]");
  EXPECT_EQ(tuple({lit(3)}).str(), "(3,)");
  EXPECT_EQ(tuple({}).str(), "()");
  EXPECT_EQ(tuple(ints({1, 2})).str(), "(1, 2)");
  EXPECT_EQ(list(ints({1, 2})).str(), "[1, 2]");
  EXPECT_EQ(n("self").attr("fc1").attr("weight").str(), "self.fc1.weight");
}

TEST(PyExpr, NamespacesFromStructure) {
  EXPECT_TRUE(n("x").method("relu").uses().empty());
  Expr e = binary("*", call(fn("relu"), {n("x")}), call(torch("exp"), {n("y")}));
  EXPECT_TRUE(e.uses().has(Ns::kF));
  EXPECT_TRUE(e.uses().has(Ns::kTorch));
  EXPECT_FALSE(e.uses().has(Ns::kNn));
  // A name that merely contains "torch." is not a use of the module: only structure counts.
  EXPECT_TRUE(n("xtorch.y").uses().empty());
  Expr kw = call(n("f"), {}, {{"dtype", torch("bool")}});
  EXPECT_EQ(kw.uses(), Namespaces{Ns::kTorch});
  EXPECT_EQ(Expr::raw("F.pad(x, (1, 1))", {Ns::kF}).uses(), Namespaces{Ns::kF});
}

}  // namespace
}  // namespace torchonnx::py

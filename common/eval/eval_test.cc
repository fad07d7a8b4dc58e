// Hand-computed cases for the constant evaluator: registry, errors, broadcasting, elementwise
// arithmetic, Cast and unary math. Shape/index/reduction ops are in ops_test.cc, the ONNX
// backend node suite in node_test.cc.
#include "common/eval/eval.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/eval/test_util.h"

namespace common {
namespace {

using evaltest::bools;
using evaltest::err;
using evaltest::floats;
using evaltest::ints;
using evaltest::one;

TEST(EvalTest, RegistryKnowsOps) {
  for (const char* op : {"Add", "Gather", "Shape", "Slice", "ReduceSum", "MatMul", "Where", "Cast"})
    EXPECT_TRUE(can_evaluate(op)) << op;
  EXPECT_FALSE(can_evaluate("LSTM"));  // recurrent ops are not folded
  EXPECT_FALSE(can_evaluate("add"));   // op types are case-sensitive
}

TEST(EvalTest, ErrorsNameTheNodeAndNeverThrow) {
  EXPECT_EQ(err("NoSuchOp", {floats({1}, {1})}),
            "t.onnx: node 'n' (NoSuchOp): no constant kernel for op NoSuchOp");
  EXPECT_EQ(err("Add", {floats({1, 2}, {2}), floats({1, 2, 3}, {3})}),
            "t.onnx: node 'n' (Add): cannot broadcast [2] with [3]");
  EXPECT_EQ(err("Gather", {ints({1, 2}, {2}), ints({2}, {1})}),
            "t.onnx: node 'n' (Gather): index 2 is out of range for a dim of 2");
  EXPECT_EQ(err("Concat", {floats({1}, {1})}, {Attribute::make_int("axis", 1)}),
            "t.onnx: node 'n' (Concat): axis 1 out of range for rank 1");
  EXPECT_EQ(err("Add", {floats({1}, {1}), ints({1}, {1})}),
            "t.onnx: node 'n' (Add): input types differ: float and int64");
  EXPECT_EQ(err("Div", {ints({1}, {1}), ints({0}, {1})}),
            "t.onnx: node 'n' (Div): integer division by zero");
  EXPECT_EQ(err("Relu", {std::nullopt}), "t.onnx: node 'n' (Relu): input 0 is required");
  Tensor bad = floats({1, 2}, {2});
  bad.raw.resize(3);  // malformed: 3 bytes for 2 floats
  EXPECT_EQ(err("Neg", {bad}), "t.onnx: node 'n' (Neg): input 0 holds 3 bytes for shape [2]");
  EXPECT_EQ(err("Exp", {ints({1}, {1})}),
            "t.onnx: node 'n' (Exp): expected a floating-point input, got int64");
}

TEST(EvalTest, BroadcastShapes) {
  // [2,1,3] with [4,1]: right-aligned, 1s stretch -> [2,4,3].
  EXPECT_EQ(broadcast_shapes({2, 1, 3}, {4, 1}), (Dims{2, 4, 3}));
  EXPECT_EQ(broadcast_shapes({}, {5}), (Dims{5}));
  EXPECT_EQ(broadcast_shapes({0, 1}, {1, 3}), (Dims{0, 3}));
  EXPECT_EQ(broadcast_shapes({2, 3}, {3, 2}), std::nullopt);
  // Unknown dims (-1): against 1 stays unknown, against 4 becomes 4.
  EXPECT_EQ(broadcast_shapes({-1, -1}, {1, 4}), (Dims{-1, 4}));
}

TEST(EvalTest, AddBroadcastsAndWrapsIntegers) {
  // [[1],[2]] + [10,20,30] = [[11,21,31],[12,22,32]].
  EXPECT_EQ(one("Add", {ints({1, 2}, {2, 1}), ints({10, 20, 30}, {3})}),
            ints({11, 21, 31, 12, 22, 32}, {2, 3}));
  // int32: 2147483647 + 1 wraps to -2147483648 (two's complement, as onnxruntime).
  EXPECT_EQ(one("Add", {ints({2147483647}, {1}, DType::kInt32), ints({1}, {}, DType::kInt32)}),
            ints({-2147483648LL}, {1}, DType::kInt32));
  // float stays float: 0.1f + 0.2f is the float sum 0.3f (rounded once in float).
  EXPECT_EQ(one("Add", {floats({0.1f}, {}), floats({0.2f}, {})}), floats({0.1f + 0.2f}, {}));
}

TEST(EvalTest, IntegerDivTruncatesAndModFollowsFmod) {
  // 7/2 = 3, -7/2 = -3 (toward zero), 7/-2 = -3.
  EXPECT_EQ(one("Div", {ints({7, -7, 7}, {3}), ints({2, 2, -2}, {3})}), ints({3, -3, -3}, {3}));
  // Mod fmod=0 takes the divisor's sign: -7 mod 3 = 2, 7 mod -3 = -2, 6 mod 3 = 0.
  EXPECT_EQ(one("Mod", {ints({-7, 7, 6}, {3}), ints({3, -3, 3}, {3})}), ints({2, -2, 0}, {3}));
  // fmod=1 takes the dividend's sign: fmod(-7, 3) = -1, fmod(7, -3) = 1; floats too.
  EXPECT_EQ(one("Mod", {ints({-7, 7}, {2}), ints({3, -3}, {2})}, {Attribute::make_int("fmod", 1)}),
            ints({-1, 1}, {2}));
  EXPECT_EQ(one("Mod", {floats({-7.5f, 5.5f}, {2}), floats({2, 2}, {2})},
                {Attribute::make_int("fmod", 1)}),
            floats({-1.5f, 1.5f}, {2}));
}

// Found by fuzz_shapeonnx (UBSan): Div of two bool tensors divided the bytes, by zero where the
// divisor was false; bool now gets the integer zero check.
TEST(EvalTest, DivisionByABoolZeroIsAnError) {
  EXPECT_NE(err("Div", {bools({1, 0}, {2}), bools({1, 0}, {2})}).find("division by zero"),
            std::string::npos);
  EXPECT_NE(err("Div", {ints({4}, {1}), ints({0}, {1})}).find("division by zero"),
            std::string::npos);
}

TEST(EvalTest, FloatModNeedsFmod) {
  // ONNX requires fmod=1 for floats; onnxruntime refuses fmod=0 too.
  EXPECT_NE(err("Mod", {floats({1}, {1}), floats({2}, {1})}).find("fmod must be 1"),
            std::string::npos);
}

TEST(EvalTest, PowKeepsTheBaseType) {
  // float base, int64 exponent: [2,3]^[3,2] = [8,9] as float.
  EXPECT_EQ(one("Pow", {floats({2, 3}, {2}), ints({3, 2}, {2})}), floats({8, 9}, {2}));
  // int64 base, float exponent: 4^0.5 = 2 as int64.
  EXPECT_EQ(one("Pow", {ints({4}, {1}), floats({0.5f}, {1})}), ints({2}, {1}));
}

TEST(EvalTest, ComparisonsAndLogicGiveBools) {
  Tensor a = ints({1, 2, 3}, {3}), b = ints({2}, {1});
  EXPECT_EQ(one("Less", {a, b}), bools({1, 0, 0}, {3}));
  EXPECT_EQ(one("LessOrEqual", {a, b}), bools({1, 1, 0}, {3}));
  EXPECT_EQ(one("Greater", {a, b}), bools({0, 0, 1}, {3}));
  EXPECT_EQ(one("GreaterOrEqual", {a, b}), bools({0, 1, 1}, {3}));
  EXPECT_EQ(one("Equal", {a, b}), bools({0, 1, 0}, {3}));
  Tensor p = bools({0, 0, 1, 1}, {4}), q = bools({0, 1, 0, 1}, {4});
  EXPECT_EQ(one("And", {p, q}), bools({0, 0, 0, 1}, {4}));
  EXPECT_EQ(one("Or", {p, q}), bools({0, 1, 1, 1}, {4}));
  EXPECT_EQ(one("Xor", {p, q}), bools({0, 1, 1, 0}, {4}));
  EXPECT_EQ(one("Not", {p}), bools({1, 1, 0, 0}, {4}));
}

TEST(EvalTest, VariadicAndWhereAndClip) {
  // Max([1,5],[3],[2,2]) = [3,5]; Sum = [6,10]; Mean of floats [1,5],[3,3] = [2,4].
  Tensor a = ints({1, 5}, {2}), b = ints({3}, {1}), c = ints({2, 2}, {2});
  EXPECT_EQ(one("Max", {a, b, c}), ints({3, 5}, {2}));
  EXPECT_EQ(one("Min", {a, b, c}), ints({1, 2}, {2}));
  EXPECT_EQ(one("Sum", {a, b, c}), ints({6, 10}, {2}));
  EXPECT_EQ(one("Mean", {floats({1, 5}, {2}), floats({3, 3}, {2})}), floats({2, 4}, {2}));
  // Where([[1],[0]], [1,2], 9) = [[1,2],[9,9]].
  EXPECT_EQ(one("Where", {bools({1, 0}, {2, 1}), ints({1, 2}, {2}), ints({9}, {})}),
            ints({1, 2, 9, 9}, {2, 2}));
  // Clip before opset 11 reads attributes, from 11 optional inputs (max omitted here).
  Tensor x = floats({-2, 0.5f, 3}, {3});
  EXPECT_EQ(
      (one("Clip", {x}, {Attribute::make_float("min", 0), Attribute::make_float("max", 1)}, 6)),
      floats({0, 0.5f, 1}, {3}));
  EXPECT_EQ((one("Clip", {x, floats({0}, {}), std::nullopt}, {}, 13)), floats({0, 0.5f, 3}, {3}));
  EXPECT_EQ((one("Clip", {ints({-5, 5}, {2}), ints({-1}, {}), ints({1}, {})}, {}, 13)),
            ints({-1, 1}, {2}));
}

TEST(EvalTest, CastTruncatesAndRounds) {
  auto cast = [](Tensor x, DType to) {
    return one("Cast", {x}, {Attribute::make_int("to", static_cast<int64_t>(to))});
  };
  // float -> int64 truncates toward zero: -1.7 -> -1, 2.9 -> 2.
  EXPECT_EQ(cast(floats({-1.7f, 2.9f}, {2}), DType::kInt64), ints({-1, 2}, {2}));
  // float -> bool is "non-zero": 0 -> false, 0.5 -> true, -2 -> true.
  EXPECT_EQ(cast(floats({0, 0.5f, -2}, {3}), DType::kBool), bools({0, 1, 1}, {3}));
  // Out of range, as onnxruntime 1.30 on x86-64 (measured): float -> int8 goes through int32
  // and wraps (300.7 -> 44, -129.5 -> 127, NaN -> 0); float -> int32 gives INT32_MIN for NaN
  // and 1e20.
  EXPECT_EQ(cast(floats({300.7f, -129.5f, NAN}, {3}), DType::kInt8),
            ints({44, 127, 0}, {3}, DType::kInt8));
  EXPECT_EQ(cast(floats({NAN, 1e20f, -1.9f}, {3}), DType::kInt32),
            ints({INT32_MIN, INT32_MIN, -1}, {3}, DType::kInt32));
  // int64 -> int8 wraps modulo 256: 300 -> 44, -129 -> 127.
  EXPECT_EQ(cast(ints({300, -129}, {2}), DType::kInt8), ints({44, 127}, {2}, DType::kInt8));
  // float -> float16: 1/3 rounds to the nearest half 0x3555 = 0.333251953125; 65520 overflows
  // to +inf (0x7c00); back to float gives those values.
  Tensor h = cast(floats({1.0f / 3, 65520}, {2}), DType::kFloat16);
  EXPECT_EQ(h.span<uint16_t>()[0], 0x3555);
  EXPECT_EQ(h.span<uint16_t>()[1], 0x7c00);
  Tensor back = cast(h, DType::kFloat);
  EXPECT_EQ(back.span<float>()[0], 0.333251953125f);
  EXPECT_TRUE(std::isinf(back.span<float>()[1]));
  // CastLike takes the type of its second input.
  EXPECT_EQ((one("CastLike", {ints({3}, {1}), floats({0}, {})})), floats({3}, {1}));
}

TEST(EvalTest, Float16ArithmeticGoesThroughFloat) {
  // 0x3c00 = 1.0, 0x4000 = 2.0 in float16; 1 + 2 = 3 = 0x4200.
  Tensor a = ints({0x3c00}, {1}, DType::kUInt16), b = ints({0x4000}, {1}, DType::kUInt16);
  a.dtype = b.dtype = DType::kFloat16;
  Tensor y = one("Add", {a, b});
  EXPECT_EQ(y.dtype, DType::kFloat16);
  EXPECT_EQ(y.span<uint16_t>()[0], 0x4200);
}

TEST(EvalTest, UnaryMath) {
  // Round is half-to-even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -1.5 -> -2.
  EXPECT_EQ(one("Round", {floats({0.5f, 1.5f, 2.5f, -1.5f}, {4})}), floats({0, 2, 2, -2}, {4}));
  EXPECT_EQ(one("Floor", {floats({-1.5f, 1.5f}, {2})}), floats({-2, 1}, {2}));
  EXPECT_EQ(one("Ceil", {floats({-1.5f, 1.5f}, {2})}), floats({-1, 2}, {2}));
  EXPECT_EQ(one("Abs", {ints({-3, 4}, {2})}), ints({3, 4}, {2}));
  EXPECT_EQ(one("Neg", {ints({-3, 4}, {2})}), ints({3, -4}, {2}));
  EXPECT_EQ(one("Sign", {floats({-3, 0, 2}, {3})}), floats({-1, 0, 1}, {3}));
  EXPECT_EQ(one("Relu", {ints({-3, 4}, {2})}), ints({0, 4}, {2}));
  // LeakyRelu alpha 0.5: -4 -> -2. Sqrt(4) = 2, Reciprocal(4) = 0.25, Exp(0) = 1, Log(1) = 0.
  EXPECT_EQ((one("LeakyRelu", {floats({-4, 4}, {2})}, {Attribute::make_float("alpha", 0.5f)})),
            floats({-2, 4}, {2}));
  EXPECT_EQ(one("Sqrt", {floats({4}, {1})}), floats({2}, {1}));
  EXPECT_EQ(one("Reciprocal", {floats({4}, {1})}), floats({0.25f}, {1}));
  EXPECT_EQ(one("Exp", {floats({0}, {1})}), floats({1}, {1}));
  EXPECT_EQ(one("Log", {floats({1}, {1})}), floats({0}, {1}));
  // Sigmoid(0) = 0.5, Tanh(0) = 0, Sin(0) = 0, Cos(0) = 1, Erf(0) = 0.
  EXPECT_EQ(one("Sigmoid", {floats({0}, {1})}), floats({0.5f}, {1}));
  EXPECT_EQ(one("Tanh", {floats({0}, {1})}), floats({0}, {1}));
  EXPECT_EQ(one("Sin", {floats({0}, {1})}), floats({0}, {1}));
  EXPECT_EQ(one("Cos", {floats({0}, {1})}), floats({1}, {1}));
  EXPECT_EQ(one("Erf", {floats({0}, {1})}), floats({0}, {1}));
  // Float ops stay in float: Exp(1) equals std::exp(1.0f), not the double e rounded.
  EXPECT_EQ(one("Exp", {floats({1}, {1})}), floats({std::exp(1.0f)}, {1}));
}

}  // namespace
}  // namespace common

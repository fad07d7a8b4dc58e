// Hand-computed cases for the evaluator's shape, layout, indexing and reduction kernels, including
// the attribute-vs-input forms that changed between opsets.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/eval/eval.h"
#include "common/eval/test_util.h"

namespace common {
namespace {

using evaltest::ai;
using evaltest::bools;
using evaltest::err;
using evaltest::floats;
using evaltest::go;
using evaltest::ints;
using evaltest::one;

Attribute ais(const char* name, std::vector<int64_t> v) {
  return Attribute::make_ints(name, std::move(v));
}

// x = [[0,1,2],[3,4,5]] (2x3) is used throughout.
Tensor x23() { return ints({0, 1, 2, 3, 4, 5}, {2, 3}); }

TEST(EvalShapeTest, ShapeSizeReshapeFlatten) {
  Tensor x = Tensor::zeros(DType::kFloat, {2, 3, 4, 5});
  EXPECT_EQ(one("Shape", {x}), ints({2, 3, 4, 5}, {4}));
  // start=1, end=-1 -> dims[1:3] = [3,4] (opset 15).
  EXPECT_EQ((one("Shape", {x}, {ai("start", 1), ai("end", -1)}, 15)), ints({3, 4}, {2}));
  EXPECT_EQ(one("Size", {x}), ints({120}, {}));
  // Reshape [2,3,4,5] to [0,-1]: 0 copies 2, -1 becomes 120/2 = 60.
  EXPECT_EQ((one("Reshape", {x, ints({0, -1}, {2})}).dims), (Dims{2, 60}));
  // allowzero=1 keeps a literal 0: a [0,3] tensor reshaped to [3,0].
  Tensor empty = Tensor::zeros(DType::kFloat, {0, 3});
  EXPECT_EQ((one("Reshape", {empty, ints({3, 0}, {2})}, {ai("allowzero", 1)}, 14).dims),
            (Dims{3, 0}));
  EXPECT_NE(err("Reshape", {x, ints({7, -1}, {2})}).find("cannot infer -1"), std::string::npos);
  // Flatten at axis 2: [2*3, 4*5]; axis -1: [2*3*4, 5].
  EXPECT_EQ((one("Flatten", {x}, {ai("axis", 2)}).dims), (Dims{6, 20}));
  EXPECT_EQ((one("Flatten", {x}, {ai("axis", -1)}).dims), (Dims{24, 5}));
}

TEST(EvalShapeTest, SqueezeUnsqueezeAttributeAndInputForms) {
  Tensor x = Tensor::zeros(DType::kFloat, {1, 3, 1});
  EXPECT_EQ((one("Squeeze", {x}, {ais("axes", {0})}, 11).dims), (Dims{3, 1}));
  EXPECT_EQ((one("Squeeze", {x, ints({-1}, {1})}, {}, 13).dims), (Dims{1, 3}));
  EXPECT_EQ((one("Squeeze", {x}, {}, 13).dims), (Dims{3}));  // no axes: every 1
  EXPECT_NE(err("Squeeze", {x, ints({1}, {1})}, {}, 13).find("cannot squeeze axis 1"),
            std::string::npos);
  // Unsqueeze [3] at axes [0, -1] of the rank-3 result -> [1,3,1].
  Tensor v = ints({1, 2, 3}, {3});
  EXPECT_EQ((one("Unsqueeze", {v}, {ais("axes", {0, -1})}, 11).dims), (Dims{1, 3, 1}));
  EXPECT_EQ((one("Unsqueeze", {v, ints({0, -1}, {2})}, {}, 13)), ints({1, 2, 3}, {1, 3, 1}));
}

TEST(EvalShapeTest, ConcatSplitTranspose) {
  // Concat on axis 1: [[0,1,2],[3,4,5]] ++ [[6],[7]] = [[0,1,2,6],[3,4,5,7]].
  EXPECT_EQ((one("Concat", {x23(), ints({6, 7}, {2, 1})}, {ai("axis", 1)})),
            ints({0, 1, 2, 6, 3, 4, 5, 7}, {2, 4}));
  // Split with sizes (input form, opset 13) along axis 1: [0,3],[1,2,4,5].
  auto parts = go("Split", {x23(), ints({1, 2}, {2})}, {ai("axis", 1)}, 13, 2);
  ASSERT_TRUE(parts.ok());
  EXPECT_EQ((*parts)[0], ints({0, 3}, {2, 1}));
  EXPECT_EQ((*parts)[1], ints({1, 2, 4, 5}, {2, 2}));
  // The same sizes as an attribute before opset 13.
  auto old = go("Split", {x23()}, {ai("axis", 1), ais("split", {1, 2})}, 11, 2);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ((*old)[1], ints({1, 2, 4, 5}, {2, 2}));
  // num_outputs=3 (opset 18) over 5 elements: ceil(5/3) = 2 -> [2,2,1].
  auto n3 = go("Split", {ints({1, 2, 3, 4, 5}, {5})}, {ai("num_outputs", 3)}, 18, 3);
  ASSERT_TRUE(n3.ok());
  EXPECT_EQ((*n3)[2], ints({5}, {1}));
  // Equal split over the declared outputs.
  auto eq = go("Split", {ints({1, 2, 3, 4}, {4})}, {}, 13, 2);
  ASSERT_TRUE(eq.ok());
  EXPECT_EQ((*eq)[1], ints({3, 4}, {2}));
  // Transpose default reverses axes: [[0,3],[1,4],[2,5]].
  EXPECT_EQ(one("Transpose", {x23()}), ints({0, 3, 1, 4, 2, 5}, {3, 2}));
}

TEST(EvalShapeTest, ExpandTileRangeConstantOfShape) {
  // Expand [3] to [2,1] -> [2,3] (bidirectional broadcast).
  EXPECT_EQ((one("Expand", {ints({1, 2, 3}, {3}), ints({2, 1}, {2})})),
            ints({1, 2, 3, 1, 2, 3}, {2, 3}));
  // Tile [[1,2]] by [2,2] -> [[1,2,1,2],[1,2,1,2]].
  EXPECT_EQ((one("Tile", {ints({1, 2}, {1, 2}), ints({2, 2}, {2})})),
            ints({1, 2, 1, 2, 1, 2, 1, 2}, {2, 4}));
  // Range(10, 4, -3) = [10, 7] (ceil((4-10)/-3) = 2); Range(0, 1, 0.25f) has 4 elements.
  EXPECT_EQ((one("Range", {ints({10}, {}), ints({4}, {}), ints({-3}, {})})), ints({10, 7}, {2}));
  EXPECT_EQ((one("Range", {floats({0}, {}), floats({1}, {}), floats({0.25f}, {})})),
            floats({0, 0.25f, 0.5f, 0.75f}, {4}));
  // Float Range accumulates like onnxruntime: Range(0, 1, 0.1f)[7] is 0.1f added 7 times,
  // 0.70000005f (measured with onnxruntime 1.30), not 7 * 0.1f = 0.7f.
  Tensor r = one("Range", {floats({0}, {}), floats({1}, {}), floats({0.1f}, {})});
  ASSERT_EQ(r.dims, (Dims{10}));
  float acc = 0;
  for (int i = 0; i < 7; ++i) acc += 0.1f;
  EXPECT_EQ(r.span<float>()[7], acc);
  EXPECT_EQ(r.span<float>()[7], 0.70000004768371582f);
  // ConstantOfShape defaults to float 0; with value int64 7.
  EXPECT_EQ(one("ConstantOfShape", {ints({2}, {1})}), floats({0, 0}, {2}));
  EXPECT_EQ((one("ConstantOfShape", {ints({1, 2}, {2})},
                 {Attribute::make_tensor("value", ints({7}, {1}))})),
            ints({7, 7}, {1, 2}));
}

TEST(EvalShapeTest, HugeShapesAreErrorsNotAllocations) {
  // 2^40 elements, or a product that overflows int64, must fail cleanly.
  EXPECT_NE(err("ConstantOfShape", {ints({1LL << 20, 1LL << 20}, {2})}).find("too large"),
            std::string::npos);
  EXPECT_NE(err("Expand", {ints({1}, {1}), ints({1LL << 40, 1LL << 40}, {2})}).find("too large"),
            std::string::npos);
  EXPECT_NE(err("Tile", {ints({1}, {1}), ints({1LL << 62}, {1})}).find("too large"),
            std::string::npos);
}

TEST(EvalShapeTest, ConstantAndDropout) {
  EXPECT_EQ((one("Constant", {}, {Attribute::make_tensor("value", x23())})), x23());
  EXPECT_EQ((one("Constant", {}, {Attribute::make_float("value_float", 2.5f)})),
            floats({2.5f}, {}));
  EXPECT_EQ((one("Constant", {}, {Attribute::make_floats("value_floats", {1, 2})})),
            floats({1, 2}, {2}));
  EXPECT_EQ((one("Constant", {}, {ai("value_int", 4)})), ints({4}, {}));
  EXPECT_EQ((one("Constant", {}, {ais("value_ints", {4, 5})})), ints({4, 5}, {2}));
  // Dropout in inference: identity plus an all-true bool mask.
  auto d = go("Dropout", {floats({1, 2}, {2})}, {}, 13, 2);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)[0], floats({1, 2}, {2}));
  EXPECT_EQ((*d)[1], bools({1, 1}, {2}));
}

TEST(EvalIndexTest, GatherFamily) {
  // Gather axis 1 with indices [-1, 0]: columns 2 and 0 -> [[2,0],[5,3]].
  EXPECT_EQ((one("Gather", {x23(), ints({-1, 0}, {2})}, {ai("axis", 1)})),
            ints({2, 0, 5, 3}, {2, 2}));
  // Scalar index on axis 0 drops the axis: row 1 -> [3,4,5].
  EXPECT_EQ((one("Gather", {x23(), ints({1}, {})})), ints({3, 4, 5}, {3}));
  // GatherElements axis 1 with [[2],[0]] -> [[2],[3]].
  EXPECT_EQ((one("GatherElements", {x23(), ints({2, 0}, {2, 1})}, {ai("axis", 1)})),
            ints({2, 3}, {2, 1}));
  // GatherND: indices [[1,2],[0,0]] -> [x[1][2], x[0][0]] = [5, 0]; [[1]] -> row [3,4,5].
  EXPECT_EQ((one("GatherND", {x23(), ints({1, 2, 0, 0}, {2, 2})})), ints({5, 0}, {2}));
  EXPECT_EQ((one("GatherND", {x23(), ints({1}, {1, 1})})), ints({3, 4, 5}, {1, 3}));
  // batch_dims=1: per row, indices [[2],[0]] -> [x[0][2], x[1][0]] = [2, 3].
  EXPECT_EQ((one("GatherND", {x23(), ints({2, 0}, {2, 1})}, {ai("batch_dims", 1)})),
            ints({2, 3}, {2}));
}

TEST(EvalIndexTest, SliceInputAndAttributeForms) {
  // Columns 2 down to 0 with step -1 (end -4 clamps to -1): [[2,1,0],[5,4,3]].
  EXPECT_EQ(
      (one("Slice", {x23(), ints({2}, {1}), ints({-4}, {1}), ints({1}, {1}), ints({-1}, {1})})),
      ints({2, 1, 0, 5, 4, 3}, {2, 3}));
  // Huge end clamps to the dim; step 2 over columns 0..2 -> [[0,2],[3,5]].
  EXPECT_EQ((one("Slice",
                 {x23(), ints({0}, {1}), ints({INT64_MAX}, {1}), ints({1}, {1}), ints({2}, {1})})),
            ints({0, 2, 3, 5}, {2, 2}));
  // Opset 9: attributes; starts [1,1] ends [2,3] -> [[4,5]].
  EXPECT_EQ((one("Slice", {x23()}, {ais("starts", {1, 1}), ais("ends", {2, 3})}, 9)),
            ints({4, 5}, {1, 2}));
  // Found by fuzz_slimonnx (UBSan): float starts/ends were cast to int64 as they were. NaN reads
  // as 0 and infinity saturates (then clamps to the dim): columns 0..2 -> x itself. The old cast
  // gave the same numbers on x86; the sanitized_unit_tests ctest (UBSan) is what fails on it.
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(
      (one("Slice", {x23(), floats({std::nanf("")}, {1}), floats({inf}, {1}), ints({1}, {1})})),
      x23());
}

TEST(EvalIndexTest, ScatterOneHotNonZeroTrilu) {
  // ScatterND writes x[0][1] = 9 and adds 10 to x[1][2] with reduction=add (opset 16).
  EXPECT_EQ((one("ScatterND", {x23(), ints({0, 1}, {1, 2}), ints({9}, {1})})),
            ints({0, 9, 2, 3, 4, 5}, {2, 3}));
  EXPECT_EQ((one("ScatterND", {x23(), ints({1, 2}, {1, 2}), ints({10}, {1})},
                 {Attribute::make_string("reduction", "add")}, 16)),
            ints({0, 1, 2, 3, 4, 15}, {2, 3}));
  // ScatterElements axis 1: row 0 col 2 <- 7, row 1 col 0 <- 8.
  EXPECT_EQ((one("ScatterElements", {x23(), ints({2, 0}, {2, 1}), ints({7, 8}, {2, 1})},
                 {ai("axis", 1)})),
            ints({0, 1, 7, 8, 4, 5}, {2, 3}));
  // OneHot([1, -1], depth 3, [0, 5]) -> [[0,5,0],[0,0,5]] (-1 wraps to 2).
  EXPECT_EQ((one("OneHot", {ints({1, -1}, {2}), ints({3}, {}), floats({0, 5}, {2})})),
            floats({0, 5, 0, 0, 0, 5}, {2, 3}));
  // NonZero([[1,0],[0,2]]) -> rows [0,1], cols [0,1].
  EXPECT_EQ(one("NonZero", {ints({1, 0, 0, 2}, {2, 2})}), ints({0, 1, 0, 1}, {2, 2}));
  // Trilu upper with k=1 keeps j - i >= 1: row 0 keeps cols 1,2, row 1 keeps col 2 ->
  // [[0,1,2],[0,0,5]] (x[0][0] is 0 anyway).
  EXPECT_EQ((one("Trilu", {x23(), ints({1}, {})})), ints({0, 1, 2, 0, 0, 5}, {2, 3}));
  // Lower with k=0: [[0,0,0],[3,4,0]].
  EXPECT_EQ((one("Trilu", {x23()}, {ai("upper", 0)})), ints({0, 0, 0, 3, 4, 0}, {2, 3}));
}

TEST(EvalIndexTest, PadModes) {
  Tensor v = ints({1, 2, 3}, {3});
  // pads [2, 1]: constant 0 -> [0,0,1,2,3,0]; reflect -> [3,2,1,2,3,2]; edge -> [1,1,1,2,3,3].
  EXPECT_EQ((one("Pad", {v, ints({2, 1}, {2})})), ints({0, 0, 1, 2, 3, 0}, {6}));
  EXPECT_EQ((one("Pad", {v, ints({2, 1}, {2})}, {Attribute::make_string("mode", "reflect")})),
            ints({3, 2, 1, 2, 3, 2}, {6}));
  EXPECT_EQ((one("Pad", {v, ints({2, 1}, {2})}, {Attribute::make_string("mode", "edge")})),
            ints({1, 1, 1, 2, 3, 3}, {6}));
  // constant_value input 9 and a negative pad that crops: pads [-1, 1] -> [2,3,9].
  EXPECT_EQ((one("Pad", {v, ints({-1, 1}, {2}), ints({9}, {})})), ints({2, 3, 9}, {3}));
  // Opset 2 attribute form with value 1.5 on floats.
  EXPECT_EQ((one("Pad", {floats({1}, {1})},
                 {ais("pads", {1, 0}), Attribute::make_float("value", 1.5f)}, 2)),
            floats({1.5f, 1}, {2}));
}

TEST(EvalReduceTest, ReductionsAcrossOpsets) {
  // ReduceSum over axis 1 of x23: [0+1+2, 3+4+5] = [[3],[12]] (axes input, opset 13).
  EXPECT_EQ((one("ReduceSum", {x23(), ints({1}, {1})}, {}, 13)), ints({3, 12}, {2, 1}));
  // Axes attribute (opset 11), keepdims=0: column sums [3,5,7].
  EXPECT_EQ((one("ReduceSum", {x23()}, {ais("axes", {0}), ai("keepdims", 0)}, 11)),
            ints({3, 5, 7}, {3}));
  // No axes: everything, 15; noop_with_empty_axes=1 returns the input.
  EXPECT_EQ((one("ReduceSum", {x23()}, {ai("keepdims", 0)}, 13)), ints({15}, {}));
  EXPECT_EQ((one("ReduceSum", {x23()}, {ai("noop_with_empty_axes", 1)}, 13)), x23());
  // ReduceMean of floats over axis 1: [1, 4]; Max/Min/Prod over axis 0: [3,4,5], [0,1,2], [0,4,10].
  Tensor f = floats({0, 1, 2, 3, 4, 5}, {2, 3});
  EXPECT_EQ((one("ReduceMean", {f}, {ais("axes", {1}), ai("keepdims", 0)}, 17)),
            floats({1, 4}, {2}));
  EXPECT_EQ((one("ReduceMean", {f, ints({1}, {1})}, {ai("keepdims", 0)}, 18)), floats({1, 4}, {2}));
  EXPECT_EQ((one("ReduceMax", {x23()}, {ais("axes", {0}), ai("keepdims", 0)})),
            ints({3, 4, 5}, {3}));
  EXPECT_EQ((one("ReduceMin", {x23()}, {ais("axes", {0}), ai("keepdims", 0)})),
            ints({0, 1, 2}, {3}));
  EXPECT_EQ((one("ReduceProd", {x23()}, {ais("axes", {0}), ai("keepdims", 0)})),
            ints({0, 4, 10}, {3}));
}

TEST(EvalReduceTest, ArgSoftmaxCumSum) {
  // ArgMax along 1 of [[1,3,3]]: first max at 1, last at 2.
  Tensor a = ints({1, 3, 3}, {1, 3});
  EXPECT_EQ((one("ArgMax", {a}, {ai("axis", 1)})), ints({1}, {1, 1}));
  EXPECT_EQ((one("ArgMax", {a}, {ai("axis", 1), ai("select_last_index", 1)})), ints({2}, {1, 1}));
  EXPECT_EQ((one("ArgMin", {a}, {ai("axis", 1), ai("keepdims", 0)})), ints({0}, {1}));
  // Softmax of [0, ln 3] = [1/4, 3/4].
  Tensor s = one("Softmax", {floats({0, std::log(3.0f)}, {1, 2})});
  EXPECT_FLOAT_EQ(s.span<float>()[0], 0.25f);
  EXPECT_FLOAT_EQ(s.span<float>()[1], 0.75f);
  // Opset 11 coerces to 2-D at axis 1: over [1,2,2] all four values share one softmax (1/4).
  Tensor s11 = one("Softmax", {floats({0, 0, 0, 0}, {1, 2, 2})}, {}, 11);
  EXPECT_EQ(s11, floats({0.25f, 0.25f, 0.25f, 0.25f}, {1, 2, 2}));
  // CumSum [1,2,3]: [1,3,6]; exclusive [0,1,3]; reverse [6,5,3].
  Tensor v = ints({1, 2, 3}, {3});
  EXPECT_EQ((one("CumSum", {v, ints({0}, {})})), ints({1, 3, 6}, {3}));
  EXPECT_EQ((one("CumSum", {v, ints({0}, {})}, {ai("exclusive", 1)})), ints({0, 1, 3}, {3}));
  EXPECT_EQ((one("CumSum", {v, ints({0}, {})}, {ai("reverse", 1)})), ints({6, 5, 3}, {3}));
}

TEST(EvalReduceTest, MatMulAndGemm) {
  // [[0,1,2],[3,4,5]] x [1,1,1] (1-D) = [3, 12].
  EXPECT_EQ((one("MatMul", {x23(), ints({1, 1, 1}, {3})})), ints({3, 12}, {2}));
  // Batched: [2,1,2] x [2,1] broadcasts the matrix: [[1*1+2*1]], [[3+4]] -> [2,1,1] = [3, 7].
  EXPECT_EQ((one("MatMul", {ints({1, 2, 3, 4}, {2, 1, 2}), ints({1, 1}, {2, 1})})),
            ints({3, 7}, {2, 1, 1}));
  // Gemm alpha=2, transB, C = [1, 0] broadcast: A=[[1,2]], B=[[1,1],[0,1]] (B^T = [[1,0],[1,1]]):
  // A*B^T = [[1*1+2*1, 1*0+2*1]] = [[3,2]]; 2*[[3,2]] + [1,0] = [[7,4]].
  EXPECT_EQ(
      (one("Gemm", {floats({1, 2}, {1, 2}), floats({1, 1, 0, 1}, {2, 2}), floats({1, 0}, {2})},
           {Attribute::make_float("alpha", 2), ai("transB", 1)})),
      floats({7, 4}, {1, 2}));
  EXPECT_NE(err("MatMul", {x23(), x23()}).find("cannot multiply [2,3] by [2,3]"),
            std::string::npos);
}

}  // namespace
}  // namespace common

// Helpers shared by the op rules: index arithmetic on row-major shapes and affine builders.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "common/op_params.h"
#include "common/tensor.h"
#include "propdag/op.h"
#include "propdag/registry.h"

namespace propdag {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// Row-major strides of dims.
std::vector<int64_t> strides_of(const common::Dims& dims);
/// common::normalize_axis with its error placed at the node.
common::Result<int64_t> axis_at(const OpContext& ctx, int64_t axis, int64_t rank);
/// Gather term with W(i, src[i]) = scale[i] (rows with src[i] < 0 stay empty). `scale` empty: 1.
LinearTerm gather_term(int slot, const std::vector<int64_t>& src, int64_t in_size,
                       const std::vector<double>& scale = {});
/// A term of the gather `g` on input `slot`.
LinearTerm gather_term(int slot, Gather g);
/// Gather term with W(i, j) = coef where element i of `out` broadcasts from element j of `in`
/// (numpy rules; `in` must broadcast to `out`): no per-element data.
LinearTerm broadcast_term(int slot, const common::Dims& in, const common::Dims& out,
                          double coef = 1.0);
/// Sparse term from (row, col, value) triplets.
LinearTerm sparse_term(int slot, int64_t rows, int64_t cols,
                       const std::vector<Eigen::Triplet<double>>& entries);
/// A list of one term, moved in (a braced list would copy it).
std::vector<LinearTerm> one_term(LinearTerm term);
/// A single output holding an AffineOp.
OpOutputs affine_output(std::vector<LinearTerm> terms, Vec bias, common::Dims shape);
/// A constant tensor broadcast to `out` as doubles; empty when it does not broadcast. Its
/// elements in a bias: `bias[i] += coef * t[j]` for element i of `out` broadcast from t[j]
/// (`t` must broadcast to `out`).
void add_broadcast_constant(const common::Tensor& t, const common::Dims& out, double coef,
                            Vec& bias);
std::vector<double> broadcast_constant(const common::Tensor& t, const common::Dims& out);
/// Integers of a constant input or of an attribute (for opset-dependent forms); empty when the
/// node has neither (common::ints_input_or_attr, its error placed at the node).
common::Result<std::vector<int64_t>> ints_input_or_attr(const OpContext& ctx, size_t input,
                                                        const char* attr);
/// MatMul's operands as [batch] x M x K and [batch] x K x N (numpy rules: 1-D operands gain a
/// dim, batch dims broadcast): per broadcast batch index, the batch index of each operand.
struct MatMulShape {
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> a_batch, b_batch;
  common::Dims out;
};
common::Result<MatMulShape> matmul_shape(const OpContext& ctx);
/// Mul / Div of two variable tensors, Div of a constant by a variable, and MatMul of two variable
/// tensors: interval rules (ops_nonlinear.cc), reached from the Mul / Div / MatMul rules of
/// ops_linear.cc.
common::Result<OpOutputs> interval_product(const OpContext& ctx, bool divide);
common::Result<OpOutputs> two_variable_matmul(const OpContext& ctx);
/// Slice with variable starts and / or ends (ops_index.cc), reached from the Slice rule of
/// ops_shape.cc: the hull over the windows of the output's static length that the starts and ends
/// allow.
common::Result<OpOutputs> variable_slice(const OpContext& ctx);
/// ScatterND (reduction none), its indices variable or constant (ops_index.cc): the hull of data
/// and the updates that may land at each element.
common::Result<OpOutputs> scatter_nd_rule(const OpContext& ctx);

}  // namespace propdag

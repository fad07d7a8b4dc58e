// Helpers shared by the shape-rule families: broadcasting, known integer inputs, axes, checked
// dimension arithmetic and the sliding-window (conv/pool) output formula.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/op_params.h"
#include "common/tensor.h"
#include "shapeonnx/rules/rules.h"

namespace shapeonnx {

/// Output i gets input j's dtype and shape.
common::Status same_as_input(InferContext& ctx, size_t out = 0, size_t in = 0);

/// Numpy broadcast of the shapes of every present input from `first` on.
common::Result<common::Dims> broadcast_inputs(const InferContext& ctx, size_t first = 0);

/// The known content of input i as integers; fails, naming `what`, when the value is unknown.
common::Result<std::vector<int64_t>> known_ints(const InferContext& ctx, size_t i,
                                                std::string_view what);
/// The known content of input i as doubles; fails, naming `what`, when the value is unknown.
common::Result<std::vector<double>> known_doubles(const InferContext& ctx, size_t i,
                                                  std::string_view what);

/// Integers from input i when it is present, else from attribute `attr` when the node has it,
/// else nullopt. Fails when the input is present but its value is unknown.
common::Result<std::optional<std::vector<int64_t>>> ints_from_input_or_attr(const InferContext& ctx,
                                                                            size_t i,
                                                                            std::string_view attr,
                                                                            std::string_view what);

/// Normalizes every axis against `rank` (negative axes count from the end); fails on an axis out
/// of range or repeated.
common::Result<std::vector<int64_t>> normalize_axes(const InferContext& ctx,
                                                    const std::vector<int64_t>& axes, int64_t rank);

/// a * b for dims, failing when it overflows int64.
common::Result<int64_t> checked_mul(const InferContext& ctx, int64_t a, int64_t b);
/// Product of dims[begin, end), failing on overflow.
common::Result<int64_t> checked_product(const InferContext& ctx, const common::Dims& dims,
                                        size_t begin, size_t end);

/// Floor and ceiling division for a positive divisor.
int64_t floor_div(int64_t a, int64_t b);
int64_t ceil_div(int64_t a, int64_t b);

/// A sliding window's attributes (Conv, pools): common::read_window, with errors naming the node.
using common::Window;
common::Result<Window> read_window(const InferContext& ctx, size_t spatial,
                                   const std::vector<int64_t>& kernel);

/// Output size of one spatial dim of a sliding window (common::window_dim), errors naming the node.
common::Result<int64_t> window_output(const InferContext& ctx, const Window& w, size_t i,
                                      int64_t in);

/// Conv's output dims for input `x` [N, C, D...] and weight `w` [M, C / group, k...], reading the
/// node's window attributes (also used by ConvInteger and QLinearConv).
common::Result<common::Dims> conv_output_dims(const InferContext& ctx, const common::Dims& x,
                                              const common::Dims& w);
/// numpy.matmul's output dims (also used by MatMulInteger and QLinearMatMul).
common::Result<common::Dims> matmul_output_dims(const InferContext& ctx, common::Dims a,
                                                common::Dims b);

/// Adds `rule` for every op in `ops`, a space-separated list of op types (static storage).
void add_rules(ShapeRegistry& table, std::string_view ops, ShapeRule rule);

}  // namespace shapeonnx

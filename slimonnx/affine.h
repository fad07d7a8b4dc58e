// Elementwise affine maps (y = x * s + t with constant s, t) recognized in Add/Sub/Mul/Div/Neg/
// BatchNormalization, and the linear layers they can be folded into.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/graph.h"
#include "slimonnx/rewrite.h"

namespace slimonnx {

/// y = x * s + t, elementwise; s and t are expanded to x's (static) shape `dims`.
struct Affine {
  std::string x;
  common::Dims dims;
  std::vector<double> s, t;
  bool has_shift() const;
};

/// Largest map as_affine builds (elements of the data; two doubles each).
constexpr int64_t kMaxAffineElements = int64_t{1} << 23;

/// The node as an elementwise affine map of one non-constant input whose shape equals the
/// output's, or nullopt.
std::optional<Affine> as_affine(const Editor& ed, const common::Node& n);

/// Per-index vectors along `axis` when s and t do not vary along any other axis.
struct AxisAffine {
  std::vector<double> s, t;
};
std::optional<AxisAffine> along_axis(const std::vector<double>& s, const std::vector<double>& t,
                                     const common::Dims& dims, int64_t axis);

/// Expands a constant to `dims` by numpy broadcasting; nullopt if it does not broadcast to them.
std::optional<std::vector<double>> expand_to(const common::Tensor& t, const common::Dims& dims);

/// Moves an affine map through a layout op that keeps values (Reshape, Flatten, Squeeze,
/// Unsqueeze, Transpose): forward maps it from the op's input to its output, backward the other
/// way. False when the op is not such an op or shapes are unknown.
bool through_layout(const Editor& ed, const common::Node& op, bool forward, Affine& a);
/// True for the ops through_layout accepts.
bool is_layout_op(const common::Node& n);

/// A . B for row-major k x m and m x n matrices.
std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b, int64_t k,
                           int64_t m, int64_t n);
/// The same with B given element by element (row, column): a large B is read in blocks, never
/// held whole as doubles, and the blocks are cut where Eigen's own blocking keeps every sum in
/// the same order, so the result is bit for bit the one above.
std::vector<double> matmul(const std::vector<double>& a,
                           const std::function<double(int64_t, int64_t)>& b, int64_t k, int64_t m,
                           int64_t n);

}  // namespace slimonnx

// Projected-gradient attacks (PGD) for `propdag verify`: many starting points stepped at once,
// one per row of a matrix, down the sign of the gradient of a margin loss. Not installed.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "common/error.h"
#include "propdag/model.h"
#include "propdag/op.h"
#include "propdag/vnnlib.h"

namespace propdag::internal {

/// The model evaluated at K points at once (one per row, in float64) and differentiated through
/// by a backward pass. Affine ops apply their weights to all K rows in one product; other ops
/// are evaluated by their interval rule on one-point boxes, and differentiated:
///  - elementwise ops (relaxed per element) by central differences over a small step, and where
///    that is 0 (Sign, Floor, a saturated Sigmoid; not ReLU and LeakyReLU, whose flat part is
///    flat) by the slope of the secant over the input's whole range on the box, [z - w, z + w]
///    with w the width of the input's IBP bounds there: a straight-through estimate (1 / w for
///    Sign wherever the box reaches its step) that says which way a step lies;
///  - ops with linear relaxations (MaxPool, products of two variables) by their lower lines at
///    the point, which are exact there;
///  - ops bounded by intervals only (Softmax) by forward differences when they have at most
///    kDifferencedInputs variable inputs, else not at all.
class PointGradient {
 public:
  static constexpr int64_t kDifferencedInputs = 256;

  /// `box` (over all inputs) sets the widths of the secants.
  static common::Result<PointGradient> make(const Model& model, const Interval& box);
  /// The graph outputs, concatenated (K x outputs), at the rows of x (K x inputs). Keeps every
  /// node's values for backward().
  common::Result<Mat> forward(const Mat& x);
  /// Row k: the gradient at the k-th point of the last forward() of dy.row(k) . y (K x inputs).
  Mat backward(const Mat& dy);

 private:
  PointGradient(const Model& model, std::vector<Vec> width, std::vector<bool> elementwise);
  // The inputs of node n at row k as one-point boxes (`boxes` holds them).
  std::vector<const Interval*> point_inputs(int n, Eigen::Index k,
                                            std::vector<Interval>& boxes) const;
  // Adds row k's gradient through non-affine node n (adjoint `adj`) to its inputs' adjoints.
  void backward_row(int n, Eigen::Index k, const Vec& adj, std::vector<Mat>& adjoints) const;
  // The slopes of elementwise node n at row k: central differences, secants where they are 0.
  Vec slopes(int n, Eigen::Index k) const;

  const Model* model_;
  std::vector<Vec> width_;  // per Dag node: IBP width over the box (inputs of non-affine ops)
  std::vector<bool> elementwise_;     // per Dag node: relaxed per element (ElementwiseOp and kin)
  std::vector<Mat> values_;           // per Dag node: K x elements, from the last forward()
  std::vector<Eigen::Index> offset_;  // per graph input: where it starts in x
};

/// How many points PointGradient::forward takes at once for `model`: as many as keep every node's
/// values within 16 MiB, from 1 to `most`.
int point_rows(const Model& model, int most);

/// A disjunction over one box: case i holds at y when c[i] y <= rhs[i] row by row (y: the graph
/// outputs, concatenated).
struct AttackTarget {
  std::vector<Mat> c;
  std::vector<Vec> rhs;
};

/// The cases' disjunction (their boxes are not read; cases without constraints are left out).
AttackTarget target_of(const std::vector<const SpecCase*>& cases);

struct AttackOptions {
  int restarts = 32;  ///< points stepped together (fewer when the model is large)
  int steps = 50;     ///< sign-gradient steps per batch of restarts
  int rounds = 4;     ///< batches, each from new starting points
  double seconds = 1;
  uint64_t seed = 20261128;
  /// Starting points of the first batch (the rest are sampled from the box).
  std::vector<Vec> starts;
};

/// A point counts when `accept` says so (the caller's check in float64 of the exact property).
using Accept = std::function<common::Result<bool>(const Vec&)>;

/// PGD on the margin loss min_i max_r (c[i] y - rhs[i])_r, <= 0 at a counterexample. Each batch
/// starts from sampled points of `box` (uniform and face samples in turn, as point_search), then
/// takes `steps` steps x <- clamp(x - a_t w sign(grad)), w the box's widths and a_t falling from
/// 0.5 to 0.005 along a cosine; the gradient is that of the rows > 0 of the case that attains the
/// minimum. Every point reached whose loss is <= 0 goes to `accept`; the first accepted one is
/// returned. Nothing once the rounds end or `seconds` have passed.
common::Result<std::optional<Vec>> pgd_attack(const Model& model, const Interval& box,
                                              const AttackTarget& target,
                                              const AttackOptions& options, const Accept& accept);

}  // namespace propdag::internal

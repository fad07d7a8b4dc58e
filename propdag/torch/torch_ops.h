// The torch engine's per-node arithmetic: linear maps (dense, gather, sparse, convolution;
// torch_maps.cc), node kernels (affine, ReLU-like, and the generic per-box path through the
// Eigen op rule; torch_ops.cc), kernels of scalar functions and products evaluated element by
// element (torch_elementwise.cc) and their elementwise backward step (torch_lines.cc).
// Internal to propdag/torch: it includes ATen and is not installed.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "propdag/model.h"
#include "propdag/torch/torch_engine.h"

namespace propdag::torch_engine::internal {

/// Bounds of K boxes, [K, n] each.
struct TBox {
  at::Tensor lo, hi;
};

struct TLines;

/// Where a node's coefficients may be nonzero, its n elements seen as c maps of h x w: rows
/// [r0, r1) and columns [c0, c1) of every map, for every box and row of a pass; they are 0
/// elsewhere. h == 0: not known (anywhere). A convolution's backward step then runs over the
/// window alone, and the steps after it take the window from the geometry instead of searching
/// the whole maps for it.
struct Window {
  int64_t c = 0, h = 0, w = 0, r0 = 0, r1 = 0, c0 = 0, c1 = 0;
  bool known() const { return h > 0; }
  /// Known, on maps of c x h x w.
  bool on(int64_t ch, int64_t height, int64_t width) const {
    return known() && c == ch && h == height && w == width;
  }
  bool empty() const { return r0 >= r1 || c0 >= c1; }
  /// Known and at most half of each map: worth running over alone.
  bool small() const { return known() && 2 * (r1 - r0) * (c1 - c0) <= h * w; }
};
/// The smallest window holding both (an empty one adds nothing); not known unless both are known
/// on the same maps.
Window unite(const Window& a, const Window& b);

/// Coefficients of the lower (lam) and upper (om) bound on each node, [K, rows, n], and the
/// constant parts [K, rows]: the torch form of crown.h's Backward. `lines` (optional, one entry
/// per Dag node): the batched kernels' relaxations, computed on first use and reused by later
/// passes over the same node bounds (an entry's lo_slope undefined: not computed yet). `win`
/// (one entry per Dag node, or empty): each node's Window; coefficients reach a node only
/// through add_coef, which keeps it.
struct TBackward {
  std::vector<at::Tensor> lam, om;
  at::Tensor lb, ub;
  std::vector<TLines>* lines = nullptr;
  std::vector<Window> win;
};

/// Adds coefficients lam, om on `node` to w's, nonzero only in `win` (default: anywhere).
void add_coef(TBackward& w, int node, at::Tensor lam, at::Tensor om, const Window& win = {});
/// w's window of `node`.
inline Window window_of(const TBackward& w, int node) {
  return w.win.empty() ? Window{} : w.win[static_cast<size_t>(node)];
}

/// x -> W x for one LinearTerm, on rows: apply maps [M, in] to [M, out], adjoint [M, out] to
/// [M, in] (x^T W).
class LinearMap {
 public:
  virtual ~LinearMap() = default;
  virtual at::Tensor apply(const at::Tensor& x) const = 0;
  virtual at::Tensor adjoint(const at::Tensor& y) const = 0;
  /// adjoint() of y, which is 0 outside the window `in` of the output (or anywhere, when not
  /// known); `out` (optional) gets the window of the result. By default not known.
  virtual at::Tensor adjoint_window(const at::Tensor& y, const Window& in, Window* out) const;
  /// adjoint() of the rows `rows` ([M] indices) of the identity of size `out` on `opts`: [M, in].
  /// A dense map takes its weights' rows; the others map the identity's rows through
  /// adjoint_window, `in` being the rows' window on the output and `win` (optional) getting the
  /// result's.
  virtual at::Tensor adjoint_rows(const at::Tensor& rows, int64_t out,
                                  const at::TensorOptions& opts, const Window& in,
                                  Window* win) const;
  /// "dense", "conv", "conv_transpose", "gather", "identity" or "sparse".
  virtual const char* kind() const = 0;
  /// The image of the box [lo, hi] ([M, in]) from its ends: each output end sums the products
  /// of the entries with the input ends their signs select, as affine.cc's intervals do (from
  /// the centre and radius, a small end next to a huge one rounds away).
  virtual TBox ends(const at::Tensor& lo, const at::Tensor& hi) const = 0;
};

/// An elementwise relaxation of K boxes, [K, n] each: lo_slope x + lo_bias <= y <= up_slope x +
/// up_bias for x = node `input` (-1: the bounds are constants, nothing reaches an input). Any
/// lower slope in [lo_min, lo_max] (equal where it is fixed) gives a valid lower line through the
/// same bias: alpha tunes it there.
struct TLines {
  at::Tensor lo_slope, lo_bias, up_slope, up_bias, lo_min, lo_max;
  int input = -1;
};

/// The planes of a product of two variables on K boxes, [K, n] each: lo[0] x + lo[1] y + lo_bias
/// <= out <= up[0] x + up[1] y + up_bias, output element i reading element index[s][i] of node
/// input[s] (s = 0: x, 1: y; input -1: no term; index undefined: element i).
struct TPlanes {
  at::Tensor lo[2], up[2], index[2], lo_bias, up_bias;
  int input[2] = {-1, -1};
  /// The second planes (BoundOp::second_relax: products of two variables), the same as the
  /// first on boxes that have none; undefined where no box has them. Alpha tunes the weights.
  at::Tensor lo2[2], up2[2], lo_bias2, up_bias2;
};
/// Coefficients c [K, rows, n] on a product's output as coefficients on its input s ([K, rows,
/// size]): each added onto the element it reads.
at::Tensor planes_onto(const TPlanes& p, int s, const at::Tensor& c, int64_t size);
/// Coefficients g [K, rows, size] on input s, read at each output element's source: [K, rows, n].
at::Tensor planes_take(const TPlanes& p, int s, const at::Tensor& g);

/// An affine kernel's terms (input node, map) and its bias.
struct TAffine {
  std::vector<std::pair<int, const LinearMap*>> terms;
  at::Tensor bias;
};

/// One Dag node's rule in this engine.
class Kernel {
 public:
  virtual ~Kernel() = default;
  /// Bounds of the output from bounds of the variable inputs (null for constant inputs).
  virtual common::Result<TBox> interval(const std::vector<const TBox*>& in) const = 0;
  /// Replaces the coefficients on `node` in `w` by coefficients on its inputs; `b` holds the
  /// bounds of every node.
  virtual common::Status step(int node, const std::vector<TBox>& b, TBackward& w) const = 0;
  /// An affine kernel's terms; nullptr for the others, which have lines().
  virtual const TAffine* affine() const { return nullptr; }
  /// The relaxation of a non-affine kernel on the boxes' bounds `b` (every node's).
  virtual common::Result<TLines> lines(int node, const std::vector<TBox>& b) const = 0;
  /// A product's planes on the boxes' bounds `b`, with `second` the second ones too (false for
  /// other kernels, whose lines() hold).
  virtual common::Result<bool> planes(int, const std::vector<TBox>&, TPlanes&, bool) const {
    return false;
  }
  /// Whether the node runs per box through the Eigen op rule.
  virtual bool per_box() const { return false; }
  /// Whether step() needs nothing but the lines cached in TBackward::lines (not the bounds `b`),
  /// so that a pass may take the lines' rows of single boxes (refine_pairs).
  virtual bool steps_by_lines() const { return true; }
  /// Adds what it computes with (its maps' kinds, "relu" or "per_box") to `kinds`.
  virtual void kinds(std::vector<std::string>& kinds) const = 0;
};

/// A kernel whose backward step is crown.cc's step through its lines, cached in
/// TBackward::lines when it has them.
class LinesKernel : public Kernel {
 public:
  common::Status step(int node, const std::vector<TBox>& b, TBackward& w) const override;
};

/// The map of a dense affine term (torch_dense.cc): on the CPU, a weight of 2^22 entries or more
/// is read from the model's own storage (float or double; the model outlives the engine), a
/// block at a time converted to the engine's dtype; other weights are copied to the device
/// once, with their positive and negative parts for IBP.
std::unique_ptr<LinearMap> dense_map(const LinearTerm& t, const at::TensorOptions& opts);
/// The Conv / ConvTranspose of Dag node `node` as a convolution map (torch_conv.cc), when its
/// weight is a constant and its batch is 1; else null. Its geometry is not yet checked against
/// the op rule's (term_map does that).
std::unique_ptr<LinearMap> conv_map(const Model& model, int node, const at::TensorOptions& opts);
/// The map of one affine term of Dag node `node` (torch_maps.cc): dense weights as a dense
/// product; for a node's only term, a convolution when the node is one and the map equals the
/// term's matrix; else a gather where each row takes at most one input, else a sparse product.
std::unique_ptr<LinearMap> term_map(const Model& model, int node, const LinearTerm& t, bool single,
                                    const at::TensorOptions& opts);
/// The kernel of a node whose op has a ScalarRule or a PairRule (op.h), evaluated element by
/// element over all boxes (torch_elementwise.cc); null for other ops.
std::unique_ptr<Kernel> elementwise_kernel(const BoundOp& op, const std::vector<int>& inputs,
                                           const at::TensorOptions& opts);
/// The kernel of Dag node `node` (not a graph input) on `opts`' device and dtype.
common::Result<std::unique_ptr<Kernel>> make_kernel(const Model& model, int node,
                                                    const at::TensorOptions& opts);

/// crown.cc's intersect of `a` with [lo, hi]: where rounding crosses the two bounds, the pair is
/// swapped.
void intersect(TBox& a, const at::Tensor& lo, const at::Tensor& hi);
/// Bounds of c y for y in the box `y` ([K, n]), c [rows, n]: [K, rows].
TBox box_of(const at::Tensor& c, const TBox& y);

/// The backward step through the elementwise relaxation lo_slope x + lo_bias <= y <= up_slope x +
/// up_bias ([K, n] each) of the coefficients lam, om ([K or 1, rows, n]) on a node: adds the
/// bounds' constant parts to `w` and, when `in` >= 0, the coefficients passed to node `in`
/// (torch_lines.cc).
/// `win`: the coefficients' window, passed on to node `in` (they map element by element).
void elementwise_step(const at::Tensor& lo_slope, const at::Tensor& lo_bias,
                      const at::Tensor& up_slope, const at::Tensor& up_bias, int in,
                      const at::Tensor& lam, const at::Tensor& om, TBackward& w,
                      const Window& win = {});

/// crown.h's nan_as_unbounded on tensors: NaN lower bounds -inf, NaN upper bounds +inf.
void nan_as_unbounded(TBox& b);

/// into += add, where an undefined `into` takes `add`.
void accumulate(at::Tensor& into, at::Tensor add);

/// An Eigen vector / column-major matrix as a tensor on `opts`' device (a copy).
at::Tensor to_tensor(const Vec& v, const at::TensorOptions& opts);
at::Tensor to_tensor(const Mat& m, const at::TensorOptions& opts);
/// A [K, n] tensor as an Eigen K x n matrix (float64, on the CPU).
Mat to_mat(const at::Tensor& t);
/// Whether tensors on `d` take the CPU's own code (fused loops, box chunks over threads, large
/// weights read from the model's storage): on the CPU, unless $PROPDAG_TORCH_DEVICE_PATHS is
/// set, which makes the CPU take CUDA's code instead (the ctest propdag_torch_test_device_paths:
/// machines without a GPU run it).
bool cpu_paths(const at::Device& d);
/// Boxes per call chunk: on the CPU, coefficient tensors (boxes x rows x elements of the widest
/// node, rows those of nodes with a nonzero `row_cost`) stay within 2^18 entries, or
/// $PROPDAG_TORCH_CHUNK_ENTRIES; elsewhere (cpu_paths false, or that variable `inf`), no
/// chunking: the largest index.
Eigen::Index box_chunk(const Model& m, const std::vector<double>& row_cost,
                       const at::TensorOptions& opts);
/// K matrices of rows x n as a [K, rows, n] tensor on `opts` (zeros for an empty one).
at::Tensor stack_rows(const std::vector<Mat>& m, Eigen::Index rows, int64_t n,
                      const at::TensorOptions& opts);
/// Bounds [K, n] as K x n matrices.
Boxes to_boxes(const TBox& b);
/// A [K, rows, n] tensor as K Eigen rows x n matrices (float64, on the CPU).
std::vector<Mat> to_mats(const at::Tensor& t);

/// Rows [k0, k0 + k) of Engine::linear_bounds' node_bounds for `total` boxes, one entry per Dag
/// node: undefined where the entry is not total x numel(node).
std::vector<TBox> node_rows(const Model& model, const std::vector<Boxes>& nodes, Eigen::Index k0,
                            Eigen::Index k, Eigen::Index total, const at::TensorOptions& opts);
/// Writes `b` (every Dag node's bounds on k boxes) into rows [k0, k0 + k) of `nodes`, whose
/// entries get `total` rows when first written; an empty `b` writes nothing.
void store_rows(const std::vector<TBox>& b, Eigen::Index k0, Eigen::Index total,
                std::vector<Boxes>& nodes);

}  // namespace propdag::torch_engine::internal

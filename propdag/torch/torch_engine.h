// The LibTorch engine: IBP, CROWN and alpha bounds of K input boxes in one call, on the CPU or on
// CUDA, over the same Model (DAG, schedules, op rules) as the Eigen engine of engine.h. No LibTorch
// header is included here: the engine lives in the shared library propdag_torch, which a program
// links (propdag::propdag_torch) or opens at run time (load_torch_engine, see loader.h).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "propdag/engine.h"
#include "propdag/model.h"

namespace propdag::torch_engine {

/// Where and in which precision the engine computes.
struct Device {
  std::string device = "cpu";  ///< "cpu" or "cuda"
  bool float32 = false;        ///< float64 by default
  /// LibTorch's threads on the CPU, set for the process (0: $OMP_NUM_THREADS, else its count of
  /// physical cores).
  int threads = 0;
};

/// K boxes (or K bounds): row k of lo/hi is box k, flattened (graph inputs concatenated).
struct Boxes {
  Mat lo, hi;
  Eigen::Index count() const { return lo.rows(); }
};

/// One model prepared for one device: dense weights copied there once, Conv layers kept as
/// convolutions (transposed convolutions in the backward pass). The Model must outlive it.
class Engine {
 public:
  virtual ~Engine() = default;
  /// Bounds of every graph output for each box: out[o] is K x numel(output o). Options::method
  /// kIbp, kCrown or kAlpha; the relaxations, refinement budget and IBP intersection are those of
  /// propdag::output_bounds, so each row equals its result for that box up to rounding (kAlpha:
  /// ReLU-like lower slopes tuned as the Eigen engine does, Sigmoid / Tanh tangents not tuned;
  /// never looser than kCrown).
  virtual common::Result<std::vector<Boxes>> output_bounds(const Boxes& input,
                                                           const Options& options) = 0;
  /// Bounds of sum_o C_o y_o for each box (K x rows), as propdag::linear_bounds. With
  /// `lower_coef`, one rows x inputs matrix per box: BoundsOut::lower_coef's a_r (zero rows where
  /// an output fell back to interval bounds). With `node_bounds` (kCrown), BoundsIn::node_bounds
  /// and BoundsOut::node_bounds for K boxes: passed in with one entry per Dag node, K x
  /// numel(node) bounds known to hold on each box (an entry of another shape: nothing known; an
  /// infinite row: nothing known for that box), intersected with those computed before they are
  /// used; on return, every node's bounds on each box (cleared for kIbp). With `lower_bias` and
  /// `lower_coef`, K x rows: BoundsOut::lower_bias of each box, so that a_r . x + b_r bounds row
  /// r from below on that box (-inf where nothing is known; empty for kIbp).
  virtual common::Result<Boxes> linear_bounds(const Boxes& input, const std::vector<Mat>& c,
                                              const Options& options,
                                              std::vector<Mat>* lower_coef = nullptr,
                                              std::vector<Boxes>* node_bounds = nullptr,
                                              Mat* lower_bias = nullptr) = 0;
  /// Nodes computed by the generic path (the Eigen op rule called once per box), by op type;
  /// empty when every node has a tensor rule.
  virtual std::vector<std::string> per_box_ops() const = 0;
  /// How many linear maps and kernels of each kind the model became: "dense", "conv",
  /// "conv_transpose", "gather", "identity", "sparse" (maps) and "relu", "scalar", "product",
  /// "per_box" (kernels).
  virtual std::map<std::string, int> kinds() const = 0;
};

/// Prepares `model` for `device`. Fails in one line for an unknown device, for "cuda" without a
/// usable GPU, and for a node whose op this engine has no rule for (naming node and op). On the
/// CPU LibTorch's threads (Device::threads) run chunks of boxes side by side, or, where a call's
/// boxes make one chunk (one box), a pass's chunks of rows, except with a BLAS that is not safe
/// to call from two threads at once (OpenBLAS's sequential build, Debian's default): create()
/// sets one thread then.
common::Result<std::unique_ptr<Engine>> create(const Model& model, const Device& device);

}  // namespace propdag::torch_engine

/// The entry point a program that dlopen()s libpropdag_torch looks up (see loader.h): create().
extern "C" {
using PropdagTorchCreate = common::Result<std::unique_ptr<propdag::torch_engine::Engine>> (*)(
    const propdag::Model&, const propdag::torch_engine::Device&);
}

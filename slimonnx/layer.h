// Linear layers with constant weights (Gemm, MatMul, Conv, ConvTranspose) that elementwise affine
// maps can be folded into, on either side.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/graph.h"
#include "slimonnx/affine.h"
#include "slimonnx/rewrite.h"

namespace slimonnx {

class Layer {
 public:
  virtual ~Layer() = default;
  /// The data input.
  const std::string& x() const { return x_; }
  void set_x(std::string x) { x_ = std::move(x); }
  /// Axis of the output that indexes output channels (features).
  virtual int64_t out_axis(int64_t out_rank) const = 0;
  /// layer(x) * s + t, with s and t per output channel. False when not exact.
  virtual bool fold_after(const AxisAffine& a) = 0;
  /// layer(x * s + t) where `a` is the affine map whose output reaches the layer (possibly
  /// through reshapes that keep the element order). False when not exact.
  virtual bool fold_before(const Affine& a) = 0;
  /// Replaces node i by this layer (same name and outputs). False (nothing changed) if the
  /// layer cannot be written, e.g. a bias on a MatMul of rank > 2.
  virtual bool write(Editor& ed, int i) const = 0;
  /// Whether write(ed, i) would succeed now.
  virtual bool writable(const Editor& ed, int i) const = 0;
  /// A node that is about to be removed: write must not hand anything (a bias) to it.
  void set_doomed(int node) { doomed_ = node; }
  int doomed() const { return doomed_; }

 private:
  std::string x_;
  int doomed_ = -1;
};

/// The node as a layer with constant float weights, or null.
std::unique_ptr<Layer> as_layer(const Editor& ed, const common::Node& n);

/// Y = X . W + b along the last axis of X (MatMul with constant 2-D W, or Gemm without transA).
/// W read from an initializer stays there: the scalings folded into it are recorded and applied
/// element by element when it is read or written, so a large matrix is never held as doubles
/// beside its tensor (the same arithmetic, in the same order, as scaling a copy in place).
class DenseLayer : public Layer {
 public:
  int64_t k = 0, n = 0;
  std::vector<double> b;  ///< n, or empty for no bias
  common::DType dtype = common::DType::kFloat;

  /// W is `t` (float or double, 2-D), transposed when `transposed`; `t` must outlive the reads.
  void set_source(const common::Tensor* t, bool transposed);
  /// W *= alpha.
  void scale(double alpha);
  /// W[r, c], as a double.
  double weight(int64_t r, int64_t c) const;
  /// W (k x n, row-major) as doubles, for rewrites that combine whole matrices; detaches W from
  /// its source tensor.
  std::vector<double>& weights();
  void set_weights(std::vector<double> w);
  /// W as a k x n tensor of `dtype`.
  common::Tensor weight_tensor() const;

  int64_t out_axis(int64_t out_rank) const override { return out_rank - 1; }
  bool fold_after(const AxisAffine& a) override;
  bool fold_before(const Affine& a) override;
  bool write(Editor& ed, int i) const override;
  bool writable(const Editor& ed, int i) const override;

 private:
  /// A scaling of the source: by one factor, per row or per column.
  struct Scaling {
    enum class Kind { kAll, kRow, kColumn } kind;
    std::vector<double> s;
  };
  const common::Tensor* src_ = nullptr;
  bool transposed_ = false;
  std::vector<Scaling> scalings_;  ///< in the order they apply
  std::vector<double> w_;          ///< the matrix itself when there is no source
};
std::unique_ptr<DenseLayer> as_dense(const Editor& ed, const common::Node& n);

/// Conv / ConvTranspose with constant weight (and bias).
std::unique_ptr<Layer> as_conv(const Editor& ed, const common::Node& n);

}  // namespace slimonnx

// Helpers shared by the op rules: index arithmetic on row-major shapes and affine builders.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "common/op_params.h"
#include "common/tensor.h"
#include "propdag/op.h"
#include "propdag/registry.h"
#include "propdag/relax.h"

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
/// tensors: interval rules (elementwise_nonlinear.cc), reached from the Mul / Div rules of
/// elementwise.cc and the MatMul rule of linalg.cc.
common::Result<OpOutputs> interval_product(const OpContext& ctx, bool divide);

/// A kLinear relaxation summed entry by entry from planes of products or quotients of x_a and
/// y_b (x = in[0], y = in[1]); a < 0 or b < 0: the planes have no term in x or in y.
class PlaneSum {
 public:
  explicit PlaneSum(int64_t rows);
  void add(int64_t row, int64_t a, int64_t b, const Planes& p);
  Relaxation finish(int64_t cols0, int64_t cols1);

 private:
  using Entries = std::vector<Eigen::Triplet<double>>;
  Entries lo_[2], up_[2];
  Vec lo_bias_, up_bias_;
};
common::Result<OpOutputs> two_variable_matmul(const OpContext& ctx);
/// Slice with variable starts and / or ends (index.cc), reached from the Slice rule of
/// index_copy.cc: the hull over the windows of the output's static length that the starts and
/// ends allow.
common::Result<OpOutputs> variable_slice(const OpContext& ctx);
/// ScatterND (reduction none), its indices variable or constant (index.cc): the hull of data
/// and the updates that may land at each element.
common::Result<OpOutputs> scatter_nd_rule(const OpContext& ctx);

/// A monotone non-decreasing elementwise function of input 0, f(x, param), with its lines on
/// [l, u] (activation.cc; also Sign of elementwise_nonlinear.cc). `kink_at_zero`: linear
/// on each side of 0.
using MonotoneFn = double (*)(double, double);
using MonotoneLines = Lines (*)(double, double, double);
common::Result<OpOutputs> monotone_elementwise(const OpContext& ctx, MonotoneFn f, MonotoneLines r,
                                               double param, bool kink_at_zero = false);

/// Where an output element comes from: element `index` of input `slot` (shape.cc).
struct Source {
  int slot;
  int64_t index;
};
/// An affine output whose element i copies `src[i]` from a variable input or a constant.
OpOutputs select(const OpContext& ctx, const common::Dims& out, const std::vector<Source>& src);
/// Output element of a strided box [start, start + step * count) per axis, from input 0.
std::vector<Source> strided(const common::Dims& x, const common::Dims& out,
                            const std::vector<int64_t>& start, const std::vector<int64_t>& step);

/// Geometry of a 2-D window op on an [N, C, H, W] input (conv.cc; Conv, ConvTranspose, pools).
struct Window {
  int64_t n = 1, c = 1, h = 1, w = 1;      // input
  int64_t kh = 1, kw = 1;                  // kernel
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;  // strides, dilations
  int64_t ph = 0, pw = 0, ph_end = 0, pw_end = 0;
  int64_t oh = 1, ow = 1;  // output spatial size
  bool one_d = false;
};

/// The node's window (common::read_window) on an [N, C, W] or [N, C, H, W] input with `kernel` (the
/// weight's spatial dims; empty for pools, which have kernel_shape). `forward` (Conv, pools):
/// auto_pad resolved and output sizes computed; otherwise (ConvTranspose) the pads as given.
common::Result<Window> window(const OpContext& ctx, const common::Dims& x,
                              const common::Dims& kernel, bool forward);
/// [N, channels, oh, ow] (or [N, channels, ow] for 1-D windows).
common::Dims out_dims(const Window& g, int64_t channels);

/// Calls f(out_spatial, kernel_pos, in_spatial or -1 when in padding) for one channel plane.
template <class F>
void for_each_tap(const Window& g, F&& f) {
  for (int64_t oy = 0; oy < g.oh; ++oy)
    for (int64_t ox = 0; ox < g.ow; ++ox)
      for (int64_t ky = 0; ky < g.kh; ++ky)
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          int64_t iy = oy * g.sh - g.ph + ky * g.dh, ix = ox * g.sw - g.pw + kx * g.dw;
          bool inside = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
          f(oy * g.ow + ox, ky * g.kw + kx, inside ? iy * g.w + ix : -1, iy, ix);
        }
}

}  // namespace propdag

// Signal ops: DFT and STFT through torch.fft on complex views of ONNX's [..., 2] real layout
// (torch.view_as_real turns the result back); window functions and MelWeightMatrix, whose values
// depend on constants only, become buffers computed here.
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::DType;
using common::Status;
using common::Tensor;

// The compile-time integer scalar of input i.
common::Result<int64_t> const_scalar(Context& ctx, size_t i, std::string_view what) {
  const Tensor* t = ctx.constant(i);
  if (!t || t->numel() != 1) return ctx.error(std::string(what) + " must be a constant scalar");
  return t->int_at(0);
}

// ONNX's [..., 1] (real) or [..., 2] (real, imaginary) tensor `x` as a torch tensor without
// the last dim (complex in the second case).
std::string signal(const std::string& x, bool complex) {
  return complex ? "torch.complex(" + x + "[..., 0], " + x + "[..., 1])" : x + "[..., 0]";
}

// The transform along `dim` of `sig` to `n` points; onesided keeps n / 2 + 1 of them.
common::Result<std::string> fft(Context& ctx, const std::string& sig, bool complex, int64_t dim,
                                int64_t rank, int64_t n, int64_t size, bool inverse,
                                bool onesided) {
  if (inverse && onesided) return ctx.error("an inverse onesided DFT is not supported");
  const std::string fn = inverse ? "ifft" : onesided && !complex ? "rfft" : "fft";
  std::string expr = "torch.fft." + fn + "(" + sig;
  if (n != size) expr += ", n=" + std::to_string(n);
  expr += ", dim=" + std::to_string(dim) + ")";
  if (onesided && complex) {
    std::vector<std::string> parts(rank, ":");
    parts[dim] = ":" + std::to_string(n / 2 + 1);
    expr += index_suffix(parts);
  }
  return "torch.view_as_real(" + expr + ")";
}

// DFT-17: axis attribute (default 1); DFT-20: axis input (default -2). Both count the axis
// over the input's rank, complex dim included.
Status dft(Context& ctx) {
  const int64_t rank = ctx.rank(0);
  const common::Dims& shape = ctx.shape(0);
  if (rank < 2 || (shape.back() != 1 && shape.back() != 2)) {
    return ctx.error("the input's last dim must be 1 (real) or 2 (complex)");
  }
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (ctx.opset() >= 20) {
    axis = -2;
    if (ctx.has_input(2)) {
      ASSIGN_OR_RETURN(axis, const_scalar(ctx, 2, "axis"));
    }
  }
  ASSIGN_OR_RETURN(axis, axis_at(ctx, axis, rank));
  if (axis == rank - 1) return ctx.error("axis out of range");
  int64_t n = shape[axis];
  if (ctx.has_input(1)) {
    ASSIGN_OR_RETURN(n, const_scalar(ctx, 1, "dft_length"));
  }
  if (n < 1) return ctx.error("dft_length must be positive");
  const bool complex = shape.back() == 2;
  const bool inverse = ctx.node().attr_int("inverse", 0) != 0;
  const bool onesided = ctx.node().attr_int("onesided", 0) != 0;
  ASSIGN_OR_RETURN(std::string expr, fft(ctx, signal(ctx.in(0), complex), complex, axis, rank - 1,
                                         n, shape[axis], inverse, onesided));
  return ctx.emit(py::Expr::raw(expr, {py::Ns::kTorch}), "dft", ctx.batched(0) && axis != 0);
}

// STFT-17: frames of the signal (Tensor.unfold, no padding), times the window, transformed.
Status stft(Context& ctx) {
  const common::Dims& shape = ctx.shape(0);
  if (shape.size() != 3 || (shape[2] != 1 && shape[2] != 2)) {
    return ctx.error("the signal must be [batch, length, 1 or 2]");
  }
  ASSIGN_OR_RETURN(int64_t step, const_scalar(ctx, 1, "frame_step"));
  int64_t length = ctx.has_input(2) && ctx.rank(2) == 1 ? ctx.shape(2)[0] : -1;
  if (ctx.has_input(3)) {
    ASSIGN_OR_RETURN(length, const_scalar(ctx, 3, "frame_length"));
  }
  if (length < 1 || step < 1 || length > shape[1]) return ctx.error("bad frame length or step");
  if (ctx.has_input(2) && (ctx.rank(2) != 1 || ctx.shape(2)[0] != length)) {
    return ctx.error("the window must have frame_length values");
  }
  const bool complex = shape[2] == 2;
  const bool onesided = ctx.node().attr_int("onesided", 1) != 0;
  if (complex && onesided) return ctx.error("a onesided STFT needs a real signal");
  std::string frames = signal(ctx.in(0), complex) + ".unfold(1, " + std::to_string(length) + ", " +
                       std::to_string(step) + ")";
  if (ctx.has_input(2)) frames += " * " + ctx.in(2);
  ASSIGN_OR_RETURN(std::string expr,
                   fft(ctx, frames, complex, -1, 3, length, length, false, onesided));
  return ctx.emit(py::Expr::raw(expr, {py::Ns::kTorch}), "stft", ctx.batched(0));
}

// Output element type from `output_datatype` (default float).
DType output_dtype(const Context& ctx) {
  return static_cast<DType>(ctx.node().attr_int("output_datatype", 1));
}

// w[k] = a0 - a1 cos(2 pi k / d) + a2 cos(4 pi k / d), d = N (periodic) or N - 1 (symmetric).
Status window(Context& ctx) {
  const std::string& op = ctx.node().op_type;
  ASSIGN_OR_RETURN(int64_t size, const_scalar(ctx, 0, "size"));
  if (size < 0) return ctx.error("negative size");
  const bool periodic = ctx.node().attr_int("periodic", 1) != 0;
  double a0 = 0.5, a1 = 0.5, a2 = 0;
  if (op == "HammingWindow") a0 = 25.0 / 46, a1 = 21.0 / 46;
  if (op == "BlackmanWindow") a0 = 0.42, a2 = 0.08;
  const double d = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> w(size);
  for (int64_t k = 0; k < size; ++k) {
    const double angle = 2 * std::numbers::pi * k / d;
    w[k] = a0 - a1 * std::cos(angle) + a2 * std::cos(2 * angle);
  }
  std::string hint = op == "HannWindow"      ? "hann_window"
                     : op == "HammingWindow" ? "hamming_window"
                                             : "blackman_window";
  ctx.alias(0, Operand{ctx.buffer(Tensor::from_double(w, {size}, output_dtype(ctx)), hint), false});
  return {};
}

double hz_to_mel(double hz) { return 2595 * std::log10(1 + hz / 700); }
double mel_to_hz(double mel) { return 700 * (std::pow(10, mel / 2595) - 1); }

// Triangular filters between mel-spaced frequency bins, [dft_length / 2 + 1, num_mel_bins].
Status mel_weight_matrix(Context& ctx) {
  ASSIGN_OR_RETURN(int64_t bins, const_scalar(ctx, 0, "num_mel_bins"));
  ASSIGN_OR_RETURN(int64_t length, const_scalar(ctx, 1, "dft_length"));
  ASSIGN_OR_RETURN(int64_t rate, const_scalar(ctx, 2, "sample_rate"));
  const Tensor* lower = ctx.constant(3);
  const Tensor* upper = ctx.constant(4);
  if (!lower || !upper) return ctx.error("the edge frequencies must be constants");
  if (bins < 1 || length < 1 || rate < 1) return ctx.error("sizes must be positive");
  const int64_t spectrum = length / 2 + 1;
  const double low = hz_to_mel(lower->double_at(0)), high = hz_to_mel(upper->double_at(0));
  const double step = (high - low) / static_cast<double>(bins + 2);
  std::vector<int64_t> points(bins + 2);
  for (int64_t i = 0; i < bins + 2; ++i) {
    const double hz = mel_to_hz(low + i * step);
    points[i] = static_cast<int64_t>(std::floor((length + 1) * hz / rate));
  }
  std::vector<double> m(spectrum * bins, 0.0);
  auto set = [&](int64_t j, int64_t i, double v) {
    if (j >= 0 && j < spectrum) m[j * bins + i] = v;
  };
  for (int64_t i = 0; i < bins; ++i) {
    const int64_t left = points[i], center = points[i + 1], right = points[i + 2];
    if (center == left) set(center, i, 1);
    for (int64_t j = left; j <= center && center != left; ++j) {
      set(j, i, double(j - left) / double(center - left));
    }
    for (int64_t j = center; j < right; ++j) set(j, i, double(right - j) / double(right - center));
  }
  const Tensor t = Tensor::from_double(m, {spectrum, bins}, output_dtype(ctx));
  ctx.alias(0, Operand{ctx.buffer(t, "mel_weight_matrix"), false});
  return {};
}

}  // namespace

void register_signal(HandlerRegistry& t) {
  t.add("DFT", dft);
  t.add("STFT", stft);
  t.add("HannWindow", window);
  t.add("HammingWindow", window);
  t.add("BlackmanWindow", window);
  t.add("MelWeightMatrix", mel_weight_matrix);
}

}  // namespace torchonnx

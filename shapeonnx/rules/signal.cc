// Signal processing (opset 17): window generators, MelWeightMatrix, DFT, STFT.
#include <string>

#include "shapeonnx/rules/rules.h"
#include "shapeonnx/rules/util.h"

namespace shapeonnx {
namespace {

using common::Dims;
using common::DType;
using common::Result;
using common::Status;

// One known scalar integer input.
Result<int64_t> known_scalar(const InferContext& ctx, size_t i, std::string_view what) {
  ASSIGN_OR_RETURN(std::vector<int64_t> v, known_ints(ctx, i, what));
  if (v.size() != 1) return ctx.error(std::string(what) + " must be a single value");
  return v[0];
}

DType output_datatype(const InferContext& ctx) {
  return static_cast<DType>(ctx.node().attr_int("output_datatype", 1));
}

// BlackmanWindow, HammingWindow, HannWindow(size) -> [size].
Status window_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(int64_t size, known_scalar(ctx, 0, "window size"));
  if (size < 0) return ctx.error("window size " + std::to_string(size) + " < 0");
  ctx.set_output(0, output_datatype(ctx), {size});
  return {};
}

// MelWeightMatrix(num_mel_bins, dft_length, ...) -> [floor(dft_length / 2) + 1, num_mel_bins].
Status mel_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(int64_t bins, known_scalar(ctx, 0, "num_mel_bins"));
  ASSIGN_OR_RETURN(int64_t length, known_scalar(ctx, 1, "dft_length"));
  if (bins < 0 || length < 0) return ctx.error("negative MelWeightMatrix size");
  ctx.set_output(0, output_datatype(ctx), {length / 2 + 1, bins});
  return {};
}

// DFT(input [batch, n..., 1|2], dft_length?[, axis?]): complex output (last dim 2); the transformed
// axis has dft_length (or its own) entries, floor(n / 2) + 1 of them when onesided. The axis is an
// attribute (default 1) up to opset 19 and an optional scalar input (default -2) from opset 20.
Status dft_rule(InferContext& ctx) {
  Dims out = ctx.shape(0);
  if (out.size() < 3) return ctx.error("DFT input must have rank >= 3");
  int64_t axis = 1;
  if (ctx.opset() >= 20) {
    axis = -2;
    if (ctx.has_input(2)) {
      ASSIGN_OR_RETURN(axis, known_scalar(ctx, 2, "DFT axis"));
    }
  } else {
    axis = ctx.node().attr_int("axis", 1);
  }
  // The axis counts over the whole rank but may be neither the batch dim nor the complex dim.
  ASSIGN_OR_RETURN(axis, ctx.axis(axis, ctx.rank(0)));
  if (axis < 1 || axis > ctx.rank(0) - 2) return ctx.error("DFT axis out of range");
  int64_t n = out[axis];
  if (ctx.has_input(1)) {
    ASSIGN_OR_RETURN(n, known_scalar(ctx, 1, "DFT dft_length"));
  }
  out[axis] = ctx.node().attr_int("onesided", 0) != 0 ? n / 2 + 1 : n;
  out.back() = 2;
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// STFT(signal [batch, length, 1|2], frame_step, window?, frame_length?) ->
// [batch, floor((length - frame_length) / frame_step) + 1, bins, 2], bins = frame_length / 2 + 1
// when onesided (the default), else frame_length.
Status stft_rule(InferContext& ctx) {
  const Dims& x = ctx.shape(0);
  if (x.size() != 3) return ctx.error("STFT signal must be 3-D");
  ASSIGN_OR_RETURN(int64_t step, known_scalar(ctx, 1, "STFT frame_step"));
  int64_t frame = -1;
  if (ctx.has_input(3)) {
    ASSIGN_OR_RETURN(frame, known_scalar(ctx, 3, "STFT frame_length"));
  } else if (ctx.has_input(2) && ctx.rank(2) == 1) {
    frame = ctx.shape(2)[0];
  }
  if (frame < 1 || frame > x[1] || step < 1) return ctx.error("bad STFT frame length or step");
  const int64_t frames = (x[1] - frame) / step + 1;
  const int64_t bins = ctx.node().attr_int("onesided", 1) != 0 ? frame / 2 + 1 : frame;
  ctx.set_output(0, ctx.dtype(0), {x[0], frames, bins, 2});
  return {};
}

}  // namespace

void register_signal_rules(ShapeRegistry& table) {
  table.add("BlackmanWindow", &window_rule);
  table.add("HammingWindow", &window_rule);
  table.add("HannWindow", &window_rule);
  table.add("MelWeightMatrix", &mel_rule);
  table.add("DFT", &dft_rule);
  table.add("STFT", &stft_rule);
}

}  // namespace shapeonnx

// Resize's antialiased filters (opset 18, `antialias` 1), shared by the evaluator and torchonnx.
#pragma once

#include <cstdint>
#include <vector>

namespace common {

/// One input position of a resized axis and its weight.
struct ResizeTap {
  int64_t index;
  double weight;
};

/// The taps of ONNX's antialiased linear (`cubic` false) or cubic filter at source coordinate `x`
/// of an axis of `in` elements resized by `scale`. Downscaling (scale < 1) stretches the filter
/// by 1 / scale; the weights are normalized to sum to 1. As in ONNX's reference: the taps are the
/// filter's length of positions nearest `x` (the lower one first when `x` is whole), on the input
/// extended by edge copies, so indices are clamped into [0, in); with `exclude_outside` the
/// positions outside the input get weight 0 and the rest are renormalized.
std::vector<ResizeTap> antialias_taps(bool cubic, double x, int64_t in, double scale,
                                      double cubic_a, bool exclude_outside);

}  // namespace common

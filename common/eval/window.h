// The spatial window of Conv, ConvTranspose and the pools (conv.cc, pool.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "common/eval/kernels.h"

namespace common::eval {

/// Spatial geometry shared by Conv and the pools.
struct Window {
  Dims in, kernel, strides, dilations, pad_begin, pad_end, out;
};

/// The node's window (common::read_window) over spatial input sizes `in`, with `kernel` the
/// weight's or kernel_shape's: explicit pads and output sizes per dim.
Result<Window> plan_window(const Ctx& c, const Dims& in, const Dims& kernel);

/// Calls f(offset into the spatial block, in_range, in_padded_range) for each kernel tap of the
/// window at output position `pos`.
template <class F>
void for_each_tap(const Window& w, const std::vector<int64_t>& pos, F f) {
  size_t k = w.in.size();
  std::vector<int64_t> tap(k, 0);
  Dims st = strides_of(w.in);
  do {
    int64_t off = 0;
    bool inside = true, padded = true;
    for (size_t d = 0; d < k; ++d) {
      int64_t i = pos[d] * w.strides[d] - w.pad_begin[d] + tap[d] * w.dilations[d];
      inside = inside && i >= 0 && i < w.in[d];
      padded = padded && i < w.in[d] + w.pad_end[d];
      off += i * st[d];
    }
    f(off, inside, padded);
  } while (next_index(tap, w.kernel));
}

}  // namespace common::eval

// Op parameters read once, validated once, for every tool: one reader per parameter family.
// Errors carry only a message; callers turn it into their own error naming file, node and op.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/graph.h"
#include "common/tensor.h"

namespace common {

/// Axis `axis` of a tensor of rank `rank` as an index in [0, rank): negative axes count from the
/// end. Fails, naming both, unless -rank <= axis < rank.
Result<int64_t> normalize_axis(int64_t axis, int64_t rank);

/// Flatten's axis, the dim where the second output dim starts: [-rank, rank] as an index in
/// [0, rank] (negative axes count from the end). Fails, naming both, out of that range.
Result<int64_t> normalize_flatten_axis(int64_t axis, int64_t rank);

/// Every axis of `axes` normalized as by normalize_axis, in the given order. Fails on an axis out
/// of range or on one that names a dim already named.
Result<Dims> normalize_axes(Dims axes, int64_t rank);

/// A list of integers that old opsets give as attribute `attr` and new ones as input `input`:
/// `value`, the input's known content read as integers (floats saturate, NaN reads as 0, as
/// Tensor::to_int64 does), when the node has that input; else the attribute when `attr` is not
/// empty and the node has it; else nullopt. Fails when the node has the input but `value` is null
/// (not known); the message names `what` (or the input alone when `what` is empty).
Result<std::optional<Dims>> ints_input_or_attr(const Node& node, size_t input, const Tensor* value,
                                               std::string_view attr, std::string_view what);

/// The dims [begin, end) that Shape returns (opset 15's `start` and `end`, default all): negative
/// values count from the end, both clamp to [0, rank], and an end before the begin is the begin.
struct DimRange {
  int64_t begin = 0, end = 0;
};
DimRange shape_range(const Node& node, int64_t rank);

/// The sliding window of Conv, ConvTranspose and the pools over `kernel.size()` spatial dims.
struct Window {
  Dims kernel, strides, dilations;
  Dims pad_begin, pad_end;          ///< the `pads` attribute as given (zeros when absent)
  std::string auto_pad = "NOTSET";  ///< NOTSET, SAME_UPPER, SAME_LOWER or VALID
  bool ceil_mode = false;

  bool same() const { return auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER"; }
  bool valid() const { return auto_pad == "VALID"; }
};

/// One spatial dim of a window over an input of known size: output size and the padding that
/// auto_pad resolves to (explicit pads for NOTSET, zeros for VALID, SAME's split otherwise).
struct WindowDim {
  int64_t out = 0, pad_begin = 0, pad_end = 0;
};

/// Reads kernel_shape (or `kernel` when the attribute is absent), strides, dilations, pads,
/// auto_pad and ceil_mode for `spatial` spatial dims. Lengths must match; kernel, strides and
/// dilations must be positive, pads nonnegative, all at most 2^24; auto_pad must be known.
Result<Window> read_window(const Node& node, size_t spatial, const Dims& kernel = {});

/// Dim `i` of window `w` over an input dim of size `in` (Conv and the pools; ONNX's formula):
/// out = floor((in + pads - ((k - 1) * d + 1)) / s) + 1, ceil with ceil_mode, where a last window
/// that would start in the end padding is dropped (as onnxruntime and PyTorch do); SAME_*:
/// out = ceil(in / s) and the total padding (out - 1) * s + (k - 1) * d + 1 - in, at least 0, is
/// split with the extra element at the end (SAME_UPPER) or the beginning (SAME_LOWER).
/// Fails when the window does not fit the padded input.
Result<WindowDim> window_dim(const Window& w, size_t i, int64_t in);

/// Col2Im with window `w` (kernel = block_shape) over an image of dims `image`: for each column
/// element, row-major over (kernel position, block), the flat image offset it adds to, or -1
/// where it falls in the padding. `blocks` gets the number of blocks (the columns' last dim).
/// Fails when the window does not fit the padded image or the table would pass 2^24 entries.
Result<std::vector<int64_t>> col2im_offsets(const Window& w, const Dims& image, int64_t* blocks);

/// For each element of `out` (row-major), the flat offset of the element of `in` it is broadcast
/// from (numpy rules, `in` right-aligned). Empty when `in` does not broadcast to `out`, or when
/// `out` has no elements.
std::vector<int64_t> broadcast_map(const Dims& in, const Dims& out);

}  // namespace common

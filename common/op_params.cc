#include "common/op_params.h"

#include <algorithm>
#include <set>
#include <string_view>

namespace common {
namespace {

Error param_error(std::string message) { return Error{"", "", "", std::move(message)}; }

// Attribute `name` of length n, or `fill` repeated when absent.
Result<Dims> sized_attr(const Node& node, std::string_view name, size_t n, int64_t fill) {
  Dims v = node.attr_ints(name, Dims(n, fill));
  if (v.size() != n) {
    return param_error("attribute '" + std::string(name) + "' has " + std::to_string(v.size()) +
                       " values, expected " + std::to_string(n));
  }
  return v;
}

// Windows and padding beyond 2^24 per axis are malformed, not models (and their extents would
// overflow the arithmetic of output sizes).
constexpr int64_t kMaxWindow = int64_t{1} << 24;

Status check_window(const Window& w) {
  if (w.auto_pad != "NOTSET" && !w.same() && !w.valid()) {
    return param_error("unknown auto_pad '" + w.auto_pad + "'");
  }
  for (size_t i = 0; i < w.kernel.size(); ++i) {
    if (w.kernel[i] < 1 || w.strides[i] < 1 || w.dilations[i] < 1) {
      return param_error("kernel, strides and dilations must be positive");
    }
    if (w.kernel[i] > kMaxWindow || w.strides[i] > kMaxWindow || w.dilations[i] > kMaxWindow) {
      return param_error("kernel, strides or dilations larger than 2^24");
    }
  }
  for (const Dims* pads : {&w.pad_begin, &w.pad_end}) {
    for (int64_t p : *pads) {
      if (p < 0) return param_error("negative pads");
      if (p > kMaxWindow) return param_error("pads larger than 2^24");
    }
  }
  return {};
}

// `axis` in [-rank, end) as an index: negative axes count from the end.
Result<int64_t> axis_below(int64_t axis, int64_t rank, int64_t end) {
  if (axis < -rank || axis >= end) {
    return param_error("axis " + std::to_string(axis) + " out of range for rank " +
                       std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace

Result<int64_t> normalize_axis(int64_t axis, int64_t rank) { return axis_below(axis, rank, rank); }

Result<int64_t> normalize_flatten_axis(int64_t axis, int64_t rank) {
  return axis_below(axis, rank, rank + 1);
}

Result<Dims> normalize_axes(Dims axes, int64_t rank) {
  std::set<int64_t> seen;
  for (int64_t& a : axes) {
    ASSIGN_OR_RETURN(int64_t n, normalize_axis(a, rank));
    if (!seen.insert(n).second) return param_error("axis " + std::to_string(a) + " repeated");
    a = n;
  }
  return axes;
}

Result<std::optional<Dims>> ints_input_or_attr(const Node& node, size_t input, const Tensor* value,
                                               std::string_view attr, std::string_view what) {
  if (node.has_input(input)) {
    const std::string n = std::to_string(input), name = "'" + node.inputs[input] + "'";
    const std::string at = what.empty() ? "input " + n + " (" + name + ")"
                                        : std::string(what) + " (input " + n + ", " + name + ")";
    if (value == nullptr) return param_error(at + " is not known statically");
    return std::optional<Dims>(value->to_int64());
  }
  if (!attr.empty() && node.has_attr(attr)) return std::optional<Dims>(node.attr_ints(attr));
  return std::optional<Dims>();
}

DimRange shape_range(const Node& node, int64_t rank) {
  auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t begin = clamp(node.attr_int("start", 0));
  return {begin, std::max(begin, clamp(node.attr_int("end", rank)))};
}

Result<Window> read_window(const Node& node, size_t spatial, const Dims& kernel) {
  Window w;
  w.kernel = node.has_attr("kernel_shape") ? node.attr_ints("kernel_shape") : kernel;
  if (w.kernel.size() != spatial) {
    return param_error("kernel has " + std::to_string(w.kernel.size()) + " dims, input has " +
                       std::to_string(spatial) + " spatial dims");
  }
  ASSIGN_OR_RETURN(w.strides, sized_attr(node, "strides", spatial, 1));
  ASSIGN_OR_RETURN(w.dilations, sized_attr(node, "dilations", spatial, 1));
  ASSIGN_OR_RETURN(Dims pads, sized_attr(node, "pads", 2 * spatial, 0));
  w.pad_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(spatial));
  w.pad_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(spatial), pads.end());
  w.auto_pad = node.attr_string("auto_pad", "NOTSET");
  w.ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  RETURN_IF_ERROR(check_window(w));
  return w;
}

Result<WindowDim> window_dim(const Window& w, size_t i, int64_t in) {
  const int64_t s = w.strides[i];
  const int64_t effective = (w.kernel[i] - 1) * w.dilations[i] + 1;
  WindowDim d;
  if (w.same()) {
    d.out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (d.out - 1) * s + effective - in);
    d.pad_begin = w.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    d.pad_end = total - d.pad_begin;
    return d;
  }
  if (!w.valid()) {
    d.pad_begin = w.pad_begin[i];
    d.pad_end = w.pad_end[i];
  }
  const int64_t span = in + d.pad_begin + d.pad_end - effective;
  if (span < 0) {
    return param_error("window of size " + std::to_string(effective) + " does not fit input dim " +
                       std::to_string(in) + " with pads " + std::to_string(d.pad_begin) + "+" +
                       std::to_string(d.pad_end));
  }
  if (!w.ceil_mode) {
    d.out = span / s + 1;
    return d;
  }
  d.out = (span + s - 1) / s + 1;
  if ((d.out - 1) * s >= in + d.pad_begin) --d.out;
  return d;
}

std::vector<int64_t> broadcast_map(const Dims& in, const Dims& out) {
  if (in.size() > out.size()) return {};
  const size_t off = out.size() - in.size();
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k] != 1 && in[k] != out[off + k]) return {};
  }
  const int64_t n = num_elements(out);
  std::vector<int64_t> map(std::max<int64_t>(n, 0));
  if (in == out) {
    for (int64_t i = 0; i < n; ++i) map[i] = i;
    return map;
  }
  if (num_elements(in) == 1 || n <= 0) return map;  // all zeros
  // Strides of `in` aligned to the right of `out`, 0 along broadcast dims.
  Dims st(out.size(), 0);
  int64_t stride = 1;
  for (size_t k = in.size(); k-- > 0;) {
    st[off + k] = in[k] == 1 ? 0 : stride;
    stride *= in[k];
  }
  // Walks `out` in row-major order, moving the offset into `in` along with its index.
  Dims idx(out.size(), 0);
  int64_t pos = 0;
  for (int64_t i = 0; i < n; ++i) {
    map[i] = pos;
    for (size_t k = out.size(); k-- > 0;) {
      pos += st[k];
      if (++idx[k] < out[k]) break;
      pos -= st[k] * out[k];
      idx[k] = 0;
    }
  }
  return map;
}

Result<std::vector<int64_t>> col2im_offsets(const Window& w, const Dims& image, int64_t* blocks) {
  const size_t n = image.size();
  Dims out(n);
  int64_t count = 1, kernel = 1;
  for (size_t d = 0; d < n; ++d) {
    ASSIGN_OR_RETURN(WindowDim dim, window_dim(w, d, image[d]));
    out[d] = dim.out;
    count *= dim.out;
    kernel *= w.kernel[d];
  }
  if (static_cast<double>(count) * static_cast<double>(kernel) > static_cast<double>(1 << 24)) {
    return param_error("more than 2^24 column elements");
  }
  *blocks = count;
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(count * kernel));
  for (int64_t k = 0; k < kernel; ++k) {
    for (int64_t b = 0; b < count; ++b) {
      int64_t offset = 0, stride = 1, kr = k, br = b;
      for (size_t e = n; e-- > 0;) {  // row-major: the last dim varies fastest
        const int64_t at =
            (br % out[e]) * w.strides[e] - w.pad_begin[e] + (kr % w.kernel[e]) * w.dilations[e];
        kr /= w.kernel[e];
        br /= out[e];
        if (at < 0 || at >= image[e]) offset = -1;
        if (offset >= 0) offset += at * stride;
        stride *= image[e];
      }
      offsets.push_back(offset);
    }
  }
  return offsets;
}

}  // namespace common

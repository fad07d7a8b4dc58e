#include "shapeonnx/rules_util.h"

#include <algorithm>
#include <limits>
#include <string>

#include "common/eval.h"

namespace shapeonnx {

using common::Dims;
using common::Result;
using common::Status;

void add_rules(RuleTable& table, std::string_view ops, ShapeRule rule) {
  while (!ops.empty()) {
    const size_t space = ops.find(' ');
    const std::string_view op = ops.substr(0, space);
    if (!op.empty()) table.add(op, rule);
    if (space == std::string_view::npos) break;
    ops.remove_prefix(space + 1);
  }
}

Status same_as_input(InferContext& ctx, size_t out, size_t in) {
  ctx.set_output(out, ctx.dtype(in), ctx.shape(in));
  return {};
}

Result<Dims> broadcast_inputs(const InferContext& ctx, size_t first) {
  std::optional<Dims> dims;
  for (size_t i = first; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    if (!dims) {
      dims = ctx.shape(i);
      continue;
    }
    std::optional<Dims> next = common::broadcast_shapes(*dims, ctx.shape(i));
    if (!next) return ctx.error("input shapes do not broadcast");
    dims = std::move(next);
  }
  if (!dims) return ctx.error("no input");
  return *dims;
}

Result<std::vector<int64_t>> known_ints(const InferContext& ctx, size_t i, std::string_view what) {
  if (!ctx.has_input(i))
    return ctx.error(std::string(what) + " (input " + std::to_string(i) + ") is missing");
  const common::Tensor* t = ctx.value(i);
  if (t == nullptr) {
    return ctx.error(std::string(what) + " (input " + std::to_string(i) + ", '" +
                     ctx.node().inputs[i] + "') is not known statically");
  }
  return t->to_int64();
}

Result<std::vector<double>> known_doubles(const InferContext& ctx, size_t i,
                                          std::string_view what) {
  if (!ctx.has_input(i))
    return ctx.error(std::string(what) + " (input " + std::to_string(i) + ") is missing");
  const common::Tensor* t = ctx.value(i);
  if (t == nullptr) {
    return ctx.error(std::string(what) + " (input " + std::to_string(i) + ", '" +
                     ctx.node().inputs[i] + "') is not known statically");
  }
  return t->to_double();
}

Result<std::optional<std::vector<int64_t>>> ints_from_input_or_attr(const InferContext& ctx,
                                                                    size_t i, std::string_view attr,
                                                                    std::string_view what) {
  if (ctx.has_input(i)) {
    ASSIGN_OR_RETURN(std::vector<int64_t> v, known_ints(ctx, i, what));
    return std::optional<std::vector<int64_t>>(std::move(v));
  }
  if (ctx.node().has_attr(attr)) {
    return std::optional<std::vector<int64_t>>(ctx.node().attr_ints(attr));
  }
  return std::optional<std::vector<int64_t>>();
}

Result<std::vector<int64_t>> normalize_axes(const InferContext& ctx,
                                            const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t n, ctx.axis(a, rank));
    if (std::find(out.begin(), out.end(), n) != out.end()) {
      return ctx.error("axis " + std::to_string(a) + " repeated");
    }
    out.push_back(n);
  }
  return out;
}

Result<int64_t> checked_mul(const InferContext& ctx, int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    return ctx.error("dimension " + std::to_string(a) + " * " + std::to_string(b) +
                     " overflows int64");
  }
  return r;
}

Result<int64_t> checked_product(const InferContext& ctx, const Dims& dims, size_t begin,
                                size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) {
    ASSIGN_OR_RETURN(p, checked_mul(ctx, p, dims[i]));
  }
  return p;
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

int64_t ceil_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a > 0) ? q + 1 : q;
}

namespace {

// Attribute `name` of length n, or `fill` repeated when absent.
Result<std::vector<int64_t>> sized_attr(const InferContext& ctx, std::string_view name, size_t n,
                                        int64_t fill) {
  std::vector<int64_t> v = ctx.node().attr_ints(name, std::vector<int64_t>(n, fill));
  if (v.size() != n) {
    return ctx.error("attribute '" + std::string(name) + "' has " + std::to_string(v.size()) +
                     " values, expected " + std::to_string(n));
  }
  return v;
}

}  // namespace

Result<Window> read_window(const InferContext& ctx, size_t spatial,
                           const std::vector<int64_t>& kernel) {
  Window w;
  const common::Node& node = ctx.node();
  w.kernel = node.has_attr("kernel_shape") ? node.attr_ints("kernel_shape") : kernel;
  if (w.kernel.size() != spatial) {
    return ctx.error("kernel has " + std::to_string(w.kernel.size()) + " dims, input has " +
                     std::to_string(spatial) + " spatial dims");
  }
  ASSIGN_OR_RETURN(w.strides, sized_attr(ctx, "strides", spatial, 1));
  ASSIGN_OR_RETURN(w.dilations, sized_attr(ctx, "dilations", spatial, 1));
  ASSIGN_OR_RETURN(w.pads, sized_attr(ctx, "pads", 2 * spatial, 0));
  w.auto_pad = node.attr_string("auto_pad", "NOTSET");
  w.ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  if (w.auto_pad != "NOTSET" && w.auto_pad != "SAME_UPPER" && w.auto_pad != "SAME_LOWER" &&
      w.auto_pad != "VALID") {
    return ctx.error("unknown auto_pad '" + w.auto_pad + "'");
  }
  // Windows and padding beyond 2^24 per axis are malformed, not models (and their extents would
  // overflow the arithmetic below).
  constexpr int64_t kMaxWindow = int64_t{1} << 24;
  for (size_t i = 0; i < spatial; ++i) {
    if (w.kernel[i] < 1 || w.strides[i] < 1 || w.dilations[i] < 1) {
      return ctx.error("kernel, strides and dilations must be positive");
    }
    if (w.kernel[i] > kMaxWindow || w.strides[i] > kMaxWindow || w.dilations[i] > kMaxWindow) {
      return ctx.error("kernel, strides or dilations larger than 2^24");
    }
  }
  for (int64_t p : w.pads) {
    if (p < 0) return ctx.error("negative pads");
    if (p > kMaxWindow) return ctx.error("pads larger than 2^24");
  }
  return w;
}

// ONNX: out = floor((in + pad_begin + pad_end - ((k - 1) * d + 1)) / s) + 1 (ceil with ceil_mode);
// SAME_*: out = ceil(in / s); VALID: no padding. With ceil_mode, a last window that would start in
// the end padding is dropped (as onnxruntime and PyTorch do).
Result<int64_t> window_output(const InferContext& ctx, const Window& w, size_t i, int64_t in) {
  const int64_t s = w.strides[i];
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") return ceil_div(in, s);
  const size_t n = w.kernel.size();
  const bool valid = w.auto_pad == "VALID";
  const int64_t begin = valid ? 0 : w.pads[i];
  const int64_t end = valid ? 0 : w.pads[i + n];
  const int64_t effective = (w.kernel[i] - 1) * w.dilations[i] + 1;
  const int64_t span = in + begin + end - effective;
  if (span < 0) {
    return ctx.error("window of size " + std::to_string(effective) + " does not fit input dim " +
                     std::to_string(in) + " with pads " + std::to_string(begin) + "+" +
                     std::to_string(end));
  }
  if (!w.ceil_mode) return span / s + 1;
  int64_t out = ceil_div(span, s) + 1;
  if ((out - 1) * s >= in + begin) --out;
  return out;
}

}  // namespace shapeonnx

// MaxPool (with its Indices output), AveragePool, LpPool (torch's native padding when it matches,
// else explicit F.pad), and the global pools; MaxUnpool is in pool_unpool.cc.
#include <algorithm>
#include <cmath>
#include <string>

#include "common/op_params.h"
#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::Status;

struct Pool {
  std::vector<int64_t> kernel, strides, dilations, begin, end, in, out;
  bool ceil_mode = false;
};

common::Result<Pool> pool_geometry(Context& ctx) {
  const common::Node& node = ctx.node();
  const size_t n = node.attr_ints("kernel_shape").size();
  if (n == 0 || n > 3 || ctx.rank(0) != static_cast<int64_t>(n) + 2) {
    return ctx.error("only 1-D, 2-D and 3-D pooling is supported");
  }
  common::Result<common::Window> read = common::read_window(node, n);
  if (!read.ok()) return ctx.error(read.error().message);
  const common::Window& w = *read;
  Pool p{w.kernel, w.strides, w.dilations, w.pad_begin, w.pad_end, {}, {}, w.ceil_mode};
  p.in.assign(ctx.shape(0).begin() + 2, ctx.shape(0).end());
  p.out.assign(ctx.out_shape().begin() + 2, ctx.out_shape().end());
  if (w.auto_pad == "NOTSET") return p;
  for (size_t d = 0; d < n; ++d) {  // VALID and SAME_* resolved to explicit pads
    common::Result<common::WindowDim> dim = common::window_dim(w, d, p.in[d]);
    if (!dim.ok()) return ctx.error(dim.error().message);
    p.begin[d] = dim->pad_begin;
    p.end[d] = dim->pad_end;
  }
  return p;
}

// True when torch's own symmetric padding and output-size rule give ONNX's output.
bool native_ok(const Pool& p) {
  if (p.begin != p.end) return false;
  for (size_t d = 0; d < p.kernel.size(); ++d) {
    const int64_t eff = (p.kernel[d] - 1) * p.dilations[d] + 1;
    // torch 1.13 limits padding by the undilated kernel size (later versions by the dilated one).
    if (2 * p.begin[d] > p.kernel[d]) return false;
    const int64_t span = p.in[d] + 2 * p.begin[d] - eff;
    int64_t out =
        (p.ceil_mode ? (span + p.strides[d] - 1) / p.strides[d] : span / p.strides[d]) + 1;
    if (p.ceil_mode && (out - 1) * p.strides[d] >= p.in[d] + p.begin[d]) --out;
    if (out != p.out[d]) return false;
  }
  return true;
}

// Right padding so that `out` windows fit exactly without ceil_mode.
std::vector<int64_t> explicit_end(const Pool& p) {
  std::vector<int64_t> end;
  for (size_t d = 0; d < p.kernel.size(); ++d) {
    const int64_t extent = (p.out[d] - 1) * p.strides[d] + (p.kernel[d] - 1) * p.dilations[d] + 1;
    end.push_back(extent - p.in[d] - p.begin[d]);
  }
  return end;
}

py::Expr pads_arg(const std::vector<int64_t>& begin, const std::vector<int64_t>& end) {
  std::vector<int64_t> out;
  for (size_t d = begin.size(); d-- > 0;) {
    out.push_back(begin[d]);
    out.push_back(end[d]);
  }
  return py::tuple(py::ints(out));
}

bool all_equal(const std::vector<int64_t>& values, int64_t v) {
  return std::all_of(values.begin(), values.end(), [v](int64_t x) { return x == v; });
}

// The F.max_poolNd call; `x` is the (cast) input and `extra` more keyword arguments.
py::Expr ints_arg(const std::vector<int64_t>& values) { return py::lit(int_or_tuple(values)); }

py::Expr keep_dims() { return py::lit("True"); }

// The F.max_poolNd call; `x` is the (cast) input and `extra` more keyword arguments.
py::Expr max_pool_call(const Pool& p, bool native, py::Expr x, std::vector<py::Keyword> extra) {
  const size_t n = p.kernel.size();
  if (!native) {
    py::Expr inf = py::unary("-", py::call(py::Expr::name("float"), {py::str_lit("inf")}));
    x = py::call(py::fn("pad"), {x, pads_arg(p.begin, explicit_end(p))}, {{"value", inf}});
  }
  std::vector<py::Keyword> kw;
  if (p.strides != p.kernel) kw.push_back({"stride", ints_arg(p.strides)});
  if (native && !all_equal(p.begin, 0)) kw.push_back({"padding", ints_arg(p.begin)});
  if (!all_equal(p.dilations, 1)) kw.push_back({"dilation", ints_arg(p.dilations)});
  if (native && p.ceil_mode) kw.push_back({"ceil_mode", py::lit("True")});
  kw.insert(kw.end(), extra.begin(), extra.end());
  return py::call(py::fn("max_pool" + std::to_string(n) + "d"), {x, ints_arg(p.kernel)},
                  std::move(kw));
}

// ONNX's Indices output: the flat index into the whole input (N, C, spatial), spatial dims
// row-major or, with storage_order 1, column-major. torch returns the row-major index within
// each (n, c) plane of the input it pooled; positions on an explicitly padded plane, or
// column-major order, go through a constant table to the plane index, and the plane's start
// (n * C + c) * plane is added.
py::Expr max_pool_indices(Context& ctx, const Pool& p, bool native, const py::Expr& x) {
  const size_t n = p.kernel.size();
  const bool column_major = ctx.node().attr_int("storage_order", 0) != 0;
  py::Expr expr = max_pool_call(p, native, x, {{"return_indices", py::lit("True")}})[py::lit(1)];
  std::vector<int64_t> padded = p.in;
  if (!native) {
    const std::vector<int64_t> end = explicit_end(p);
    for (size_t d = 0; d < n; ++d) padded[d] += p.begin[d] + end[d];
  }
  if (!native || column_major) {
    std::vector<int64_t> stride(n, 1);  // of the ONNX plane index per spatial dim
    for (size_t d = 1; d < n; ++d) {
      if (column_major) {
        stride[d] = stride[d - 1] * p.in[d - 1];
      } else {
        stride[n - 1 - d] = stride[n - d] * p.in[n - d];
      }
    }
    int64_t size = 1;
    for (int64_t v : padded) size *= v;
    std::vector<int64_t> table(size, 0);
    for (int64_t i = 0; i < size; ++i) {
      for (int64_t d = static_cast<int64_t>(n) - 1, rest = i; d >= 0; --d) {
        const int64_t at = native ? rest % padded[d] : rest % padded[d] - p.begin[d];
        table[i] += std::clamp<int64_t>(at, 0, p.in[d] - 1) * stride[d];
        rest /= padded[d];
      }
    }
    expr =
        py::Expr::name(ctx.buffer(common::Tensor::from_int64(table, {size}), "pool_index"))[expr];
  }
  const common::Dims& shape = ctx.shape(0);
  const bool batched = ctx.batched(0);
  if (shape[0] * shape[1] == 1 && !batched) return expr;
  int64_t plane = 1;
  for (int64_t v : p.in) plane *= v;
  const py::Expr in = py::Expr::name(ctx.in(0));
  const py::Expr total = batched ? in.method("numel") : py::lit(shape[0] * shape[1] * plane);
  std::vector<int64_t> dims{batched ? -1 : shape[0], shape[1]};
  dims.resize(n + 2, 1);
  py::Expr starts = py::call(py::torch("arange"), {py::lit(0), total, py::lit(plane)},
                             {{"device", in.attr("device")}});
  return py::binary("+", expr, starts.method("reshape", py::ints(dims)));
}

// torch 1.13's CPU max_pool2d runs a scalar loop per plane on NCHW tensors and vectorizes over
// the channels on channels-last ones: 24 channels of 32x32 take 230 us against 20 us plus a 5 us
// copy (cctsdb_yolo), while small inputs or few channels gain nothing. Such inputs are copied
// into channels-last strides first; a permuted copy, since vmap has no
// `.contiguous(memory_format=...)`. Later elementwise ops and convolutions keep the strides.
bool pool_channels_last(const Context& ctx, const Pool& p, bool native) {
  const common::Dims& in = ctx.shape(0);
  if (p.kernel.size() != 2 || !native || ctx.output_used(1) || in[1] < 16) return false;
  return in[1] * in[2] * in[3] >= 16384;
}

Status max_pool(Context& ctx) {
  ASSIGN_OR_RETURN(Pool p, pool_geometry(ctx));
  const bool native = native_ok(p);
  py::Expr x = py::Expr::name(ctx.in(0));
  // torch pools floating types only; float64 holds every int32/uint8/int8 value exactly.
  const bool integer = !common::is_floating(ctx.dtype(0));
  if (integer) x = x.method("to", {py::torch("float64")});
  if (pool_channels_last(ctx, p, native)) {
    py::Expr nhwc = x.method("permute", py::ints({0, 2, 3, 1}))
                        .method("contiguous")
                        .method("permute", py::ints({0, 3, 1, 2}));
    x = py::Expr::name(ctx.local(nhwc, "channels_last"));
  }
  py::Expr expr = max_pool_call(p, native, x, {});
  if (integer) expr = cast_to_output(ctx, expr, common::DType::kDouble);
  if (!ctx.output_used(1)) return ctx.emit(expr, "max_pool", ctx.batched(0));
  py::Expr values = ctx.output_used(0) ? expr : py::Expr::name("None");
  ctx.emit_tuple(py::tuple({values, max_pool_indices(ctx, p, native, x)}), "max_pool",
                 ctx.batched(0));
  return {};
}

// Per-output-position factor kernel_size / (window elements inside the input), for
// count_include_pad=0 on explicitly padded input.
common::Tensor avg_correction(const Pool& p) {
  std::vector<std::vector<double>> per_dim;
  for (size_t d = 0; d < p.kernel.size(); ++d) {
    std::vector<double> f;
    for (int64_t j = 0; j < p.out[d]; ++j) {
      const int64_t start = j * p.strides[d] - p.begin[d];
      int64_t count = 0;
      for (int64_t k = 0; k < p.kernel[d]; ++k) count += start + k >= 0 && start + k < p.in[d];
      f.push_back(count ? static_cast<double>(p.kernel[d]) / count : 0.0);
    }
    per_dim.push_back(std::move(f));
  }
  std::vector<double> values{1.0};
  for (const auto& f : per_dim) {
    std::vector<double> next;
    for (double v : values) {
      for (double x : f) next.push_back(v * x);
    }
    values = std::move(next);
  }
  return common::Tensor::from_double(values, p.out, common::DType::kFloat);
}

py::Expr lp_window_sums(Context& ctx, const Pool& p, const py::Expr& powered);

// Per output position, the window positions that count: those inside the input, or with
// count_include_pad inside the input and its declared pads (not the positions past them that
// ceil_mode adds, as onnxruntime and PyTorch count).
std::vector<double> window_counts(const Pool& p, bool include_pad) {
  std::vector<double> values{1.0};
  for (size_t d = 0; d < p.kernel.size(); ++d) {
    const int64_t lo = include_pad ? -p.begin[d] : 0, hi = p.in[d] + (include_pad ? p.end[d] : 0);
    std::vector<double> next;
    for (double v : values) {
      for (int64_t j = 0; j < p.out[d]; ++j) {
        int64_t count = 0;
        for (int64_t k = 0; k < p.kernel[d]; ++k) {
          const int64_t at = j * p.strides[d] - p.begin[d] + k * p.dilations[d];
          count += at >= lo && at < hi;
        }
        next.push_back(v * static_cast<double>(count));
      }
    }
    values = std::move(next);
  }
  return values;
}

// Dilated AveragePool (opset 19), which torch's avg_pool lacks: window sums through a grouped
// convolution with a ones kernel, divided by each window's count.
Status dilated_average_pool(Context& ctx, const Pool& p) {
  if (!common::is_floating(ctx.dtype(0))) return ctx.error("AveragePool needs a float input");
  double positions = 1;
  for (const int64_t o : p.out) positions *= static_cast<double>(o);
  if (positions > static_cast<double>(1 << 24)) {
    return ctx.error("more than 2^24 output positions to divide");
  }
  const bool include_pad = ctx.node().attr_int("count_include_pad", 0) != 0;
  const std::vector<double> v = window_counts(p, include_pad);
  py::Expr divisor;
  if (std::all_of(v.begin(), v.end(), [&](double c) { return c == v[0]; })) {
    divisor = py::lit(static_cast<int64_t>(v[0]));
  } else {
    divisor = py::Expr::name(
        ctx.buffer(common::Tensor::from_double(v, p.out, ctx.dtype(0)), "pool_count"));
  }
  // Dilated, the sums are one F.convNd call.
  py::Expr sums = lp_window_sums(ctx, p, py::Expr::name(ctx.in(0)));
  return ctx.emit(py::binary("/", sums, divisor), "avg_pool", ctx.batched(0));
}

Status average_pool(Context& ctx) {
  ASSIGN_OR_RETURN(Pool p, pool_geometry(ctx));
  const size_t n = p.kernel.size();
  if (!all_equal(p.dilations, 1)) return dilated_average_pool(ctx, p);
  const bool include_pad = ctx.node().attr_int("count_include_pad", 0) != 0;
  const bool native = native_ok(p);
  const bool padded = !all_equal(p.begin, 0);
  py::Expr x = py::Expr::name(ctx.in(0));
  if (!native) x = py::call(py::fn("pad"), {x, pads_arg(p.begin, explicit_end(p))});
  std::vector<py::Keyword> kw;
  if (p.strides != p.kernel) kw.push_back({"stride", ints_arg(p.strides)});
  if (native && padded) kw.push_back({"padding", ints_arg(p.begin)});
  if (native && p.ceil_mode) kw.push_back({"ceil_mode", py::lit("True")});
  if (native && padded && !include_pad) kw.push_back({"count_include_pad", py::lit("False")});
  py::Expr expr =
      py::call(py::fn("avg_pool" + std::to_string(n) + "d"), {x, ints_arg(p.kernel)}, kw);
  if (!native && !include_pad) {
    // The correction is a buffer of one factor per output position: past 2^24 of them (64 MB)
    // the shape is a damaged model's (a declared 2^31 dim took 22 GB here before this check).
    double positions = 1;
    for (const int64_t o : p.out) positions *= static_cast<double>(o);
    if (positions > static_cast<double>(1 << 24)) {
      return ctx.error("more than 2^24 output positions to correct for padding");
    }
    common::Tensor scale = avg_correction(p);
    const auto v = scale.span<float>();
    if (std::any_of(v.begin(), v.end(), [](float f) { return f != 1.0f; })) {
      expr = py::binary("*", expr, py::Expr::name(ctx.buffer(std::move(scale), "pool_scale")));
    }
  }
  return ctx.emit(expr, "avg_pool", ctx.batched(0));
}

Status global_pool(Context& ctx) {
  std::vector<int64_t> dims;
  for (int64_t d = 2; d < ctx.rank(0); ++d) dims.push_back(d);
  const bool is_max = ctx.node().op_type == "GlobalMaxPool";
  py::Expr expr = py::Expr::name(ctx.in(0)).method(
      is_max ? "amax" : "mean", {py::tuple(py::ints(dims))}, {{"keepdim", keep_dims()}});
  return ctx.emit(expr, is_max ? "max_pool" : "avg_pool", ctx.batched(0));
}

// LpPool's p as a Python number ("2", or "1.5" for LpPool-1's float attribute).
std::string lp_order(float p) {
  return p == std::floor(p) ? std::to_string(static_cast<int64_t>(p)) : py_float(p);
}

// The window sums of |x|^p: avg_pool times the window size (padding adds zeros, and explicit
// padding makes every window full), or a grouped convolution with a ones kernel when dilated.
py::Expr lp_window_sums(Context& ctx, const Pool& p, const py::Expr& powered) {
  const size_t n = p.kernel.size();
  // With ceil_mode, torch's avg_pool divides windows that run past the padding by less.
  const std::vector<int64_t> end = explicit_end(p);
  const bool native = native_ok(p) && (!p.ceil_mode || end == p.end);
  const bool unpadded = all_equal(p.begin, 0) && all_equal(end, 0);
  const py::Expr x =
      native || unpadded ? powered : py::call(py::fn("pad"), {powered, pads_arg(p.begin, end)});
  const bool padding = native && !all_equal(p.begin, 0);
  int64_t size = 1;
  for (int64_t k : p.kernel) size *= k;
  std::vector<py::Keyword> kw;
  if (all_equal(p.dilations, 1)) {
    if (p.strides != p.kernel) kw.push_back({"stride", ints_arg(p.strides)});
    if (padding) kw.push_back({"padding", ints_arg(p.begin)});
    py::Expr avg =
        py::call(py::fn("avg_pool" + std::to_string(n) + "d"), {x, ints_arg(p.kernel)}, kw);
    return py::binary("*", avg, py::lit(size));
  }
  const int64_t channels = ctx.shape(0)[1];
  common::Dims dims{channels, 1};
  for (int64_t k : p.kernel) dims.push_back(k);
  const py::Expr ones = py::Expr::name(ctx.buffer(
      common::Tensor::from_double(std::vector<double>(channels * size, 1.0), dims, ctx.dtype(0)),
      "ones"));
  if (!all_equal(p.strides, 1)) kw.push_back({"stride", ints_arg(p.strides)});
  if (padding) kw.push_back({"padding", ints_arg(p.begin)});
  kw.push_back({"dilation", ints_arg(p.dilations)});
  kw.push_back({"groups", py::lit(channels)});
  return py::call(py::fn("conv" + std::to_string(n) + "d"), {x, ones}, std::move(kw));
}

// LpPool: (sum over the window of |x|^p)^(1/p); padded positions add nothing.
Status lp_pool(Context& ctx) {
  ASSIGN_OR_RETURN(Pool p, pool_geometry(ctx));
  if (!common::is_floating(ctx.dtype(0))) return ctx.error("LpPool needs a float input");
  const float order = ctx.node().attr_float("p", 2.0f);
  if (!(order > 0)) return ctx.error("p must be positive");
  const py::Expr q = py::lit(lp_order(order));
  const py::Expr x = py::Expr::name(ctx.in(0));
  const bool even = order == std::floor(order) && static_cast<int64_t>(order) % 2 == 0;
  const py::Expr powered =
      order == 1 ? x.method("abs") : (even ? x : x.method("abs")).method("pow", {q});
  py::Expr sums = lp_window_sums(ctx, p, powered);
  // A product (the avg_pool form) is parenthesized by the printer before the method.
  if (order != 1) {
    sums = order == 2 ? sums.method("sqrt") : sums.method("pow", {py::binary("/", py::lit(1), q)});
  }
  return ctx.emit(sums, "lp_pool", ctx.batched(0));
}

Status global_lp_pool(Context& ctx) {
  if (!common::is_floating(ctx.dtype(0))) return ctx.error("GlobalLpPool needs a float input");
  std::vector<int64_t> dims;
  for (int64_t d = 2; d < ctx.rank(0); ++d) dims.push_back(d);
  const py::Expr q = py::lit(lp_order(ctx.node().attr_float("p", 2.0f)));
  py::Expr norm = py::call(py::torch("linalg.vector_norm"), {py::Expr::name(ctx.in(0)), q},
                           {{"dim", py::tuple(py::ints(dims))}, {"keepdim", keep_dims()}});
  return ctx.emit(norm, "lp_pool", ctx.batched(0));
}

}  // namespace

void register_pool_unpool(HandlerRegistry& t);  // MaxUnpool (pool_unpool.cc)

void register_pool(HandlerRegistry& t) {
  t.add("MaxPool", max_pool);
  t.add("AveragePool", average_pool);
  t.add("GlobalAveragePool", global_pool);
  t.add("GlobalMaxPool", global_pool);
  t.add("LpPool", lp_pool);
  t.add("GlobalLpPool", global_lp_pool);
  register_pool_unpool(t);
}

}  // namespace torchonnx

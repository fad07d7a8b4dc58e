// MaxPool, AveragePool (torch's native padding when it matches, else explicit F.pad), and the
// global pools.
#include <algorithm>
#include <string>

#include "torchonnx/context.h"
#include "torchonnx/ops_util.h"
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
  Pool p;
  p.kernel = node.attr_ints("kernel_shape");
  const size_t n = p.kernel.size();
  if (n == 0 || n > 3 || ctx.rank(0) != static_cast<int64_t>(n) + 2) {
    return ctx.error("only 1-D, 2-D and 3-D pooling is supported");
  }
  p.strides = node.attr_ints("strides", std::vector<int64_t>(n, 1));
  p.dilations = node.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (p.strides.size() != n || p.dilations.size() != n || pads.size() != 2 * n) {
    return ctx.error("strides, dilations or pads do not match kernel_shape");
  }
  p.begin.assign(pads.begin(), pads.begin() + n);
  p.end.assign(pads.begin() + n, pads.end());
  p.ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  p.in.assign(ctx.shape(0).begin() + 2, ctx.shape(0).end());
  p.out.assign(ctx.out_shape().begin() + 2, ctx.out_shape().end());
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "VALID") p.begin = p.end = std::vector<int64_t>(n, 0);
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t d = 0; d < n; ++d) {
      const int64_t out = (p.in[d] + p.strides[d] - 1) / p.strides[d];
      const int64_t total = std::max<int64_t>(
          0, (out - 1) * p.strides[d] + (p.kernel[d] - 1) * p.dilations[d] + 1 - p.in[d]);
      p.begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      p.end[d] = total - p.begin[d];
    }
  }
  return p;
}

// True when torch's own symmetric padding and output-size rule give ONNX's output.
bool native_ok(const Pool& p) {
  if (p.begin != p.end) return false;
  for (size_t d = 0; d < p.kernel.size(); ++d) {
    const int64_t eff = (p.kernel[d] - 1) * p.dilations[d] + 1;
    if (2 * p.begin[d] > eff) return false;
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

std::string pads_arg(const std::vector<int64_t>& begin, const std::vector<int64_t>& end) {
  std::vector<int64_t> out;
  for (size_t d = begin.size(); d-- > 0;) {
    out.push_back(begin[d]);
    out.push_back(end[d]);
  }
  return py_tuple(out);
}

Status max_pool(Context& ctx) {
  ASSIGN_OR_RETURN(Pool p, pool_geometry(ctx));
  const size_t n = p.kernel.size();
  const bool native = native_ok(p);
  std::string x = ctx.in(0);
  // torch pools floating types only; float64 holds every int32/uint8/int8 value exactly.
  const bool integer = !common::is_floating(ctx.dtype(0));
  if (integer) x += ".to(torch.float64)";
  if (!native)
    x = "F.pad(" + x + ", " + pads_arg(p.begin, explicit_end(p)) + ", value=-float(\"inf\"))";
  std::string expr = "F.max_pool" + std::to_string(n) + "d(" + x + ", " + int_or_tuple(p.kernel);
  if (p.strides != p.kernel) expr += ", stride=" + int_or_tuple(p.strides);
  if (native && p.begin != std::vector<int64_t>(n, 0)) expr += ", padding=" + int_or_tuple(p.begin);
  if (p.dilations != std::vector<int64_t>(n, 1)) expr += ", dilation=" + int_or_tuple(p.dilations);
  if (native && p.ceil_mode) expr += ", ceil_mode=True";
  expr += ")";
  if (integer) expr = cast_to_output(ctx, expr, common::DType::kDouble);
  return ctx.emit(expr, "max_pool", ctx.batched(0));
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

Status average_pool(Context& ctx) {
  ASSIGN_OR_RETURN(Pool p, pool_geometry(ctx));
  const size_t n = p.kernel.size();
  if (p.dilations != std::vector<int64_t>(n, 1)) return ctx.error("dilated AveragePool");
  const bool include_pad = ctx.node().attr_int("count_include_pad", 0) != 0;
  const bool native = native_ok(p);
  const bool padded = p.begin != std::vector<int64_t>(n, 0);
  std::string x = ctx.in(0);
  if (!native) x = "F.pad(" + x + ", " + pads_arg(p.begin, explicit_end(p)) + ")";
  std::string expr = "F.avg_pool" + std::to_string(n) + "d(" + x + ", " + int_or_tuple(p.kernel);
  if (p.strides != p.kernel) expr += ", stride=" + int_or_tuple(p.strides);
  if (native && padded) expr += ", padding=" + int_or_tuple(p.begin);
  if (native && p.ceil_mode) expr += ", ceil_mode=True";
  if (native && padded && !include_pad) expr += ", count_include_pad=False";
  expr += ")";
  if (!native && !include_pad) {
    common::Tensor scale = avg_correction(p);
    const auto v = scale.span<float>();
    if (std::any_of(v.begin(), v.end(), [](float f) { return f != 1.0f; })) {
      expr += " * " + ctx.buffer(std::move(scale), "pool_scale");
    }
  }
  return ctx.emit(expr, "avg_pool", ctx.batched(0));
}

Status global_pool(Context& ctx) {
  std::vector<int64_t> dims;
  for (int64_t d = 2; d < ctx.rank(0); ++d) dims.push_back(d);
  const bool is_max = ctx.node().op_type == "GlobalMaxPool";
  const std::string fn = is_max ? ".amax(" : ".mean(";
  return ctx.emit(ctx.in(0) + fn + py_tuple(dims) + ", keepdim=True)",
                  is_max ? "max_pool" : "avg_pool", ctx.batched(0));
}

}  // namespace

void register_pool(HandlerTable& t) {
  t.add("MaxPool", max_pool);
  t.add("AveragePool", average_pool);
  t.add("GlobalAveragePool", global_pool);
  t.add("GlobalMaxPool", global_pool);
}

}  // namespace torchonnx

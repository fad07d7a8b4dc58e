// Quantization ops: QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear as arithmetic,
// and the integer and QLinear forms of MatMul and Conv.
//
// Integer accumulation is done in float64: it holds every product and sum of 8-bit values
// exactly and runs on any device (torch has no integer matmul or convolution on CUDA). Results
// are rounded half to even (torch.round) and saturated with torch.clamp, as ONNX specifies.
// Scales divide as tensors, never as Python numbers: CUDA multiplies by the reciprocal of a
// Python number, which can move a value across a rounding boundary.
#include <algorithm>
#include <string>
#include <vector>

#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::Dims;
using common::DType;
using common::Status;
using common::Tensor;

struct Range {
  int64_t lo, hi;
};

// The values of a quantized element type; false for types torch cannot hold.
bool quant_range(DType t, Range* r) {
  switch (t) {
    case DType::kUInt8:
      *r = {0, 255};
      return true;
    case DType::kInt8:
      *r = {-128, 127};
      return true;
    case DType::kInt16:
      *r = {-32768, 32767};
      return true;
    default:
      return false;
  }
}

// `expr` rounded, shifted by `zero_point` (may be empty), saturated and cast to `type`.
std::string requantize(const std::string& expr, const std::string& zero_point, DType type) {
  Range r{};
  quant_range(type, &r);
  std::string q = "torch.round(" + expr + ")";
  if (!zero_point.empty())
    q += zero_point[0] == '-' ? " - " + zero_point.substr(1) : " + " + zero_point;
  return "torch.clamp(" + q + ", " + std::to_string(r.lo) + ", " + std::to_string(r.hi) + ").to(" +
         *torch_dtype(type) + ")";
}

// `expr` minus `zero_point` (which may be empty or a negative Python int).
std::string minus(std::string expr, const std::string& zero_point) {
  if (zero_point.empty()) return expr;
  return expr + (zero_point[0] == '-' ? " + " + zero_point.substr(1) : " - " + zero_point);
}

// Input i (a scale or zero point) shaped to broadcast against a rank-`rank` tensor: a vector of
// several values lies along `axis`, with trailing unit dims; one value stays a tensor of at most
// that rank; an input of rank > 1 is already shaped (MatMulInteger's N-D zero points). A
// constant becomes a buffer named `hint`, in that shape.
std::string along_axis(Context& ctx, size_t i, int64_t axis, int64_t rank, std::string_view hint) {
  const Dims& s = ctx.shape(i);
  const int64_t n = common::num_elements(s);
  Dims dims = s;
  if (s.size() == 1 && n != 1) dims.insert(dims.end(), std::max<int64_t>(0, rank - 1 - axis), 1);
  if (n == 1 && static_cast<int64_t>(s.size()) > rank) dims.clear();
  if (const Tensor* c = ctx.constant(i)) return ctx.buffer(Tensor{c->dtype, dims, c->raw}, hint);
  return dims == s ? ctx.in(i) : ctx.in(i) + ".reshape" + py_tuple(dims);
}

// Zero point input i against a rank-`rank` tensor: empty when absent or all zeros, a Python int
// when it is one constant value, else along_axis.
std::string zero_point(Context& ctx, size_t i, int64_t axis, int64_t rank) {
  if (!ctx.has_input(i)) return "";
  if (const Tensor* c = ctx.constant(i)) {
    const std::vector<int64_t> v = c->to_int64();
    if (std::all_of(v.begin(), v.end(), [](int64_t z) { return z == 0; })) return "";
    if (v.size() == 1) return std::to_string(v[0]);
  }
  return along_axis(ctx, i, axis, rank, "zero_point");
}

// The output type when torch can hold it and it is a quantized type.
common::Result<DType> quantized_output(Context& ctx) {
  const DType t = ctx.out_dtype(0);
  Range r{};
  if (!quant_range(t, &r) || !torch_dtype(t).ok()) {
    return ctx.error("quantized type " + std::string(common::dtype_name(t)) +
                     " is not supported (PyTorch has no such type)");
  }
  return t;
}

// The axis of per-axis (De)QuantizeLinear; blocked quantization (opset 21) is not supported.
common::Result<int64_t> quant_axis(Context& ctx) {
  if (ctx.node().attr_int("block_size", 0) != 0) {
    return ctx.error("blocked quantization (block_size) is not supported");
  }
  if (common::num_elements(ctx.shape(1)) == 1) return int64_t{0};
  ASSIGN_OR_RETURN(const int64_t axis, axis_at(ctx, ctx.node().attr_int("axis", 1), ctx.rank(0)));
  return axis;
}

// QuantizeLinear(x, scale, zero_point) -> clamp(round(x / scale) + zero_point).
Status quantize_linear(Context& ctx) {
  ASSIGN_OR_RETURN(DType type, quantized_output(ctx));
  ASSIGN_OR_RETURN(int64_t axis, quant_axis(ctx));
  const int64_t rank = ctx.rank(0);
  const std::string q = ctx.in(0) + " / " + along_axis(ctx, 1, axis, rank, "scale");
  return ctx.emit(
      py::Expr::raw(requantize(q, zero_point(ctx, 2, axis, rank), type), {py::Ns::kTorch}),
      "quantized", ctx.batched(0));
}

// DequantizeLinear(x, scale, zero_point) -> (x - zero_point) * scale, in float32 like ONNX.
Status dequantize_linear(Context& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, quant_axis(ctx));
  const DType out = ctx.out_dtype(0);
  auto type = torch_dtype(out);
  if (!common::is_floating(out) || !type.ok()) return ctx.error("unsupported output type");
  const int64_t rank = ctx.rank(0);
  const std::string zp = zero_point(ctx, 2, axis, rank);
  std::string x = ctx.in(0) + ".float()";
  if (!zp.empty()) x = "(" + minus(x, zp) + ")";
  std::string expr = x + " * " + along_axis(ctx, 1, axis, rank, "scale");
  py::Namespaces uses;  // torch.<dtype> for an output other than float32
  if (out != DType::kFloat) {
    expr = "(" + expr + ").to(" + *type + ")";
    uses.add(py::Ns::kTorch);
  }
  return ctx.emit(py::Expr::raw(expr, uses), "dequantized", ctx.batched(0));
}

// DynamicQuantizeLinear: uint8 over the range of x widened to include 0. One statement binds
// the three outputs, so the scale and zero point are spelled out where they are used.
Status dynamic_quantize_linear(Context& ctx) {
  const std::string x = ctx.in(0);
  const std::string lo = x + ".min().clamp(max=0)";
  const std::string scale = "(" + x + ".max().clamp(min=0) - " + lo + ") / 255";
  const std::string zp = "torch.round(-" + lo + " / (" + scale + ")).clamp(0, 255)";
  const std::string y = requantize(x + " / (" + scale + ")", zp, DType::kUInt8);
  ctx.emit_tuple(
      py::Expr::raw("(" + y + ", " + scale + ", " + zp + ".to(torch.uint8))", {py::Ns::kTorch}),
      "quantized", ctx.batched(0));
  return {};
}

// An integer operand minus its zero point, in float64.
std::string shifted(Context& ctx, size_t x, size_t zp, int64_t axis, std::string_view hint) {
  const Tensor* c = ctx.constant(x);
  const std::string operand = c ? ctx.buffer(*c, hint) : ctx.in(x);
  return minus(operand + ".double()", zero_point(ctx, zp, axis, ctx.rank(x)));
}

bool matmul_batched(const Context& ctx, size_t b) {
  const size_t out_rank = ctx.out_shape().size();
  return (ctx.batched(0) && ctx.rank(0) >= 2 && static_cast<size_t>(ctx.rank(0)) == out_rank) ||
         (ctx.batched(b) && ctx.rank(b) >= 3 && static_cast<size_t>(ctx.rank(b)) == out_rank);
}

// torch.matmul of a [.., M, K] and b [.., K, N] minus their zero points (a's may be per row,
// b's per column).
std::string integer_matmul(Context& ctx, size_t a, size_t a_zp, size_t b, size_t b_zp) {
  return "torch.matmul(" + shifted(ctx, a, a_zp, ctx.rank(a) - 2, "a") + ", " +
         shifted(ctx, b, b_zp, ctx.rank(b) - 1, "weight") + ")";
}

Status matmul_integer(Context& ctx) {
  return ctx.emit(
      py::Expr::raw(integer_matmul(ctx, 0, 2, 1, 3) + ".to(torch.int32)", {py::Ns::kTorch}),
      "matmul", matmul_batched(ctx, 1));
}

// QLinearMatMul: the integer product scaled by a_scale * b_scale / y_scale, requantized.
Status qlinear_matmul(Context& ctx) {
  ASSIGN_OR_RETURN(DType type, quantized_output(ctx));
  const int64_t out_rank = static_cast<int64_t>(ctx.out_shape().size());
  const std::string scale = along_axis(ctx, 1, out_rank - 2, out_rank, "a_scale") + " * " +
                            along_axis(ctx, 4, out_rank - 1, out_rank, "b_scale") + " / " +
                            along_axis(ctx, 6, 0, out_rank, "y_scale");
  const std::string acc = integer_matmul(ctx, 0, 2, 3, 5) + " * (" + scale + ")";
  return ctx.emit(
      py::Expr::raw(requantize(acc, zero_point(ctx, 7, 0, out_rank), type), {py::Ns::kTorch}),
      "matmul", matmul_batched(ctx, 3));
}

// The geometry of the Conv-like node with data input x and weight input w.
common::Result<ConvGeometry> conv_geometry(Context& ctx, size_t x, size_t w) {
  const Dims& xs = ctx.shape(x);
  const Dims& ws = ctx.shape(w);
  if (ws.size() < 3 || ws.size() > 5 || xs.size() != ws.size()) {
    return ctx.error("only 1-D, 2-D and 3-D convolutions are supported");
  }
  return conv_geometry(ctx, std::vector<int64_t>(ws.begin() + 2, ws.end()),
                       std::vector<int64_t>(xs.begin() + 2, xs.end()), false);
}

// F.convNd of float64 operands; asymmetric padding pads x first (with zeros: x is already
// shifted by its zero point).
std::string conv_call(const ConvGeometry& g, std::string x, const std::string& w,
                      const std::string& bias) {
  const size_t n = g.strides.size();
  const std::vector<int64_t> ones(n, 1), zeros(n, 0);
  std::string kwargs;
  if (g.begin != g.end) {
    std::vector<int64_t> pads;
    for (size_t d = n; d-- > 0;) {
      pads.push_back(g.begin[d]);
      pads.push_back(g.end[d]);
    }
    x = "F.pad(" + x + ", " + py_tuple(pads) + ")";
  } else if (g.begin != zeros) {
    kwargs += ", padding=" + py_tuple(g.begin);
  }
  if (g.strides != ones) kwargs = ", stride=" + py_tuple(g.strides) + kwargs;
  if (g.dilations != ones) kwargs += ", dilation=" + py_tuple(g.dilations);
  if (g.group != 1) kwargs += ", groups=" + std::to_string(g.group);
  return "F.conv" + std::to_string(n) + "d(" + x + ", " + w + (bias.empty() ? "" : ", " + bias) +
         kwargs + ")";
}

// ConvInteger(x, w, x_zero_point, w_zero_point): w's zero point may be per output channel.
Status conv_integer(Context& ctx) {
  ASSIGN_OR_RETURN(ConvGeometry g, conv_geometry(ctx, 0, 1));
  const std::string acc =
      conv_call(g, shifted(ctx, 0, 2, 1, "x"), shifted(ctx, 1, 3, 0, "weight"), "");
  return ctx.emit(py::Expr::raw(acc + ".to(torch.int32)", {py::Ns::kTorch, py::Ns::kF}), "conv",
                  ctx.batched(0));
}

// QLinearConv: the integer convolution plus the int32 bias (whose scale is x_scale * w_scale),
// scaled by x_scale * w_scale / y_scale (w_scale may be per output channel), requantized.
Status qlinear_conv(Context& ctx) {
  ASSIGN_OR_RETURN(ConvGeometry g, conv_geometry(ctx, 0, 3));
  ASSIGN_OR_RETURN(DType type, quantized_output(ctx));
  const int64_t rank = ctx.rank(0);
  const common::Tensor* b = ctx.has_input(8) ? ctx.constant(8) : nullptr;
  const std::string bias =
      !ctx.has_input(8) ? "" : (b ? ctx.buffer(*b, "bias") : ctx.in(8)) + ".double()";
  const std::string acc =
      conv_call(g, shifted(ctx, 0, 2, 1, "x"), shifted(ctx, 3, 5, 0, "weight"), bias);
  const std::string scale = along_axis(ctx, 1, 0, rank, "x_scale") + " * " +
                            along_axis(ctx, 4, 1, rank, "w_scale") + " / " +
                            along_axis(ctx, 6, 0, rank, "y_scale");
  return ctx.emit(
      py::Expr::raw(requantize(acc + " * (" + scale + ")", zero_point(ctx, 7, 1, rank), type),
                    {py::Ns::kTorch, py::Ns::kF}),
      "conv", ctx.batched(0));
}

}  // namespace

void register_quant(HandlerRegistry& t) {
  t.add("QuantizeLinear", quantize_linear);
  t.add("DequantizeLinear", dequantize_linear);
  t.add("DynamicQuantizeLinear", dynamic_quantize_linear);
  t.add("MatMulInteger", matmul_integer);
  t.add("QLinearMatMul", qlinear_matmul);
  t.add("ConvInteger", conv_integer);
  t.add("QLinearConv", qlinear_conv);
}

}  // namespace torchonnx

// Conv and ConvTranspose as nn.ConvNd / nn.ConvTransposeNd layers, with a following
// BatchNormalization folded into the weights.
#include <cmath>
#include <string>

#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::DType;
using common::Status;
using common::Tensor;

using Geometry = ConvGeometry;

std::string torch_pads(const std::vector<int64_t>& begin, const std::vector<int64_t>& end) {
  std::vector<int64_t> out;
  for (size_t d = begin.size(); d-- > 0;) {
    out.push_back(begin[d]);
    out.push_back(end[d]);
  }
  return py_tuple(out);
}

std::string dtype_kwarg(DType dtype) {
  auto t = torch_dtype(dtype);
  return dtype == DType::kFloat || !t.ok() ? "" : ", dtype=" + *t;
}

// Folds BatchNormalization(y) with constant statistics into a per-output-channel affine map.
// `channel_of(i)` maps flat weight element i to its output channel.
template <class ChannelOf>
bool fold_batchnorm(Context& ctx, Tensor& weight, Tensor& bias, ChannelOf channel_of) {
  const common::Node* bn = ctx.sole_consumer();
  if (!bn || bn->op_type != "BatchNormalization" || weight.dtype != DType::kFloat) return false;
  if (bn->outputs.size() > 1 || bn->attr_int("training_mode", 0) != 0) return false;
  const common::Tensor* p[4];
  for (int k = 0; k < 4; ++k) {
    p[k] = bn->inputs.size() > static_cast<size_t>(k) + 1 ? ctx.graph().constant(bn->inputs[k + 1])
                                                          : nullptr;
    if (!p[k] || p[k]->numel() != bias.numel()) return false;
  }
  const double eps = bn->attr_float("epsilon", 1e-5f);
  std::vector<double> scale(bias.numel());
  auto b = bias.mutable_span<float>();
  for (int64_t c = 0; c < bias.numel(); ++c) {
    scale[c] = p[0]->double_at(c) / std::sqrt(p[3]->double_at(c) + eps);
    b[c] = static_cast<float>((b[c] - p[2]->double_at(c)) * scale[c] + p[1]->double_at(c));
  }
  auto w = weight.mutable_span<float>();
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(w[i] * scale[channel_of(i)]);
  ctx.fuse(*bn);
  return true;
}

std::string conv_kwargs(const Geometry& g, const std::vector<int64_t>& padding) {
  std::string s;
  const size_t n = g.kernel.size();
  if (g.strides != std::vector<int64_t>(n, 1)) s += ", stride=" + int_or_tuple(g.strides);
  if (padding != std::vector<int64_t>(n, 0)) s += ", padding=" + int_or_tuple(padding);
  if (g.dilations != std::vector<int64_t>(n, 1)) s += ", dilation=" + int_or_tuple(g.dilations);
  if (g.group != 1) s += ", groups=" + std::to_string(g.group);
  return s;
}

// F.convNd for a weight computed at run time.
Status functional_conv(Context& ctx, const Geometry& g, const std::string& x, bool symmetric) {
  const size_t n = g.kernel.size();
  std::string expr = "F.conv" + std::to_string(n) + "d(" + x + ", " + ctx.in(1) + ", " +
                     (ctx.has_input(2) ? ctx.in(2) : "None") + ", " + int_or_tuple(g.strides) +
                     ", " + int_or_tuple(symmetric ? g.begin : std::vector<int64_t>(n, 0)) + ", " +
                     int_or_tuple(g.dilations) + ", " + std::to_string(g.group) + ")";
  return ctx.emit(py::Expr::raw(expr, {py::Ns::kF}), "conv", ctx.batched(0));
}

Status conv(Context& ctx) {
  const common::Dims& ws = ctx.shape(1);
  const size_t n = ws.size() - 2;
  if (ws.size() < 3 || ws.size() > 5 || ctx.rank(0) != static_cast<int64_t>(ws.size())) {
    return ctx.error("only 1-D, 2-D and 3-D convolutions are supported");
  }
  const std::vector<int64_t> in(ctx.shape(0).begin() + 2, ctx.shape(0).end());
  ASSIGN_OR_RETURN(Geometry g,
                   conv_geometry(ctx, std::vector<int64_t>(ws.begin() + 2, ws.end()), in, false));
  const bool symmetric = g.begin == g.end;
  std::string x = ctx.in(0);
  if (!symmetric) x = "F.pad(" + x + ", " + torch_pads(g.begin, g.end) + ")";
  const Tensor* w = ctx.constant(1);
  const Tensor* b = ctx.has_input(2) ? ctx.constant(2) : nullptr;
  if (!w || (ctx.has_input(2) && !b)) return functional_conv(ctx, g, x, symmetric);
  Tensor weight = *w;
  Tensor bias = b ? *b : Tensor::zeros(w->dtype, {ws[0]});
  const int64_t per_out = weight.numel() / std::max<int64_t>(ws[0], 1);
  const bool folded = fold_batchnorm(ctx, weight, bias, [&](size_t i) { return i / per_out; });
  const bool has_bias = b || folded;
  std::string ctor = "nn.Conv" + std::to_string(n) + "d(" + std::to_string(ws[1] * g.group) + ", " +
                     std::to_string(ws[0]) + ", " +
                     int_or_tuple(std::vector<int64_t>(ws.begin() + 2, ws.end())) +
                     conv_kwargs(g, symmetric ? g.begin : std::vector<int64_t>(n, 0)) +
                     (has_bias ? "" : ", bias=False") + dtype_kwarg(w->dtype) + ")";
  std::vector<Param> params{{"weight", std::move(weight)}};
  if (has_bias) params.push_back({"bias", std::move(bias)});
  const std::string attr =
      ctx.layer("conv", py::Expr::raw(ctor, layer_uses(w->dtype)), std::move(params));
  // A kernel that tiles the unpadded input exactly (stride = kernel, ViT's patch embedding) is a
  // matrix product per tile: F.linear over the tiles computes it without a convolution call's
  // per-call cost (oneDNN weight reorders at small batch sizes on the CPU). A kernel that covers
  // the whole input is the one-tile case, where flattening the input is enough.
  const bool plain = g.group == 1 && symmetric && g.begin == std::vector<int64_t>(n, 0) &&
                     g.dilations == std::vector<int64_t>(n, 1);
  const bool one_tile = plain && g.kernel == in;
  // (A 1x1 kernel "tiles" every input too, but that pointwise convolution is no gain.)
  bool tiles = plain && g.strides == g.kernel && g.kernel != std::vector<int64_t>(n, 1);
  for (size_t d = 0; tiles && d < n; ++d) tiles = g.kernel[d] > 0 && in[d] % g.kernel[d] == 0;
  if (one_tile || tiles) {
    const std::string self = "self." + attr;
    const std::string w_b =
        ", " + self + ".weight.flatten(1)" + (has_bias ? ", " + self + ".bias" : "") + ")";
    if (one_tile) {
      std::string shape = "(-1, " + std::to_string(ws[0]);
      for (size_t d = 0; d < n; ++d) shape += ", 1";
      return ctx.emit(
          py::Expr::raw("F.linear(" + x + ".flatten(1)" + w_b + ".reshape" + shape + ")",
                        {py::Ns::kF}),
          "conv", ctx.batched(0));
    }
    // [N, C, T1*K1, ...] -> [N, C, T1, K1, ...] -> [N, T1, ..., C, K1, ...] -> [N, T1, ...,
    // C*K1*...]
    std::vector<int64_t> split{-1, ws[1]}, tile_first{0}, out_order{0, static_cast<int64_t>(n) + 1};
    for (size_t d = 0; d < n; ++d) {
      split.push_back(in[d] / g.kernel[d]);
      split.push_back(g.kernel[d]);
      tile_first.push_back(static_cast<int64_t>(2 * d + 2));
      out_order.push_back(static_cast<int64_t>(d + 1));
    }
    tile_first.push_back(1);
    for (size_t d = 0; d < n; ++d) tile_first.push_back(static_cast<int64_t>(2 * d + 3));
    return ctx.emit(py::Expr::raw("F.linear(" + x + ".reshape" + py_tuple(split) + ".permute" +
                                      py_tuple(tile_first) + ".flatten(" + std::to_string(n + 1) +
                                      ")" + w_b + ".permute" + py_tuple(out_order),
                                  {py::Ns::kF}),
                    "conv", ctx.batched(0));
  }
  // F.convNd with the layer's parameters rather than the module call, as for nn.Linear: the same
  // computation without nn.Module's call overhead (benchmarks/RESULTS.md, stop 15).
  const std::string self = "self." + attr;
  return ctx.emit(
      py::Expr::raw("F.conv" + std::to_string(n) + "d(" + x + ", " + self + ".weight" +
                        (has_bias ? ", " + self + ".bias" : "") +
                        conv_kwargs(g, symmetric ? g.begin : std::vector<int64_t>(n, 0)) + ")",
                    {py::Ns::kF}),
      "conv", ctx.batched(0));
}

// Padding for torch's ConvTranspose (which pads symmetrically) plus a crop that yields ONNX's
// asymmetric or output_shape-driven result.
struct TransposedPlan {
  std::vector<int64_t> padding, output_padding, crop_start;
  bool crop = false;
};

common::Result<TransposedPlan> plan_transposed(Context& ctx, const Geometry& g,
                                               const std::vector<int64_t>& in,
                                               const std::vector<int64_t>& out) {
  const size_t n = in.size();
  const std::string auto_pad = ctx.node().attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> op = ctx.node().attr_ints("output_padding", std::vector<int64_t>(n, 0));
  if (op.size() != n) return ctx.error("output_padding does not match the kernel rank");
  const bool derived =
      ctx.node().has_attr("output_shape") || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  TransposedPlan plan;
  for (size_t d = 0; d < n; ++d) {
    const int64_t full = (in[d] - 1) * g.strides[d] + (g.kernel[d] - 1) * g.dilations[d] + 1;
    int64_t begin = g.begin[d];
    if (derived) {
      const int64_t total = full + op[d] - out[d];
      // A negative total means extra output at the end (like output_padding).
      begin = total < 0 ? 0 : auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    }
    const int64_t end_room = full - begin - out[d];
    const int64_t p = std::max<int64_t>(0, std::min(begin, end_room));
    const int64_t extra = std::max<int64_t>(0, p - end_room);
    if (extra >= std::max(g.strides[d], g.dilations[d])) {
      return ctx.error("output padding larger than stride and dilation cannot be expressed");
    }
    plan.padding.push_back(p);
    plan.output_padding.push_back(extra);
    plan.crop_start.push_back(begin - p);
    plan.crop = plan.crop || begin != p || full - 2 * p + extra != out[d];
  }
  return plan;
}

// nn.ConvTransposeNd holding the constant weight (and bias), with a following BatchNormalization
// folded in; returns F.conv_transposeNd on input 0 with the layer's parameters (as for Conv).
std::string transposed_layer(Context& ctx, const Geometry& g, const TransposedPlan& plan) {
  const common::Dims& ws = ctx.shape(1);
  const size_t n = ws.size() - 2;
  const Tensor* w = ctx.constant(1);
  const Tensor* b = ctx.has_input(2) ? ctx.constant(2) : nullptr;
  const int64_t out_channels = ws[1] * g.group;
  Tensor weight = *w;
  Tensor bias = b ? *b : Tensor::zeros(w->dtype, {out_channels});
  const int64_t spatial = weight.numel() / std::max<int64_t>(ws[0] * ws[1], 1);
  const int64_t in_per_group = ws[0] / g.group;
  const bool folded = fold_batchnorm(ctx, weight, bias, [&](size_t i) {
    const int64_t ic = i / (ws[1] * spatial), oc = (i / spatial) % ws[1];
    return (ic / in_per_group) * ws[1] + oc;
  });
  const bool has_bias = b || folded;
  std::string kwargs = conv_kwargs(g, plan.padding);
  if (plan.output_padding != std::vector<int64_t>(n, 0)) {
    kwargs += ", output_padding=" + int_or_tuple(plan.output_padding);
  }
  std::string ctor = "nn.ConvTranspose" + std::to_string(n) + "d(" + std::to_string(ws[0]) + ", " +
                     std::to_string(out_channels) + ", " +
                     int_or_tuple(std::vector<int64_t>(ws.begin() + 2, ws.end())) + kwargs +
                     (has_bias ? "" : ", bias=False") + dtype_kwarg(w->dtype) + ")";
  std::vector<Param> params{{"weight", std::move(weight)}};
  if (has_bias) params.push_back({"bias", std::move(bias)});
  const std::string self =
      "self." + ctx.layer("convt", py::Expr::raw(ctor, layer_uses(w->dtype)), std::move(params));
  return "F.conv_transpose" + std::to_string(n) + "d(" + ctx.in(0) + ", " + self + ".weight" +
         (has_bias ? ", " + self + ".bias" : "") + kwargs + ")";
}

// ConvTranspose: torch's symmetric padding and output_padding, then a crop (plan_transposed);
// F.conv_transposeNd when the weight or bias is computed at run time.
Status conv_transpose(Context& ctx) {
  const common::Dims& ws = ctx.shape(1);
  const size_t n = ws.size() - 2;
  if (ws.size() < 3 || ws.size() > 5 || ctx.rank(0) != static_cast<int64_t>(ws.size())) {
    return ctx.error("only 1-D, 2-D and 3-D transposed convolutions are supported");
  }
  const std::vector<int64_t> in(ctx.shape(0).begin() + 2, ctx.shape(0).end());
  const std::vector<int64_t> out(ctx.out_shape().begin() + 2, ctx.out_shape().end());
  ASSIGN_OR_RETURN(Geometry g,
                   conv_geometry(ctx, std::vector<int64_t>(ws.begin() + 2, ws.end()), in, true));
  ASSIGN_OR_RETURN(TransposedPlan plan, plan_transposed(ctx, g, in, out));
  std::string expr;
  if (ctx.constant(1) && (!ctx.has_input(2) || ctx.constant(2))) {
    expr = transposed_layer(ctx, g, plan);
  } else {
    expr = "F.conv_transpose" + std::to_string(n) + "d(" + ctx.in(0) + ", " + ctx.in(1) + ", " +
           (ctx.has_input(2) ? ctx.in(2) : "None") + conv_kwargs(g, plan.padding);
    if (plan.output_padding != std::vector<int64_t>(n, 0)) {
      expr += ", output_padding=" + int_or_tuple(plan.output_padding);
    }
    expr += ")";
  }
  if (plan.crop) {
    std::vector<std::string> parts{":", ":"};
    for (size_t d = 0; d < n; ++d) {
      const int64_t s = plan.crop_start[d];
      parts.push_back(std::to_string(s) + ":" + std::to_string(s + out[d]));
    }
    expr += index_suffix(parts);
  }
  return ctx.emit(py::Expr::raw(expr, {py::Ns::kF}), "convt", ctx.batched(0));
}

}  // namespace

void register_conv_columns(HandlerRegistry& t);  // Col2Im, DeformConv (conv_columns.cc)

void register_conv(HandlerRegistry& t) {
  t.add("Conv", conv);
  t.add("ConvTranspose", conv_transpose);
  register_conv_columns(t);
}

}  // namespace torchonnx

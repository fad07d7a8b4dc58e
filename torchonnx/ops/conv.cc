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

std::vector<py::Expr> torch_pads(const std::vector<int64_t>& begin,
                                 const std::vector<int64_t>& end) {
  std::vector<int64_t> out;
  for (size_t d = begin.size(); d-- > 0;) {
    out.push_back(begin[d]);
    out.push_back(end[d]);
  }
  return py::ints(out);
}

// `dtype=` for a layer of a type other than float.
void add_dtype(std::vector<py::Keyword>& kw, DType dtype) {
  auto t = dtype_expr(dtype);
  if (dtype != DType::kFloat && t.ok()) kw.push_back({"dtype", *t});
}

py::Expr ints_arg(const std::vector<int64_t>& values) { return py::lit(int_or_tuple(values)); }

// The constructor of a layer of `cls` (nn.<cls>) with channels, kernel and `kw`.
py::Expr layer_ctor(const std::string& cls, int64_t in, int64_t out,
                    const std::vector<int64_t>& kernel, std::vector<py::Keyword> kw, bool has_bias,
                    DType dtype) {
  if (!has_bias) kw.push_back({"bias", py::lit("False")});
  add_dtype(kw, dtype);
  return py::call(py::nn(cls), {py::lit(in), py::lit(out), ints_arg(kernel)}, std::move(kw));
}

// `F.<fn>(x, self.<attr>.weight[, self.<attr>.bias], kw...)`.
py::Expr layer_call(const std::string& fn, py::Expr x, const std::string& attr, bool has_bias,
                    std::vector<py::Keyword> kw) {
  const py::Expr layer = py::Expr::name("self").attr(attr);
  std::vector<py::Expr> args{std::move(x), layer.attr("weight")};
  if (has_bias) args.push_back(layer.attr("bias"));
  return py::call(py::fn(fn), std::move(args), std::move(kw));
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

std::vector<py::Keyword> conv_kwargs(const Geometry& g, const std::vector<int64_t>& padding) {
  std::vector<py::Keyword> kw;
  const size_t n = g.kernel.size();
  if (g.strides != std::vector<int64_t>(n, 1)) kw.push_back({"stride", ints_arg(g.strides)});
  if (padding != std::vector<int64_t>(n, 0)) kw.push_back({"padding", ints_arg(padding)});
  if (g.dilations != std::vector<int64_t>(n, 1)) kw.push_back({"dilation", ints_arg(g.dilations)});
  if (g.group != 1) kw.push_back({"groups", py::lit(g.group)});
  return kw;
}

// Input i, or None when the node has none.
py::Expr optional_in(Context& ctx, size_t i) {
  return py::Expr::name(ctx.has_input(i) ? ctx.in(i) : "None");
}

// F.convNd for a weight computed at run time.
Status functional_conv(Context& ctx, const Geometry& g, const py::Expr& x, bool symmetric) {
  const size_t n = g.kernel.size();
  // The bias is read first: constant operands keep the buffer numbering of earlier releases.
  py::Expr bias = optional_in(ctx, 2);
  py::Expr w = py::Expr::name(ctx.in(1));
  py::Expr expr = py::call(
      py::fn("conv" + std::to_string(n) + "d"),
      {x, w, bias, ints_arg(g.strides), ints_arg(symmetric ? g.begin : std::vector<int64_t>(n, 0)),
       ints_arg(g.dilations), py::lit(g.group)});
  return ctx.emit(expr, "conv", ctx.batched(0));
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
  py::Expr x = py::Expr::name(ctx.in(0));
  if (!symmetric) x = py::call(py::fn("pad"), {x, py::tuple(torch_pads(g.begin, g.end))});
  const Tensor* w = ctx.constant(1);
  const Tensor* b = ctx.has_input(2) ? ctx.constant(2) : nullptr;
  if (!w || (ctx.has_input(2) && !b)) return functional_conv(ctx, g, x, symmetric);
  Tensor weight = *w;
  Tensor bias = b ? *b : Tensor::zeros(w->dtype, {ws[0]});
  const int64_t per_out = weight.numel() / std::max<int64_t>(ws[0], 1);
  const bool folded = fold_batchnorm(ctx, weight, bias, [&](size_t i) { return i / per_out; });
  const bool has_bias = b || folded;
  const std::vector<int64_t> padding = symmetric ? g.begin : std::vector<int64_t>(n, 0);
  py::Expr ctor = layer_ctor("Conv" + std::to_string(n) + "d", ws[1] * g.group, ws[0],
                             std::vector<int64_t>(ws.begin() + 2, ws.end()),
                             conv_kwargs(g, padding), has_bias, w->dtype);
  std::vector<Param> params{{"weight", std::move(weight)}};
  if (has_bias) params.push_back({"bias", std::move(bias)});
  const std::string attr = ctx.layer("conv", ctor, std::move(params));
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
    const py::Expr layer = py::Expr::name("self").attr(attr);
    // F.linear(<tiles>, weight.flatten(1)[, bias]).
    auto linear = [&](py::Expr tiles_of_x) {
      std::vector<py::Expr> args{std::move(tiles_of_x),
                                 layer.attr("weight").method("flatten", {py::lit(1)})};
      if (has_bias) args.push_back(layer.attr("bias"));
      return py::call(py::fn("linear"), std::move(args));
    };
    if (one_tile) {
      std::vector<int64_t> shape{-1, ws[0]};
      shape.resize(n + 2, 1);
      return ctx.emit(linear(x.method("flatten", {py::lit(1)})).method("reshape", py::ints(shape)),
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
    py::Expr tiled = x.method("reshape", py::ints(split))
                         .method("permute", py::ints(tile_first))
                         .method("flatten", {py::lit(static_cast<int64_t>(n + 1))});
    return ctx.emit(linear(tiled).method("permute", py::ints(out_order)), "conv", ctx.batched(0));
  }
  // F.convNd with the layer's parameters rather than the module call, as for nn.Linear: the same
  // computation without nn.Module's call overhead (benchmarks/RESULTS.md, stop 15).
  return ctx.emit(
      layer_call("conv" + std::to_string(n) + "d", x, attr, has_bias, conv_kwargs(g, padding)),
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

// conv_kwargs plus output_padding.
std::vector<py::Keyword> transposed_kwargs(const Geometry& g, const TransposedPlan& plan) {
  std::vector<py::Keyword> kw = conv_kwargs(g, plan.padding);
  if (plan.output_padding != std::vector<int64_t>(g.kernel.size(), 0)) {
    kw.push_back({"output_padding", ints_arg(plan.output_padding)});
  }
  return kw;
}

// nn.ConvTransposeNd holding the constant weight (and bias), with a following BatchNormalization
// folded in; returns F.conv_transposeNd on input 0 with the layer's parameters (as for Conv).
py::Expr transposed_layer(Context& ctx, const Geometry& g, const TransposedPlan& plan) {
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
  const std::vector<py::Keyword> kwargs = transposed_kwargs(g, plan);
  py::Expr ctor =
      layer_ctor("ConvTranspose" + std::to_string(n) + "d", ws[0], out_channels,
                 std::vector<int64_t>(ws.begin() + 2, ws.end()), kwargs, has_bias, w->dtype);
  std::vector<Param> params{{"weight", std::move(weight)}};
  if (has_bias) params.push_back({"bias", std::move(bias)});
  const std::string attr = ctx.layer("convt", ctor, std::move(params));
  return layer_call("conv_transpose" + std::to_string(n) + "d", py::Expr::name(ctx.in(0)), attr,
                    has_bias, kwargs);
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
  py::Expr expr;
  if (ctx.constant(1) && (!ctx.has_input(2) || ctx.constant(2))) {
    expr = transposed_layer(ctx, g, plan);
  } else {
    // Read last first: constant operands keep the buffer numbering of earlier releases.
    py::Expr bias = optional_in(ctx, 2);
    py::Expr w = py::Expr::name(ctx.in(1));
    py::Expr x = py::Expr::name(ctx.in(0));
    expr = py::call(py::fn("conv_transpose" + std::to_string(n) + "d"), {x, w, bias},
                    transposed_kwargs(g, plan));
  }
  if (plan.crop) {
    std::vector<std::string> parts{":", ":"};
    for (size_t d = 0; d < n; ++d) {
      const int64_t s = plan.crop_start[d];
      parts.push_back(std::to_string(s) + ":" + std::to_string(s + out[d]));
    }
    expr = expr[py::lit(join(parts))];
  }
  return ctx.emit(expr, "convt", ctx.batched(0));
}

}  // namespace

void register_conv_columns(HandlerRegistry& t);  // Col2Im, DeformConv (conv_columns.cc)

void register_conv(HandlerRegistry& t) {
  t.add("Conv", conv);
  t.add("ConvTranspose", conv_transpose);
  register_conv_columns(t);
}

}  // namespace torchonnx

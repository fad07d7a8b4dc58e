// Normalizations: BatchNormalization (nn.BatchNormNd), InstanceNormalization, LayerNormalization,
// GroupNormalization, LRN.
#include <optional>
#include <string>
#include <vector>

#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::Status;
using common::Tensor;

// `eps=` unless it is torch's default.
std::vector<py::Keyword> eps_kwarg(const Context& ctx, float fallback) {
  const float eps = ctx.node().attr_float("epsilon", fallback);
  if (eps == 1e-5f) return {};
  return {{"eps", py::lit(py_float(eps))}};
}

py::Expr in(Context& ctx, size_t i) { return py::Expr::name(ctx.in(i)); }

Status batch_norm(Context& ctx) {
  if (ctx.node().attr_int("training_mode", 0) != 0) return ctx.error("training mode");
  const Tensor* p[4];
  bool constant = true;
  for (int k = 0; k < 4; ++k) {
    p[k] = ctx.constant(k + 1);
    constant = constant && p[k];
  }
  const int64_t rank = ctx.rank(0);
  const float eps = ctx.node().attr_float("epsilon", 1e-5f);
  if (!constant || rank < 2 || rank > 5 || p[0]->dtype != common::DType::kFloat) {
    // Read last first: constant operands keep the buffer numbering of earlier releases.
    py::Expr bias = in(ctx, 2), scale = in(ctx, 1), var = in(ctx, 4), mean = in(ctx, 3);
    py::Expr x = in(ctx, 0);
    py::Expr expr = py::call(py::fn("batch_norm"), {x, mean, var, scale, bias, py::lit("False"),
                                                    py::lit("0.0"), py::lit(py_float(eps))});
    return ctx.emit(expr, "bn", ctx.batched(0));
  }
  const int64_t c = ctx.shape(0)[1];
  const std::string kind = "BatchNorm" + std::to_string(rank == 5 ? 3 : rank == 4 ? 2 : 1) + "d";
  std::vector<Param> params{{"weight", *p[0]},
                            {"bias", *p[1]},
                            {"running_mean", *p[2]},
                            {"running_var", *p[3]},
                            {"num_batches_tracked", Tensor::from_int64({0}, {})}};
  const std::string attr = ctx.layer(
      "bn", py::call(py::nn(kind), {py::lit(c)}, eps_kwarg(ctx, 1e-5f)), std::move(params));
  return ctx.emit(py::call(py::Expr::name("self").attr(attr), {in(ctx, 0)}), "bn", ctx.batched(0));
}

Status instance_norm(Context& ctx) {
  // Read last first, as in batch_norm.
  py::Expr bias = in(ctx, 2), weight = in(ctx, 1), x = in(ctx, 0);
  py::Expr eps = py::lit(py_float(ctx.node().attr_float("epsilon", 1e-5f)));
  py::Expr expr =
      py::call(py::fn("instance_norm"), {x}, {{"weight", weight}, {"bias", bias}, {"eps", eps}});
  return ctx.emit(expr, "instance_norm", ctx.batched(0));
}

// GroupNormalization as F.group_norm, whose weight and bias are per channel as in opset 21;
// opset 18's per-group ones are repeated over each group's channels.
Status group_norm(Context& ctx) {
  const int64_t groups = ctx.node().attr_int("num_groups", 0);
  if (ctx.rank(0) < 2) return ctx.error("input must have rank >= 2");
  const int64_t channels = ctx.shape(0)[1];
  if (groups < 1 || channels % groups != 0) return ctx.error("num_groups must divide the channels");
  std::vector<py::Expr> args{py::Expr(), py::lit(groups)};
  for (size_t i = 1; i <= 2; ++i) {
    const Tensor* t = ctx.constant(i);
    if (ctx.opset() >= 21 || groups == channels) {
      args.push_back(in(ctx, i));
    } else if (t) {
      std::vector<double> v;
      for (double g : t->to_double()) v.insert(v.end(), channels / groups, g);
      args.push_back(
          py::Expr::name(ctx.buffer(Tensor::from_double(v, {channels}, t->dtype), "group_param")));
    } else {
      args.push_back(in(ctx, i).method("repeat_interleave", {py::lit(channels / groups)}));
    }
  }
  args[0] = in(ctx, 0);  // after the parameters, as before
  return ctx.emit(py::call(py::fn("group_norm"), std::move(args), eps_kwarg(ctx, 1e-5f)),
                  "group_norm", ctx.batched(0));
}

// Constant float scale (and bias) shaped like the normalized dims, as exporters write them: an
// nn.LayerNorm layer (a missing bias is zeros). Empty when the node does not have that form.
std::optional<py::Expr> layer_norm_module(Context& ctx, const common::Dims& normalized) {
  const Tensor* scale = ctx.constant(1);
  const Tensor* bias = ctx.has_input(2) ? ctx.constant(2) : nullptr;
  auto fits = [&](const Tensor* t) {
    if (!t || t->dtype != common::DType::kFloat || t->dims.size() < normalized.size()) return false;
    const size_t lead = t->dims.size() - normalized.size();
    for (size_t d = 0; d < lead; ++d) {
      if (t->dims[d] != 1) return false;
    }
    return common::Dims(t->dims.begin() + lead, t->dims.end()) == normalized;
  };
  if (!fits(scale) || (ctx.has_input(2) && !fits(bias))) return std::nullopt;
  Tensor weight = *scale;
  Tensor shift = bias ? *bias : Tensor::zeros(common::DType::kFloat, normalized);
  weight.dims = shift.dims = normalized;
  const py::Expr shape =
      normalized.size() == 1 ? py::lit(normalized[0]) : py::tuple(py::ints(normalized));
  const std::string attr =
      ctx.layer("layer_norm", py::call(py::nn("LayerNorm"), {shape}, eps_kwarg(ctx, 1e-5f)),
                {{"weight", std::move(weight)}, {"bias", std::move(shift)}});
  return py::call(py::Expr::name("self").attr(attr), {in(ctx, 0)});
}

// Outputs: Y, and optionally Mean and InvStdDev over the normalized dims (kept as size 1).
Status layer_norm(Context& ctx) {
  const int64_t rank = ctx.rank(0);
  ASSIGN_OR_RETURN(const int64_t axis, axis_at(ctx, ctx.node().attr_int("axis", -1), rank));
  const common::Dims& s = ctx.shape(0);
  const common::Dims normalized(s.begin() + axis, s.end());
  const py::Expr x = in(ctx, 0);
  const py::Expr eps = py::lit(py_float(ctx.node().attr_float("epsilon", 1e-5f)));
  std::optional<py::Expr> module = layer_norm_module(ctx, normalized);
  py::Expr y = module ? *module : py::Expr();
  if (!module) {
    // Scale and bias broadcast like numpy, so they are applied after normalizing.
    py::Expr normed =
        py::call(py::fn("layer_norm"), {x, py::tuple(py::ints(normalized))}, {{"eps", eps}});
    y = py::binary("*", normed, in(ctx, 1));
    if (ctx.has_input(2)) y = py::binary("+", y, in(ctx, 2));
  }
  // The batch stays where it is unless it is among the normalized dims.
  const int in_axis = ctx.batch_axis(0);
  const int batch_axis = in_axis < axis ? in_axis : -1;
  if (!ctx.output_used(1) && !ctx.output_used(2)) return ctx.emit_at(y, "layer_norm", batch_axis);
  std::vector<int64_t> dims;
  for (int64_t d = axis; d < rank; ++d) dims.push_back(d);
  const py::Expr ds = py::tuple(py::ints(dims));
  const py::Expr none = py::Expr::name("None");
  const py::Keyword keep{"keepdim", py::lit("True")};
  std::vector<py::Expr> parts{y};
  parts.push_back(ctx.output_used(1) ? x.method("mean", {ds}, {keep}) : none);
  py::Expr var = x.method("var", {ds}, {{"unbiased", py::lit("False")}, keep});
  parts.push_back(ctx.output_used(2) ? py::call(py::torch("rsqrt"), {py::binary("+", var, eps)})
                                     : none);
  parts.resize(ctx.num_outputs());
  ctx.emit_tuple_at(py::tuple(std::move(parts)), "layer_norm", batch_axis);
  return {};
}

Status lrn(Context& ctx) {
  const common::Node& n = ctx.node();
  py::Expr expr =
      py::call(py::fn("local_response_norm"), {in(ctx, 0), py::lit(n.attr_int("size", 1))},
               {{"alpha", py::lit(py_float(n.attr_float("alpha", 1e-4f)))},
                {"beta", py::lit(py_float(n.attr_float("beta", 0.75f)))},
                {"k", py::lit(py_float(n.attr_float("bias", 1.0f)))}});
  return ctx.emit(expr, "lrn", ctx.batched(0));
}

// (x - mean) / (std + 1e-9) over `axes`, std being the population standard deviation (ONNX's
// function body computes it as sqrt(E[x^2] - E[x]^2)).
Status mean_variance_normalization(Context& ctx) {
  const int64_t rank = ctx.rank(0);
  ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                   axes_at(ctx, ctx.node().attr_ints("axes", {0, 2, 3}), rank));
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  const py::Expr x = in(ctx, 0);
  const py::Expr dims = py::lit(int_or_tuple(axes, false));
  const py::Keyword keep{"keepdim", py::lit("True")};
  py::Expr centered = py::binary("-", x, x.method("mean", {dims}, {keep}));
  py::Expr sd = py::call(py::torch("sqrt"),
                         {x.method("var", {dims}, {{"unbiased", py::lit("False")}, keep})});
  py::Expr expr = py::binary("/", centered, py::binary("+", sd, py::lit("1e-09")));
  return ctx.emit(expr, "mvn", ctx.batched(0));
}

}  // namespace

void register_norm(HandlerRegistry& t) {
  t.add("BatchNormalization", batch_norm);
  t.add("InstanceNormalization", instance_norm);
  t.add("LayerNormalization", layer_norm);
  t.add("GroupNormalization", group_norm);
  t.add("LRN", lrn);
  t.add("MeanVarianceNormalization", mean_variance_normalization);
}

}  // namespace torchonnx

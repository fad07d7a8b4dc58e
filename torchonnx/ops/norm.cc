// Normalizations: BatchNormalization (nn.BatchNormNd), InstanceNormalization, LayerNormalization,
// GroupNormalization, LRN.
#include <string>

#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::Status;
using common::Tensor;

std::string eps_kwarg(const Context& ctx, float fallback) {
  const float eps = ctx.node().attr_float("epsilon", fallback);
  return eps == 1e-5f ? "" : ", eps=" + py_float(eps);
}

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
    std::string expr = "F.batch_norm(" + ctx.in(0) + ", " + ctx.in(3) + ", " + ctx.in(4) + ", " +
                       ctx.in(1) + ", " + ctx.in(2) + ", False, 0.0, " + py_float(eps) + ")";
    return ctx.emit(py::Expr::raw(expr, {py::Ns::kF}), "bn", ctx.batched(0));
  }
  const int64_t c = ctx.shape(0)[1];
  const std::string kind = "nn.BatchNorm" + std::to_string(rank == 5 ? 3 : rank == 4 ? 2 : 1) + "d";
  std::vector<Param> params{{"weight", *p[0]},
                            {"bias", *p[1]},
                            {"running_mean", *p[2]},
                            {"running_var", *p[3]},
                            {"num_batches_tracked", Tensor::from_int64({0}, {})}};
  const std::string attr = ctx.layer(
      "bn",
      py::Expr::raw(kind + "(" + std::to_string(c) + eps_kwarg(ctx, 1e-5f) + ")", {py::Ns::kNn}),
      std::move(params));
  return ctx.emit(py::Expr::raw("self." + attr + "(" + ctx.in(0) + ")", {}), "bn", ctx.batched(0));
}

Status instance_norm(Context& ctx) {
  std::string expr = "F.instance_norm(" + ctx.in(0) + ", weight=" + ctx.in(1) +
                     ", bias=" + ctx.in(2) +
                     ", eps=" + py_float(ctx.node().attr_float("epsilon", 1e-5f)) + ")";
  return ctx.emit(py::Expr::raw(expr, {py::Ns::kF}), "instance_norm", ctx.batched(0));
}

// GroupNormalization as F.group_norm, whose weight and bias are per channel as in opset 21;
// opset 18's per-group ones are repeated over each group's channels.
Status group_norm(Context& ctx) {
  const int64_t groups = ctx.node().attr_int("num_groups", 0);
  if (ctx.rank(0) < 2) return ctx.error("input must have rank >= 2");
  const int64_t channels = ctx.shape(0)[1];
  if (groups < 1 || channels % groups != 0) return ctx.error("num_groups must divide the channels");
  std::string params[2];
  for (size_t i = 1; i <= 2; ++i) {
    const Tensor* t = ctx.constant(i);
    if (ctx.opset() >= 21 || groups == channels) {
      params[i - 1] = ctx.in(i);
    } else if (t) {
      std::vector<double> v;
      for (double g : t->to_double()) v.insert(v.end(), channels / groups, g);
      params[i - 1] = ctx.buffer(Tensor::from_double(v, {channels}, t->dtype), "group_param");
    } else {
      params[i - 1] = ctx.in(i) + ".repeat_interleave(" + std::to_string(channels / groups) + ")";
    }
  }
  return ctx.emit(py::Expr::raw("F.group_norm(" + ctx.in(0) + ", " + std::to_string(groups) + ", " +
                                    params[0] + ", " + params[1] + eps_kwarg(ctx, 1e-5f) + ")",
                                {py::Ns::kF}),
                  "group_norm", ctx.batched(0));
}

// Constant float scale (and bias) shaped like the normalized dims, as exporters write them: an
// nn.LayerNorm layer (a missing bias is zeros). Empty when the node does not have that form.
std::string layer_norm_module(Context& ctx, const common::Dims& normalized) {
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
  if (!fits(scale) || (ctx.has_input(2) && !fits(bias))) return "";
  Tensor weight = *scale;
  Tensor shift = bias ? *bias : Tensor::zeros(common::DType::kFloat, normalized);
  weight.dims = shift.dims = normalized;
  const std::string shape =
      normalized.size() == 1 ? std::to_string(normalized[0]) : py_tuple(normalized);
  const std::string attr =
      ctx.layer("layer_norm",
                py::Expr::raw("nn.LayerNorm(" + shape + eps_kwarg(ctx, 1e-5f) + ")", {py::Ns::kNn}),
                {{"weight", std::move(weight)}, {"bias", std::move(shift)}});
  return "self." + attr + "(" + ctx.in(0) + ")";
}

// Outputs: Y, and optionally Mean and InvStdDev over the normalized dims (kept as size 1).
Status layer_norm(Context& ctx) {
  const int64_t rank = ctx.rank(0);
  ASSIGN_OR_RETURN(const int64_t axis, axis_at(ctx, ctx.node().attr_int("axis", -1), rank));
  const common::Dims& s = ctx.shape(0);
  const common::Dims normalized(s.begin() + axis, s.end());
  const std::string x = ctx.in(0);
  const std::string eps = py_float(ctx.node().attr_float("epsilon", 1e-5f));
  std::string y = layer_norm_module(ctx, normalized);
  py::Namespaces uses;  // F.layer_norm without a module; torch.rsqrt for InvStdDev
  if (y.empty()) {
    uses.add(py::Ns::kF);
    // Scale and bias broadcast like numpy, so they are applied after normalizing.
    y = "F.layer_norm(" + x + ", " + py_tuple(normalized) + ", eps=" + eps + ") * " + ctx.in(1);
    if (ctx.has_input(2)) y += " + " + ctx.in(2);
  }
  // The batch stays where it is unless it is among the normalized dims.
  const int in_axis = ctx.batch_axis(0);
  const int batch_axis = in_axis < axis ? in_axis : -1;
  if (!ctx.output_used(1) && !ctx.output_used(2))
    return ctx.emit_at(py::Expr::raw(y, uses), "layer_norm", batch_axis);
  std::vector<int64_t> dims;
  for (int64_t d = axis; d < rank; ++d) dims.push_back(d);
  const std::string ds = py_tuple(dims);
  std::vector<std::string> parts{y};
  parts.push_back(ctx.output_used(1) ? x + ".mean(" + ds + ", keepdim=True)" : "None");
  parts.push_back(ctx.output_used(2) ? "torch.rsqrt(" + x + ".var(" + ds +
                                           ", unbiased=False, keepdim=True) + " + eps + ")"
                                     : "None");
  parts.resize(ctx.num_outputs());
  if (ctx.output_used(2)) uses.add(py::Ns::kTorch);
  ctx.emit_tuple_at(py::Expr::raw("(" + join(parts) + ")", uses), "layer_norm", batch_axis);
  return {};
}

Status lrn(Context& ctx) {
  const common::Node& n = ctx.node();
  std::string expr = "F.local_response_norm(" + ctx.in(0) + ", " +
                     std::to_string(n.attr_int("size", 1)) +
                     ", alpha=" + py_float(n.attr_float("alpha", 1e-4f)) +
                     ", beta=" + py_float(n.attr_float("beta", 0.75f)) +
                     ", k=" + py_float(n.attr_float("bias", 1.0f)) + ")";
  return ctx.emit(py::Expr::raw(expr, {py::Ns::kF}), "lrn", ctx.batched(0));
}

// (x - mean) / (std + 1e-9) over `axes`, std being the population standard deviation (ONNX's
// function body computes it as sqrt(E[x^2] - E[x]^2)).
Status mean_variance_normalization(Context& ctx) {
  const int64_t rank = ctx.rank(0);
  ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                   axes_at(ctx, ctx.node().attr_ints("axes", {0, 2, 3}), rank));
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  const std::string x = ctx.in(0);
  const std::string dims = int_or_tuple(axes, false);
  const std::string expr = "(" + x + " - " + x + ".mean(" + dims +
                           ", keepdim=True)) / (torch.sqrt(" + x + ".var(" + dims +
                           ", unbiased=False, keepdim=True)) + 1e-09)";
  return ctx.emit(py::Expr::raw(expr, {py::Ns::kTorch}), "mvn", ctx.batched(0));
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

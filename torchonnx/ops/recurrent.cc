// Recurrent ops (RNN, GRU, LSTM) over a sequence of static length: lower_steps
// (recurrent_steps.cc), plain tensor ops that vmap can batch; with --rnn-modules, forms that
// PyTorch computes become nn.RNN / nn.GRU / nn.LSTM layers, ONNX's gate order rearranged into
// PyTorch's.
#include "torchonnx/ops/recurrent.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "torchonnx/context.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace recurrent {

using common::DType;
using common::Status;
using common::Tensor;

namespace {

const ActivationInfo kActivations[] = {
    {"sigmoid", 0, 0, 0, "torch.sigmoid($)", py::Namespaces{py::Ns::kTorch}},
    {"tanh", 0, 0, 0, "torch.tanh($)", py::Namespaces{py::Ns::kTorch}},
    {"relu", 0, 0, 0, "torch.relu($)", py::Namespaces{py::Ns::kTorch}},
    {"affine", 2, 1, 0, "(A * ($) + B)", py::Namespaces{}},
    {"leakyrelu", 1, 0.01f, 0, "F.leaky_relu($, A)", py::Namespaces{py::Ns::kF}},
    {"thresholdedrelu", 1, 1, 0, "F.threshold($, A, 0.0)", py::Namespaces{py::Ns::kF}},
    {"scaledtanh", 2, 1, 1, "(A * torch.tanh(B * ($)))", py::Namespaces{py::Ns::kTorch}},
    {"hardsigmoid", 2, 0.2f, 0.5f, "(A * ($) + B).clamp(0, 1)", py::Namespaces{}},
    {"elu", 1, 1, 0, "F.elu($, A)", py::Namespaces{py::Ns::kF}},
    {"softsign", 0, 0, 0, "F.softsign($)", py::Namespaces{py::Ns::kF}},
    {"softplus", 0, 0, 0, "F.softplus($)", py::Namespaces{py::Ns::kF}},
};

common::Result<std::vector<Activation>> activations(Context& ctx, const Spec& s) {
  const std::vector<std::string> defaults =
      s.gates == 1   ? std::vector<std::string>{"Tanh"}
      : s.gates == 3 ? std::vector<std::string>{"Sigmoid", "Tanh"}
                     : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  const common::Attribute* a = ctx.node().attr("activations");
  const std::vector<std::string>& names = a ? a->strings : defaults;
  const size_t per = defaults.size();
  if (names.size() != per && names.size() != per * s.dirs) {
    return ctx.error("expected " + std::to_string(per * s.dirs) + " activations");
  }
  const std::vector<float> alphas = ctx.node().attr_floats("activation_alpha");
  const std::vector<float> betas = ctx.node().attr_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> out;
  for (const std::string& name : names) {
    std::string lower;
    for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const ActivationInfo* info = nullptr;
    for (const ActivationInfo& i : kActivations) info = i.name == lower ? &i : info;
    if (!info) return ctx.error("activation " + name + " is not supported");
    Activation act{info, info->alpha, info->beta};
    if (info->params >= 1 && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (info->params >= 2 && next_beta < betas.size()) act.beta = betas[next_beta++];
    out.push_back(act);
  }
  if (out.size() > per && !std::equal(out.begin(), out.begin() + per, out.begin() + per)) {
    return ctx.error("directions with different activations are not supported");
  }
  out.resize(per);
  return out;
}

common::Result<Spec> spec(Context& ctx) {
  const common::Node& n = ctx.node();
  Spec s;
  s.op = n.op_type;
  s.gates = s.op == "LSTM" ? 4 : s.op == "GRU" ? 3 : 1;
  const std::string direction = n.attr_string("direction", "forward");
  s.dirs = direction == "bidirectional" ? 2 : 1;
  s.reverse_only = direction == "reverse";
  if (direction != "forward" && direction != "reverse" && s.dirs != 2) {
    return ctx.error("direction " + direction);
  }
  s.batch_first = n.attr_int("layout", 0) != 0;
  const common::Dims& x = ctx.shape(kX);
  if (x.size() != 3 || ctx.shape(kR).size() != 3) return ctx.error("X and R must have rank 3");
  s.steps = x[s.batch_first ? 1 : 0];
  s.batch = x[s.batch_first ? 0 : 1];
  s.input = x[2];
  s.hidden = n.attr_int("hidden_size", ctx.shape(kR)[2]);
  s.dynamic_batch = s.batch_first && ctx.batched(kX);
  s.dtype = ctx.dtype(kX);
  s.linear_before_reset = n.attr_int("linear_before_reset", 0) != 0;
  s.input_forget = n.attr_int("input_forget", 0) != 0;
  if (n.has_attr("clip")) s.clip = n.attr_float("clip", 0);
  ASSIGN_OR_RETURN(s.acts, activations(ctx, s));
  s.w = ctx.constant(kW);
  s.r = ctx.constant(kR);
  s.b = ctx.has_input(kB) ? ctx.constant(kB) : nullptr;
  if (!s.w || !s.r || (ctx.has_input(kB) && !s.b)) return ctx.error("W, R and B must be constants");
  if (s.w->numel() != s.dirs * s.gates * s.hidden * s.input ||
      s.r->numel() != s.dirs * s.gates * s.hidden * s.hidden ||
      (s.b && s.b->numel() != s.dirs * 2 * s.gates * s.hidden)) {
    return ctx.error("W, R or B does not match hidden_size and direction");
  }
  if (ctx.has_input(kLens)) {
    const Tensor* lens = ctx.constant(kLens);
    if (!lens) return ctx.error("sequence_lens must be a constant");
    for (int64_t len : lens->to_int64()) {
      if (len < 0 || len > s.steps) return ctx.error("sequence_lens out of range");
      if (len != s.steps) s.lens = lens->to_int64();
    }
  }
  if (!s.batch_first) {
    // Sequence-first: the batch is X's dim 1. It stays free unless a constant sequence_lens or an
    // initial state of the declared batch size fixes it.
    auto free = [&](size_t i) {
      return !ctx.has_input(i) || ctx.batch_axis(i) == 1 || batch_sized_zeros(ctx, i);
    };
    s.dynamic_batch = ctx.batch_axis(kX) == 1 && s.lens.empty() && free(kH0) && free(kC0);
  }
  if (ctx.has_input(kP)) {
    const Tensor* p = ctx.constant(kP);
    if (!p) return ctx.error("P must be a constant");
    for (double v : p->to_double()) s.peepholes = s.peepholes || v != 0;
  }
  return s;
}

bool layer_computes(const Spec& s) {
  const std::string_view f = s.acts[0].info->name;
  if (s.clip || !s.lens.empty() || s.peepholes || s.input_forget) return false;
  if (s.gates == 1) return f == "tanh" || f == "relu";
  const bool standard = f == "sigmoid" && s.acts[1].info->name == "tanh" &&
                        (s.gates == 3 || s.acts[2].info->name == "tanh");
  return standard && (s.gates == 4 || s.linear_before_reset);
}

py::Expr layer_ctor(const Spec& s) {
  std::vector<py::Keyword> kw;
  if (s.gates == 1 && s.acts[0].info->name == "relu") {
    kw.push_back({"nonlinearity", py::str_lit("relu")});
  }
  if (!s.b) kw.push_back({"bias", py::lit("False")});
  if (s.batch_first) kw.push_back({"batch_first", py::lit("True")});
  if (s.dirs == 2) kw.push_back({"bidirectional", py::lit("True")});
  auto dtype = dtype_expr(s.dtype);
  if (s.dtype != DType::kFloat && dtype.ok()) kw.push_back({"dtype", *dtype});
  return py::call(py::nn(s.gates == 4   ? "LSTM"
                         : s.gates == 3 ? "GRU"
                                        : "RNN"),
                  {py::lit(s.input), py::lit(s.hidden)}, std::move(kw));
}

std::vector<Param> layer_params(const Spec& s) {
  // PyTorch's gate order: LSTM (i, f, g, o) from ONNX's (i, o, f, c); GRU (r, z, n) from (z, r, h).
  const std::vector<int> order = s.gates == 4   ? std::vector<int>{0, 2, 3, 1}
                                 : s.gates == 3 ? std::vector<int>{1, 0, 2}
                                                : std::vector<int>{0};
  const int64_t rows = s.gates * s.hidden;
  std::vector<Param> params;
  for (int64_t d = 0; d < s.dirs; ++d) {
    const std::string suffix = d == 0 ? "_l0" : "_l0_reverse";
    auto add = [&](const std::string& name, const std::vector<double>& v, common::Dims dims) {
      params.push_back({name + suffix, Tensor::from_double(v, std::move(dims), s.dtype)});
    };
    add("weight_ih", blocks(*s.w, s, d, 0, s.input, order), {rows, s.input});
    add("weight_hh", blocks(*s.r, s, d, 0, s.hidden, order), {rows, s.hidden});
    if (!s.b) continue;
    add("bias_ih", blocks(*s.b, s, d, 0, 1, order), {rows});
    add("bias_hh", blocks(*s.b, s, d, rows, 1, order), {rows});
  }
  return params;
}

Status lower_layer(Context& ctx, const Spec& s) {
  const std::string attr = ctx.layer(s.op == "RNN"   ? "rnn"
                                     : s.op == "GRU" ? "gru"
                                                     : "lstm",
                                     layer_ctor(s), layer_params(s));
  const std::string time = s.batch_first ? "1" : "0";
  std::string call =
      "self." + attr + "(" + ctx.in(kX) + (s.reverse_only ? ".flip(" + time + ")" : "");
  std::string h0 = initial_state(ctx, s, kH0), c0 = s.gates == 4 ? initial_state(ctx, s, kC0) : "";
  py::Namespaces uses;  // torch.zeros_like for the one LSTM state not given
  if (s.gates == 4 && h0.empty() != c0.empty()) uses.add(py::Ns::kTorch);
  if (s.gates == 4 && (!h0.empty() || !c0.empty())) {
    if (h0.empty()) h0 = "torch.zeros_like(" + c0 + ")";
    if (c0.empty()) c0 = "torch.zeros_like(" + h0 + ")";
    call += ", (" + h0 + ", " + c0 + ")";
  } else if (!h0.empty()) {
    call += ", " + h0;
  }
  call += ")";
  // PyTorch's output [T, B, dirs * H] (batch_first: [B, T, ...]) -> ONNX's [T, dirs, B, H]
  // ([B, T, dirs, H]); final states [dirs, B, H] -> [B, dirs, H] for batch_first.
  std::string y_post = s.reverse_only ? ".flip(" + time + ")" : "";
  if (s.dirs == 1) {
    y_post += s.batch_first ? ".unsqueeze(2)" : ".unsqueeze(1)";
  } else {
    y_post += ".unflatten(2, (2, " + std::to_string(s.hidden) + "))";
    if (!s.batch_first) y_post += ".transpose(1, 2)";
  }
  const std::string state_post = s.batch_first ? ".transpose(0, 1)" : "";
  if (ctx.num_outputs() == 1) return emit_outputs(ctx, s, call + "[0]" + y_post, uses);
  if (s.gates != 4 && !ctx.output_used(0) && state_post.empty()) {
    return emit_outputs(ctx, s, call, uses);
  }
  if (s.gates != 4) {
    return emit_outputs(
        ctx, s, "(lambda y, h: (y" + y_post + ", h" + state_post + "))(*" + call + ")", uses);
  }
  std::string parts = "y" + y_post + ", state[0]" + state_post;
  if (ctx.num_outputs() > 2) parts += ", state[1]" + state_post;
  return emit_outputs(ctx, s, "(lambda y, state: (" + parts + "))(*" + call + ")", uses);
}

Status recurrent(Context& ctx) {
  ASSIGN_OR_RETURN(Spec s, spec(ctx));
  if (ctx.num_outputs() > static_cast<size_t>(s.gates == 4 ? 3 : 2)) {
    return ctx.error("too many outputs");
  }
  return ctx.rnn_modules() && layer_computes(s) ? lower_layer(ctx, s) : lower_steps(ctx, s);
}

}  // namespace

std::vector<double> blocks(const Tensor& t, const Spec& s, int64_t d, int64_t offset, int64_t cols,
                           const std::vector<int>& order) {
  const std::vector<double> v = t.to_double();
  const int64_t per_dir = static_cast<int64_t>(v.size()) / s.dirs, block = s.hidden * cols;
  std::vector<double> out;
  for (int k : order) {
    const auto begin = v.begin() + d * per_dir + offset * cols + k * block;
    out.insert(out.end(), begin, begin + block);
  }
  return out;
}

std::vector<int> output_axes(const Spec& s) {
  if (!s.dynamic_batch) return {-1, -1, -1};
  return s.batch_first ? std::vector<int>{0, 0, 0} : std::vector<int>{2, 1, 1};
}

Status emit_outputs(Context& ctx, const Spec& s, std::string expr, py::Namespaces uses) {
  if (ctx.num_outputs() == 1)
    return ctx.emit_at(py::Expr::raw(std::move(expr), uses), "y", output_axes(s)[0]);
  ctx.emit_tuple_axes(py::Expr::raw(std::move(expr), uses), "y", output_axes(s));
  return {};
}

bool batch_sized_zeros(const Context& ctx, size_t i) {
  const Tensor* t = ctx.constant(i);
  if (!t || ctx.probed_input_axis(i) != 1) return false;
  for (double v : t->to_double()) {
    if (v != 0) return false;
  }
  return true;
}

std::string initial_state(Context& ctx, const Spec& s, size_t i) {
  // Zeros made for the batch (exporters build them from X's shape) are the default state, which
  // the code makes for the batch it is given.
  if (!ctx.has_input(i) || (s.dynamic_batch && batch_sized_zeros(ctx, i))) return "";
  return ctx.in(i) + (s.batch_first ? ".transpose(0, 1)" : "");
}

}  // namespace recurrent

void register_recurrent(HandlerRegistry& t) {
  t.add("RNN", recurrent::recurrent);
  t.add("GRU", recurrent::recurrent);
  t.add("LSTM", recurrent::recurrent);
}

}  // namespace torchonnx

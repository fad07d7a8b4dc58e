// Gemm and MatMul as nn.Linear when the right operand is a constant matrix (a following bias
// Add is fused; three or more such products of one input share one layer), torch.matmul
// otherwise; Einsum.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "common/names.h"
#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::DType;
using common::Status;
using common::Tensor;

// Copies a row-major [rows, cols] matrix of `Elem` transposed, in 16 x 16 tiles, each output
// row of a tile written contiguously. Larger tiles alias in the cache at power-of-two row
// lengths (a 4096 x 4096 float matrix: 64 x 64 tiles 159 ms, 16 x 16 tiles 55 ms).
template <class Elem>
void transpose_blocks(const char* src, char* dst, int64_t rows, int64_t cols) {
  const auto* in = reinterpret_cast<const Elem*>(src);
  auto* out = reinterpret_cast<Elem*>(dst);
  constexpr int64_t kTile = 16;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    const int64_t r1 = std::min(rows, r0 + kTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      for (int64_t c = c0; c < std::min(cols, c0 + kTile); ++c) {
        for (int64_t r = r0; r < r1; ++r) out[c * rows + r] = in[r * cols + c];
      }
    }
  }
}

// [rows, cols] -> [cols, rows], scaled by `alpha`.
Tensor transpose2d(const Tensor& t, double alpha) {
  const int64_t rows = t.dims[0], cols = t.dims[1];
  const size_t es = common::dtype_size(t.dtype);
  Tensor out{t.dtype, {cols, rows}, std::string(t.raw.size(), '\0')};
  if (es == 4) {
    transpose_blocks<uint32_t>(t.raw.data(), out.raw.data(), rows, cols);
  } else if (es == 8) {
    transpose_blocks<uint64_t>(t.raw.data(), out.raw.data(), rows, cols);
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        std::memcpy(&out.raw[(c * rows + r) * es], &t.raw[(r * cols + c) * es], es);
      }
    }
  }
  if (alpha != 1.0) {
    auto v = out.to_double();
    for (double& x : v) x *= alpha;
    out = Tensor::from_double(v, out.dims, out.dtype);
  }
  return out;
}

Tensor scaled(const Tensor& t, double alpha, common::Dims dims) {
  auto v = t.to_double();
  for (double& x : v) x *= alpha;
  return Tensor::from_double(v, std::move(dims), t.dtype);
}

std::string linear_ctor(int64_t in, int64_t out, bool bias, DType dtype) {
  auto t = torch_dtype(dtype);
  std::string extra = dtype != DType::kFloat && t.ok() ? ", dtype=" + *t : "";
  return "nn.Linear(" + std::to_string(in) + ", " + std::to_string(out) +
         (bias ? "" : ", bias=False") + extra + ")";
}

// The product with an nn.Linear layer's parameters. F.linear rather than the module call: the same
// computation without nn.Module's call overhead, which is a measurable share of a small MLP's
// latency at batch 1 (benchmarks/RESULTS.md).
std::string linear_call(const std::string& attr, const std::string& x, bool bias) {
  return "F.linear(" + x + ", self." + attr + ".weight" + (bias ? ", self." + attr + ".bias" : "") +
         ")";
}

// Gemm's B (transposed when `tb`) times alpha as an nn.Linear weight: [n, k].
Tensor gemm_weight(const Tensor& b, double alpha, bool tb) {
  if (!tb) return transpose2d(b, alpha);
  return alpha == 1.0 ? b : scaled(b, alpha, b.dims);
}

// A bias for nn.Linear: the constant broadcasts along the last axis only.
bool is_row_bias(const Tensor* c, int64_t n, size_t out_rank) {
  if (!c || c->numel() != n || c->dims.size() > out_rank) return false;
  return c->dims.empty() ? n == 1 : c->dims.back() == n;
}

// A node's product of its input 0 with a constant matrix, as nn.Linear parameters.
struct LinearForm {
  const common::Node* node = nullptr;
  const common::Node* add = nullptr;  ///< a MatMul's bias Add, fused into the product
  Tensor weight;                      ///< [n, k]
  std::optional<Tensor> bias;         ///< [n]
  std::string value;                  ///< the ONNX value the product (plus bias) defines
};

const common::Dims* value_shape(const Context& ctx, const std::string& name) {
  const common::Value* v = ctx.graph().find(name);
  return v && v->shape ? &*v->shape : nullptr;
}

// The one use of `value` when it is not a graph output and not lowered yet.
const common::Node* only_consumer(const Context& ctx, const std::string& value) {
  const common::Value* v = ctx.graph().find(value);
  if (!v || v->consumers.size() != 1 || !ctx.pending(v->consumers[0])) return nullptr;
  const auto& outs = ctx.graph().outputs;
  if (std::find(outs.begin(), outs.end(), value) != outs.end()) return nullptr;
  return &ctx.graph().nodes[v->consumers[0]];
}

// A [rows, cols] tensor of `dtype` whose elements are not computed (`raw` empty).
Tensor shape_only(DType dtype, common::Dims dims) { return Tensor{dtype, std::move(dims), ""}; }

// `node` as F.linear of its input 0: Gemm without transA whose C is absent or a row bias, or
// MatMul (with a following row-bias Add). Null when the right operand is not a constant matrix.
// Without `values` the weight and bias have their shapes only (raw empty): what deciding on a
// merge needs, without transposing every candidate's matrix.
std::optional<LinearForm> linear_form(const Context& ctx, const common::Node& node,
                                      bool values = true) {
  if (node.inputs.size() < 2 || node.outputs.size() != 1) return std::nullopt;
  const Tensor* b = ctx.constant_value(node.inputs[1]);
  if (!b || b->dims.size() != 2 || !common::is_floating(b->dtype)) return std::nullopt;
  const common::Dims* out = value_shape(ctx, node.outputs[0]);
  if (!out) return std::nullopt;
  LinearForm form{&node, nullptr, {}, std::nullopt, node.outputs[0]};
  if (node.op_type == "Gemm") {
    if (node.attr_int("transA", 0) != 0) return std::nullopt;
    const double alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
    const bool tb = node.attr_int("transB", 0) != 0;
    form.weight = values
                      ? gemm_weight(*b, alpha, tb)
                      : shape_only(b->dtype, tb ? b->dims : common::Dims{b->dims[1], b->dims[0]});
    if (node.has_input(2)) {
      const Tensor* c = ctx.constant_value(node.inputs[2]);
      if (!is_row_bias(c, form.weight.dims[0], 2)) return std::nullopt;
      form.bias = values ? scaled(*c, beta, {form.weight.dims[0]})
                         : shape_only(c->dtype, {form.weight.dims[0]});
    }
    return form;
  }
  if (node.op_type != "MatMul") return std::nullopt;
  const common::Dims* a = value_shape(ctx, node.inputs[0]);
  if (!a || a->empty()) return std::nullopt;
  const int64_t n = b->dims[1];
  form.weight = values ? transpose2d(*b, 1.0) : shape_only(b->dtype, {n, b->dims[0]});
  const common::Node* add = only_consumer(ctx, node.outputs[0]);
  if (add && add->op_type == "Add" && add->inputs.size() == 2) {
    const std::string& other = add->inputs[add->inputs[0] == node.outputs[0] ? 1 : 0];
    const Tensor* bias = ctx.graph().constant(other);
    const common::Dims* sum = value_shape(ctx, add->outputs[0]);
    if (is_row_bias(bias, n, out->size()) && bias->dtype == b->dtype && sum && *sum == *out) {
      form.bias = values ? Tensor{bias->dtype, {n}, bias->raw} : shape_only(bias->dtype, {n});
      form.add = add;
      form.value = add->outputs[0];
    }
  }
  return form;
}

// Whether the node's weight initializer is read by it alone (a shared weight stays one layer).
bool own_weight(const Context& ctx, const common::Node& node) {
  const common::Value* w = ctx.graph().find(node.inputs[1]);
  return w && w->consumers.size() == 1;
}

// The most output features a merged product may have. PyTorch's CPU product at batch 1 (through
// OpenBLAS 0.3.21's gemm) slows down 4-6x per element past about 1100 output features, which
// would cost more than the calls a merge saves (benchmarks/RESULTS.md).
constexpr int64_t kMaxMergedFeatures = 1024;

// Other products of the same input with their own constant matrices of the same dtype and
// inner size, not lowered yet: computed together with `lead` as one wider F.linear.
std::vector<LinearForm> sibling_products(const Context& ctx, const LinearForm& lead) {
  std::vector<LinearForm> out;
  int64_t features = lead.weight.dims[0];
  const common::Value* x = ctx.graph().find(lead.node->inputs[0]);
  if (!x || !own_weight(ctx, *lead.node)) return out;
  std::vector<int> seen;
  for (int c : x->consumers) {
    const common::Node& node = ctx.graph().nodes[c];
    if (&node == lead.node || !ctx.pending(c) || std::count(seen.begin(), seen.end(), c)) continue;
    seen.push_back(c);
    if (node.inputs.empty() || node.outputs.empty() || node.inputs[0] != lead.node->inputs[0] ||
        !ctx.live(node.outputs[0])) {
      continue;
    }
    const common::Value* v = ctx.graph().find(node.outputs[0]);
    if (!v || v->known) continue;
    std::optional<LinearForm> form = linear_form(ctx, node, /*values=*/false);
    if (form && own_weight(ctx, node) && form->weight.dtype == lead.weight.dtype &&
        form->weight.dims[1] == lead.weight.dims[1] &&
        features + form->weight.dims[0] <= kMaxMergedFeatures) {
      features += form->weight.dims[0];
      out.push_back(std::move(*form));
    }
  }
  return out;
}

// Rows of the forms' weights (and biases, zeros where a form has none) stacked in order.
std::vector<Param> stacked_params(const std::vector<LinearForm>& forms) {
  Tensor weight{forms[0].weight.dtype, {0, forms[0].weight.dims[1]}, ""};
  bool any_bias = false;
  for (const LinearForm& f : forms) {
    weight.dims[0] += f.weight.dims[0];
    weight.raw += f.weight.raw;
    any_bias = any_bias || f.bias;
  }
  std::vector<Param> params{{"weight", std::move(weight)}};
  if (!any_bias) return params;
  const size_t es = common::dtype_size(forms[0].weight.dtype);
  Tensor bias{forms[0].weight.dtype, {0}, ""};
  for (const LinearForm& f : forms) {
    bias.dims[0] += f.weight.dims[0];
    bias.raw += f.bias ? f.bias->raw : std::string(f.weight.dims[0] * es, '\0');
  }
  params.push_back({"bias", std::move(bias)});
  return params;
}

// F.linear for `lead` (this node). Sibling products of the same input join it: one nn.Linear
// holding every weight and one call whose result is split, instead of a call each (the q/k/v
// projections of attention, the parallel heads of a controller).
Status emit_linear(Context& ctx, LinearForm lead) {
  // A product with a constant matrix keeps the batch in any dim but the contracted last one.
  const int in_axis = ctx.batch_axis(0);
  const int axis = in_axis >= 0 && in_axis < ctx.rank(0) - 1 ? in_axis : -1;
  const int64_t k = lead.weight.dims[1];
  const DType dtype = lead.weight.dtype;
  std::vector<LinearForm> forms = sibling_products(ctx, lead);
  if (lead.add) ctx.fuse(*lead.add);
  // Two products merged save one call but add the split's: a wash. Three or more gain.
  if (forms.size() < 2) {
    const bool has_bias = lead.bias.has_value();
    std::vector<Param> params{{"weight", std::move(lead.weight)}};
    if (has_bias) params.push_back({"bias", std::move(*lead.bias)});
    const int64_t n = params[0].tensor.dims[0];
    const std::string attr =
        ctx.layer("fc", py::Expr::raw(linear_ctor(k, n, has_bias, dtype), layer_uses(dtype)),
                  std::move(params));
    return ctx.emit_at(py::Expr::raw(linear_call(attr, ctx.in(0), has_bias), {py::Ns::kF}), "fc",
                       axis);
  }
  for (LinearForm& f : forms) f = *linear_form(ctx, *f.node);  // the siblings' values now
  forms.insert(forms.begin(), std::move(lead));
  std::vector<int64_t> sizes;
  std::vector<std::string> values;
  for (const LinearForm& f : forms) {
    sizes.push_back(f.weight.dims[0]);
    values.push_back(f.value);
    if (f.node != forms[0].node) ctx.absorb(*f.node, f.add);
  }
  std::vector<Param> params = stacked_params(forms);
  const bool has_bias = params.size() == 2;
  const int64_t n = params[0].tensor.dims[0];
  const std::string attr =
      ctx.layer("fc", py::Expr::raw(linear_ctor(k, n, has_bias, dtype), layer_uses(dtype)),
                std::move(params));
  ctx.emit_values(
      py::Expr::raw(linear_call(attr, ctx.in(0), has_bias) + ".split(" + py_list(sizes) + ", -1)",
                    {py::Ns::kF}),
      "fc", values, axis);
  return {};
}

Status gemm(Context& ctx) {
  if (std::optional<LinearForm> form = linear_form(ctx, ctx.node())) {
    return emit_linear(ctx, std::move(*form));
  }
  // transA, or a C that is not a row bias.
  const common::Node& node = ctx.node();
  const double alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  const Tensor* b = ctx.constant(1);
  const Tensor* c = ctx.has_input(2) ? ctx.constant(2) : nullptr;
  std::string a = ctx.in(0) + (ta ? ".t()" : "");
  const bool batched = ctx.batched(0) && !ta;
  if (!b || b->dims.size() != 2 || !common::is_floating(b->dtype)) {
    std::string expr = "torch.matmul(" + a + ", " + ctx.in(1) + (tb ? ".t()" : "") + ")";
    if (alpha != 1.0) expr += " * " + py_float(alpha);
    if (ctx.has_input(2))
      expr += " + " + (beta == 1.0 ? ctx.in(2) : ctx.in(2) + " * " + py_float(beta));
    return ctx.emit(py::Expr::raw(expr, {py::Ns::kTorch}), "gemm", batched);
  }
  Tensor weight = gemm_weight(*b, alpha, tb);
  const int64_t n = weight.dims[0], k = weight.dims[1];
  const bool row_bias = is_row_bias(c, n, 2);
  std::vector<Param> params{{"weight", std::move(weight)}};
  if (row_bias) params.push_back({"bias", scaled(*c, beta, {n})});
  const std::string attr =
      ctx.layer("fc", py::Expr::raw(linear_ctor(k, n, row_bias, b->dtype), layer_uses(b->dtype)),
                std::move(params));
  std::string expr = linear_call(attr, a, row_bias);
  if (ctx.has_input(2) && !row_bias) {
    if (beta == 1.0) {
      expr += " + " + ctx.in(2);
    } else {
      expr += " + " + (c ? ctx.buffer(scaled(*c, beta, c->dims), "bias")
                         : ctx.in(2) + " * " + py_float(beta));
    }
  }
  return ctx.emit(py::Expr::raw(expr, {py::Ns::kF}), "fc", batched);
}

// Dim 0 of the product is the batch when it comes from a batched operand's dim 0: a leading
// (broadcast) dim of A or of B, or A's row dim of a matrix-vector product.
bool matmul_batched(const Context& ctx) {
  const int64_t a = ctx.rank(0), b = ctx.rank(1);
  const int64_t out = static_cast<int64_t>(ctx.out_shape().size());
  return (ctx.batched(0) && a >= 2 && (a == out || b == 1)) ||
         (ctx.batched(1) && b >= 3 && (b == out || a == 1));
}

// A product with a constant vector, or of a constant matrix with a vector, in the forms
// verifiers bound (auto_LiRPA has no bound for torch.matmul with a 1-D operand): `(x * w).sum(-1)`
// for x @ w, `F.linear(x, W)` for W @ x. Null when neither applies.
std::optional<Status> vector_product(Context& ctx) {
  if (!common::is_floating(ctx.dtype(0)) || ctx.dtype(0) != ctx.dtype(1)) return std::nullopt;
  const Tensor* a = ctx.constant(0);
  const Tensor* b = ctx.constant(1);
  if (b && !a && b->dims.size() == 1 && ctx.rank(0) >= 1) {
    const int in_axis = ctx.batch_axis(0);
    const int axis = in_axis >= 0 && in_axis < ctx.rank(0) - 1 ? in_axis : -1;
    return ctx.emit_at(
        py::Expr::raw("(" + ctx.in(0) + " * " + ctx.in(1) + ").sum(-1)", {py::Ns::kF}), "dot",
        axis);
  }
  if (a && !b && a->dims.size() == 2 && ctx.rank(1) == 1) {
    return ctx.emit_at(
        py::Expr::raw("F.linear(" + ctx.in(1) + ", " + ctx.in(0) + ")", {py::Ns::kF}), "matvec",
        -1);
  }
  return std::nullopt;
}

Status matmul(Context& ctx) {
  if (std::optional<LinearForm> form = linear_form(ctx, ctx.node())) {
    return emit_linear(ctx, std::move(*form));
  }
  if (std::optional<Status> done = vector_product(ctx)) return *done;
  return ctx.emit(
      py::Expr::raw("torch.matmul(" + ctx.in(0) + ", " + ctx.in(1) + ")", {py::Ns::kTorch}),
      "matmul", matmul_batched(ctx));
}

// The output's dim 0 is the batch when it is labelled like dim 0 of every input and every input
// is batched: "bij,bjk->bik", or "...ij,...jk->...ik" over inputs of one rank.
bool einsum_batched(const Context& ctx, std::string equation) {
  std::erase(equation, ' ');
  const size_t arrow = equation.find("->");
  if (arrow == std::string::npos || arrow + 2 >= equation.size()) return false;
  const std::string out = equation.substr(arrow + 2);
  const std::string lead = out.rfind("...", 0) == 0 ? "..." : out.substr(0, 1);
  std::vector<std::string> terms;
  std::string rest = equation.substr(0, arrow);
  for (size_t at; (at = rest.find(',')) != std::string::npos; rest.erase(0, at + 1)) {
    terms.push_back(rest.substr(0, at));
  }
  terms.push_back(rest);
  if (terms.size() != ctx.num_inputs()) return false;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (!ctx.batched(i) || terms[i].rfind(lead, 0) != 0) return false;
    if (lead == "..." && ctx.rank(i) != ctx.rank(0)) return false;
  }
  return true;
}

Status einsum(Context& ctx) {
  const std::string equation = ctx.node().attr_string("equation", "");
  std::string expr = "torch.einsum(" + common::python_string_literal(equation);
  for (size_t i = 0; i < ctx.num_inputs(); ++i) expr += ", " + ctx.in(i);
  return ctx.emit(py::Expr::raw(expr + ")", {py::Ns::kTorch}), "einsum",
                  einsum_batched(ctx, equation));
}

// Det: torch.linalg.det.
Status det(Context& ctx) {
  if (ctx.rank(0) < 2) return ctx.error("input must have rank >= 2");
  return ctx.emit(py::Expr::raw("torch.linalg.det(" + ctx.in(0) + ")", {py::Ns::kTorch}), "det",
                  ctx.batched(0) && ctx.rank(0) > 2);
}

}  // namespace

void register_linalg(HandlerRegistry& t) {
  t.add("Gemm", gemm);
  t.add("MatMul", matmul);
  t.add("Einsum", einsum);
  t.add("Det", det);
}

}  // namespace torchonnx

// Gemm and MatMul as nn.Linear when the right operand is a constant matrix (a following bias
// Add is fused; three or more such products of one input share one layer), torch.matmul
// otherwise. Einsum and Det: linalg_einsum.cc.
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

py::Expr linear_ctor(int64_t in, int64_t out, bool bias, DType dtype) {
  std::vector<py::Keyword> keywords;
  if (!bias) keywords.push_back({"bias", py::lit("False")});
  auto t = dtype_expr(dtype);
  if (dtype != DType::kFloat && t.ok()) keywords.push_back({"dtype", *t});
  return py::call(py::nn("Linear"), {py::lit(in), py::lit(out)}, std::move(keywords));
}

// The product with an nn.Linear layer's parameters. F.linear rather than the module call: the same
// computation without nn.Module's call overhead, which is a measurable share of a small MLP's
// latency at batch 1 (benchmarks/RESULTS.md).
py::Expr linear_call(const std::string& attr, py::Expr x, bool bias) {
  const py::Expr layer = py::Expr::name("self").attr(attr);
  std::vector<py::Expr> args{std::move(x), layer.attr("weight")};
  if (bias) args.push_back(layer.attr("bias"));
  return py::call(py::fn("linear"), std::move(args));
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
    const std::string attr = ctx.layer("fc", linear_ctor(k, n, has_bias, dtype), std::move(params));
    return ctx.emit_at(linear_call(attr, py::Expr::name(ctx.in(0)), has_bias), "fc", axis);
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
  const std::string attr = ctx.layer("fc", linear_ctor(k, n, has_bias, dtype), std::move(params));
  py::Expr product = linear_call(attr, py::Expr::name(ctx.in(0)), has_bias);
  ctx.emit_values(product.method("split", {py::list(py::ints(sizes)), py::lit(-1)}), "fc", values,
                  axis);
  return {};
}

// `x.t()` when `transpose`.
py::Expr transposed(const py::Expr& x, bool transpose) { return transpose ? x.method("t") : x; }

// `x * beta`, or x when beta is 1.
py::Expr times(const py::Expr& x, double beta) {
  return beta == 1.0 ? x : py::binary("*", x, py::lit(py_float(beta)));
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
  py::Expr a = transposed(py::Expr::name(ctx.in(0)), ta);
  const bool batched = ctx.batched(0) && !ta;
  if (!b || b->dims.size() != 2 || !common::is_floating(b->dtype)) {
    py::Expr bt = transposed(py::Expr::name(ctx.in(1)), tb);
    py::Expr expr = py::call(py::torch("matmul"), {a, bt});
    if (alpha != 1.0) expr = py::binary("*", expr, py::lit(py_float(alpha)));
    if (ctx.has_input(2)) expr = py::binary("+", expr, times(py::Expr::name(ctx.in(2)), beta));
    return ctx.emit(expr, "gemm", batched);
  }
  Tensor weight = gemm_weight(*b, alpha, tb);
  const int64_t n = weight.dims[0], k = weight.dims[1];
  const bool row_bias = is_row_bias(c, n, 2);
  std::vector<Param> params{{"weight", std::move(weight)}};
  if (row_bias) params.push_back({"bias", scaled(*c, beta, {n})});
  const std::string attr =
      ctx.layer("fc", linear_ctor(k, n, row_bias, b->dtype), std::move(params));
  py::Expr expr = linear_call(attr, a, row_bias);
  if (ctx.has_input(2) && !row_bias) {
    const bool folded = beta != 1.0 && c;
    py::Expr bias = folded ? py::Expr::name(ctx.buffer(scaled(*c, beta, c->dims), "bias"))
                           : times(py::Expr::name(ctx.in(2)), beta);
    expr = py::binary("+", expr, bias);
  }
  return ctx.emit(expr, "fc", batched);
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
    py::Expr w = py::Expr::name(ctx.in(1));  // read first, as in matmul
    py::Expr x = py::Expr::name(ctx.in(0));
    return ctx.emit_at(py::binary("*", x, w).method("sum", {py::lit(-1)}), "dot", axis);
  }
  if (a && !b && a->dims.size() == 2 && ctx.rank(1) == 1) {
    py::Expr w = py::Expr::name(ctx.in(0));
    py::Expr x = py::Expr::name(ctx.in(1));
    return ctx.emit_at(py::call(py::fn("linear"), {x, w}), "matvec", -1);
  }
  return std::nullopt;
}

Status matmul(Context& ctx) {
  if (std::optional<LinearForm> form = linear_form(ctx, ctx.node())) {
    return emit_linear(ctx, std::move(*form));
  }
  if (std::optional<Status> done = vector_product(ctx)) return *done;
  // B is read first: constant operands keep the buffer numbering of earlier releases.
  py::Expr b = py::Expr::name(ctx.in(1));
  py::Expr a = py::Expr::name(ctx.in(0));
  return ctx.emit(py::call(py::torch("matmul"), {a, b}), "matmul", matmul_batched(ctx));
}

}  // namespace

void register_linalg_einsum(HandlerRegistry& t);  // Einsum, Det (linalg_einsum.cc)

void register_linalg(HandlerRegistry& t) {
  t.add("Gemm", gemm);
  t.add("MatMul", matmul);
  register_linalg_einsum(t);
}

}  // namespace torchonnx

// Gemm and MatMul as nn.Linear when the right operand is a constant matrix (a following bias
// Add is fused), torch.matmul otherwise; Einsum.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/names.h"
#include "torchonnx/context.h"
#include "torchonnx/ops_util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::DType;
using common::Status;
using common::Tensor;

// Copies a row-major [rows, cols] matrix of `Elem` transposed, in cache-sized blocks.
template <class Elem>
void transpose_blocks(const char* src, char* dst, int64_t rows, int64_t cols) {
  const auto* in = reinterpret_cast<const Elem*>(src);
  auto* out = reinterpret_cast<Elem*>(dst);
  constexpr int64_t kBlock = 64;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
      for (int64_t r = r0; r < std::min(rows, r0 + kBlock); ++r) {
        for (int64_t c = c0; c < std::min(cols, c0 + kBlock); ++c)
          out[c * rows + r] = in[r * cols + c];
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

// A bias for nn.Linear: the constant broadcasts along the last axis only.
bool is_row_bias(const Tensor* c, int64_t n, size_t out_rank) {
  if (!c || c->numel() != n || c->dims.size() > out_rank) return false;
  return c->dims.empty() ? n == 1 : c->dims.back() == n;
}

Status gemm(Context& ctx) {
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
    return ctx.emit(expr, "gemm", batched);
  }
  Tensor weight = tb ? (alpha == 1.0 ? *b : scaled(*b, alpha, b->dims)) : transpose2d(*b, alpha);
  const int64_t n = weight.dims[0], k = weight.dims[1];
  const bool row_bias = is_row_bias(c, n, 2);
  std::vector<Param> params{{"weight", std::move(weight)}};
  if (row_bias) params.push_back({"bias", scaled(*c, beta, {n})});
  const std::string attr =
      ctx.layer("fc", linear_ctor(k, n, row_bias, b->dtype), std::move(params));
  std::string expr = linear_call(attr, a, row_bias);
  if (ctx.has_input(2) && !row_bias) {
    if (beta == 1.0) {
      expr += " + " + ctx.in(2);
    } else {
      expr += " + " + (c ? ctx.buffer(scaled(*c, beta, c->dims), "bias")
                         : ctx.in(2) + " * " + py_float(beta));
    }
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

Status matmul(Context& ctx) {
  const Tensor* b = ctx.constant(1);
  if (!b || b->dims.size() != 2 || !common::is_floating(b->dtype) || ctx.rank(0) < 1) {
    return ctx.emit("torch.matmul(" + ctx.in(0) + ", " + ctx.in(1) + ")", "matmul",
                    matmul_batched(ctx));
  }
  const int64_t k = b->dims[0], n = b->dims[1];
  std::vector<Param> params{{"weight", transpose2d(*b, 1.0)}};
  // MatMul + Add(constant row bias) -> one nn.Linear with bias.
  const common::Node* add = ctx.sole_consumer();
  if (add && add->op_type == "Add" && add->inputs.size() == 2) {
    const std::string& other = add->inputs[add->inputs[0] == ctx.node().outputs[0] ? 1 : 0];
    const Tensor* bias = ctx.graph().constant(other);
    const common::Value* sum = ctx.graph().find(add->outputs[0]);
    if (is_row_bias(bias, n, ctx.out_shape().size()) && bias->dtype == b->dtype && sum &&
        sum->shape == ctx.out_shape()) {
      params.push_back({"bias", Tensor{bias->dtype, {n}, bias->raw}});
      ctx.fuse(*add);
    }
  }
  const bool has_bias = params.size() == 2;
  const std::string attr =
      ctx.layer("fc", linear_ctor(k, n, has_bias, b->dtype), std::move(params));
  // A product with a constant matrix keeps the batch in any dim but the contracted last one.
  const int in_axis = ctx.batch_axis(0);
  const int axis = in_axis >= 0 && in_axis < ctx.rank(0) - 1 ? in_axis : -1;
  return ctx.emit_at(linear_call(attr, ctx.in(0), has_bias), "fc", axis);
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
  return ctx.emit(expr + ")", "einsum", einsum_batched(ctx, equation));
}

}  // namespace

void register_linalg(HandlerTable& t) {
  t.add("Gemm", gemm);
  t.add("MatMul", matmul);
  t.add("Einsum", einsum);
}

}  // namespace torchonnx

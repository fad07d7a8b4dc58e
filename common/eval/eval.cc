// The constant evaluator: op registry, dispatch, and helpers shared by the kernel families.
#include "common/eval/eval.h"

#include <algorithm>
#include <exception>
#include <set>

#include "common/eval/kernels.h"

namespace common {
namespace eval {

const KernelRegistry& registry() {
  static const KernelRegistry r = [] {
    KernelRegistry reg;
    register_elementwise(reg);
    register_elementwise_unary(reg);
    register_elementwise_cast(reg);
    register_activation(reg);
    register_shape(reg);
    register_generator(reg);
    register_index(reg);
    register_reduce(reg);
    register_linalg(reg);
    register_resize(reg);
    register_conv(reg);
    register_pool(reg);
    register_norm(reg);
    register_quant(reg);
    return reg;
  }();
  return r;
}

namespace {

bool is_half(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

/// Checks that every present input holds exactly numel * element-size bytes.
Status check_inputs(const Ctx& c) {
  for (size_t i = 0; i < c.inputs().size(); ++i) {
    const Tensor* t = c.inputs()[i];
    if (t == nullptr) continue;
    int64_t n = t->numel();
    if (n < 0) return c.error("input " + std::to_string(i) + " has a negative or huge shape");
    if (t->dtype == DType::kString || t->dtype == DType::kUndefined)
      return c.error("input " + std::to_string(i) + " has unsupported element type " +
                     std::string(dtype_name(t->dtype)));
    if (static_cast<int64_t>(t->raw.size()) != n * dtype_size(t->dtype))
      return c.error("input " + std::to_string(i) + " holds " + std::to_string(t->raw.size()) +
                     " bytes for shape " + dims_str(t->dims));
  }
  return {};
}

/// Runs a kernel with float16/bfloat16 inputs widened to float and float outputs narrowed back.
Result<Outputs> run_half_via_float(const Ctx& c, Kernel fn) {
  DType half = DType::kUndefined;
  std::vector<Tensor> widened;
  widened.reserve(c.inputs().size());
  std::vector<const Tensor*> ptrs;
  for (const Tensor* t : c.inputs()) {
    if (t == nullptr || !is_half(t->dtype)) {
      ptrs.push_back(t);
      continue;
    }
    if (half == DType::kUndefined) half = t->dtype;
    ASSIGN_OR_RETURN(Tensor w, cast_tensor(c, *t, DType::kFloat));
    widened.push_back(std::move(w));
    ptrs.push_back(&widened.back());
  }
  if (half == DType::kUndefined) return fn(c);
  Ctx wide{c.graph(), c.node(), ptrs, c.opset()};
  ASSIGN_OR_RETURN(Outputs outs, fn(wide));
  for (Tensor& t : outs) {
    if (t.dtype != DType::kFloat) continue;
    ASSIGN_OR_RETURN(t, cast_tensor(c, t, half));
  }
  return outs;
}

}  // namespace

Result<const Tensor*> Ctx::need(size_t i) const {
  if (const Tensor* t = in(i)) return t;
  return error("input " + std::to_string(i) + " is required");
}

Dims strides_of(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) s[k - 1] = s[k] * dims[k];
  return s;
}

std::string dims_str(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

int64_t scalar_int(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::kInt64:
      return t.span<int64_t>()[i];
    case DType::kInt32:
      return t.span<int32_t>()[i];
    case DType::kInt16:
      return t.span<int16_t>()[i];
    case DType::kInt8:
      return t.span<int8_t>()[i];
    case DType::kUInt64:
      return static_cast<int64_t>(t.span<uint64_t>()[i]);
    case DType::kUInt32:
      return t.span<uint32_t>()[i];
    case DType::kUInt16:
      return t.span<uint16_t>()[i];
    case DType::kUInt8:
    case DType::kBool:
      return t.span<uint8_t>()[i];
    default:
      return saturating_int64(scalar_double(t, i));
  }
}

double scalar_double(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::kFloat:
      return t.span<float>()[i];
    case DType::kDouble:
      return t.span<double>()[i];
    case DType::kFloat16:
      return half_to_float(t.span<uint16_t>()[i]);
    case DType::kBFloat16:
      return bfloat16_to_float(t.span<uint16_t>()[i]);
    case DType::kUInt64:
      return static_cast<double>(t.span<uint64_t>()[i]);
    default:
      return static_cast<double>(scalar_int(t, i));
  }
}

std::vector<int64_t> ints_of(const Tensor& t) {
  std::vector<int64_t> v(std::max<int64_t>(t.numel(), 0));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scalar_int(t, static_cast<int64_t>(i));
  return v;
}

Result<std::optional<std::vector<int64_t>>> ints_input_or_attr(const Ctx& c, size_t index,
                                                               std::string_view attr) {
  return c.at(common::ints_input_or_attr(c.node(), index, c.in(index), attr, attr));
}

Result<Dims> broadcast_all(const Ctx& c, const std::vector<const Tensor*>& ts) {
  Dims out;
  for (const Tensor* t : ts) {
    auto b = broadcast_shapes(out, t->dims);
    if (!b) return c.error("cannot broadcast " + dims_str(out) + " with " + dims_str(t->dims));
    out = *b;
  }
  RETURN_IF_ERROR(check_size(c, out));
  return out;
}

Status check_size(const Ctx& c, const Dims& dims) {
  int64_t n = num_elements(dims);
  if (n < 0 || n > kMaxElements)
    return c.error("output shape " + dims_str(dims) + " is invalid or too large to evaluate");
  return {};
}

Tensor make_tensor(DType dtype, Dims dims) {
  Tensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.raw.assign(static_cast<size_t>(std::max<int64_t>(t.numel(), 0)) * dtype_size(dtype), '\0');
  return t;
}

}  // namespace eval

bool can_evaluate(std::string_view op_type) { return eval::registry().contains(op_type); }

Result<std::vector<Tensor>> evaluate(const Graph& graph, const Node& node,
                                     const std::vector<const Tensor*>& inputs) {
  int64_t opset = graph.opset(node.domain);
  if (opset == 0) opset = 21;  // no import recorded: assume the newest forms
  eval::Ctx c{graph, node, inputs, opset};
  if (!node.domain.empty() && node.domain != "ai.onnx")
    return c.error("no constant kernel for domain '" + node.domain + "'");
  const eval::KernelInfo* kernel = eval::registry().find(node.op_type);
  if (kernel == nullptr) return c.error("no constant kernel for op " + node.op_type);
  RETURN_IF_ERROR(eval::check_inputs(c));
  try {
    if (kernel->half_via_float) return eval::run_half_via_float(c, kernel->fn);
    return kernel->fn(c);
  } catch (const std::exception& e) {
    return c.error(std::string("evaluation failed: ") + e.what());
  }
}

std::optional<Dims> broadcast_shapes(const Dims& a, const Dims& b) {
  // Right-aligned numpy rule. A dim of kUnknownDim matches anything: against 1 it stays unknown,
  // against a known n > 1 it must be n (or 1, which broadcasts to n).
  size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x == y || y == 1) {
      out[i] = x;
    } else if (x == 1) {
      out[i] = y;
    } else if (x == kUnknownDim || y == kUnknownDim) {
      out[i] = x == kUnknownDim ? y : x;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace common

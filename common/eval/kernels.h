// Internals of the constant evaluator (eval.h): the kernel registry and helpers shared by the
// per-family kernel files eval/<family>.cc. Each family file has one register_<family> function
// that eval.cc calls to build the op_type -> kernel table.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/eval/eval.h"
#include "common/graph.h"
#include "common/node_view.h"
#include "common/op_params.h"
#include "common/registry.h"
#include "common/tensor.h"

namespace common::eval {

using Outputs = std::vector<Tensor>;

/// What a kernel sees: the node, its (possibly omitted) inputs and the default-domain opset.
/// Input tensors come from `in`/`need`, not from the graph's records of the node's inputs.
class Ctx : private NodeView {
 public:
  Ctx(const Graph& graph, const Node& node, const std::vector<const Tensor*>& inputs, int64_t opset)
      : NodeView(graph, node), inputs_(inputs), opset_(opset) {}

  using NodeView::at;
  using NodeView::error;
  using NodeView::graph;
  using NodeView::node;

  const std::vector<const Tensor*>& inputs() const { return inputs_; }
  int64_t opset() const { return opset_; }
  /// Input i, or null when omitted.
  const Tensor* in(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  /// Input i, or an error naming it when omitted.
  Result<const Tensor*> need(size_t i) const;
  /// Number of outputs the node declares (at least 1).
  size_t num_outputs() const { return node().outputs.empty() ? 1 : node().outputs.size(); }

 private:
  const std::vector<const Tensor*>& inputs_;
  int64_t opset_;
};

using Kernel = Result<Outputs> (*)(const Ctx&);

struct KernelInfo {
  Kernel fn = nullptr;
  /// float16/bfloat16 inputs are computed in float: inputs are widened, float outputs narrowed.
  bool half_via_float = false;
};

using KernelRegistry = common::Registry<KernelInfo>;
/// The evaluator's kernels, registered by the family files below.
const KernelRegistry& registry();

// One registration function per family (common/ADDING_AN_OP.md); a family's kernels live in
// eval/<family>.cc, and in eval/<family>_<part>.cc where one file would grow too long.
void register_elementwise(KernelRegistry& r);        // binary, variadic, Where, Clip, PRelu, Trilu
void register_elementwise_unary(KernelRegistry& r);  // unary math, Shrink, predicates
void register_elementwise_cast(KernelRegistry& r);   // Cast, CastLike
void register_activation(KernelRegistry& r);         // Relu, Sigmoid, ..., Softmax family
void register_shape(KernelRegistry& r);      // Reshape, Concat, Transpose, Identity, Dropout, ...
void register_generator(KernelRegistry& r);  // Constant, Shape, Size, Range, ConstantOfShape, ...
void register_index(KernelRegistry& r);
void register_reduce(KernelRegistry& r);  // Reduce*, ArgMax, ArgMin, CumSum, TopK
void register_linalg(KernelRegistry& r);  // MatMul, Gemm
void register_resize(KernelRegistry& r);  // Resize, Upsample, AffineGrid
void register_conv(KernelRegistry& r);    // Conv, ConvTranspose, Col2Im
void register_pool(KernelRegistry& r);    // MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool
void register_norm(KernelRegistry& r);    // the normalizations
void register_quant(KernelRegistry& r);   // QuantizeLinear, DequantizeLinear

// ---- shapes and axes ----

/// Row-major strides in elements.
Dims strides_of(const Dims& dims);
/// Product of dims[from, to).
inline int64_t prod(const Dims& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= d[i];
  return p;
}
/// Integer contents of a tensor (any integer dtype).
std::vector<int64_t> ints_of(const Tensor& t);
/// common::ints_input_or_attr on input `index` (new opsets) or attribute `attr` (old opsets).
Result<std::optional<std::vector<int64_t>>> ints_input_or_attr(const Ctx& c, size_t index,
                                                               std::string_view attr);
/// Output shape of a multi-input broadcast, or an error naming both shapes.
Result<Dims> broadcast_all(const Ctx& c, const std::vector<const Tensor*>& ts);
std::string dims_str(const Dims& d);
/// Largest output the evaluator builds (elements); protects against shapes made of huge values.
constexpr int64_t kMaxElements = int64_t{1} << 31;
/// Error unless `dims` are non-negative and hold at most kMaxElements elements.
Status check_size(const Ctx& c, const Dims& dims);
/// Empty tensor of dtype and dims with zeroed bytes.
Tensor make_tensor(DType dtype, Dims dims);
/// Scalar helpers for reading a single element of any numeric dtype.
double scalar_double(const Tensor& t, int64_t i = 0);
int64_t scalar_int(const Tensor& t, int64_t i = 0);
/// Element conversion between any two numeric dtypes (ONNX Cast semantics).
Result<Tensor> cast_tensor(const Ctx& c, const Tensor& t, DType to);

/// Increments a row-major multi-index over `dims`; false once it wraps around.
inline bool next_index(std::vector<int64_t>& idx, const Dims& dims) {
  for (size_t k = dims.size(); k-- > 0;) {
    if (++idx[k] < dims[k]) return true;
    idx[k] = 0;
  }
  return false;
}

// ---- element type dispatch ----

template <class T>
struct Tag {
  using type = T;
};

/// Calls f(Tag<T>{}) with T the C++ type of dtype; bool is uint8_t (one byte, 0/1). float16 and
/// bfloat16 are not visited (kernels see them widened to float). Unknown dtypes give an error.
template <class F>
auto visit_numeric(const Ctx& c, DType t, F&& f) -> decltype(f(Tag<float>{})) {
  switch (t) {
    case DType::kFloat:
      return f(Tag<float>{});
    case DType::kDouble:
      return f(Tag<double>{});
    case DType::kInt64:
      return f(Tag<int64_t>{});
    case DType::kInt32:
      return f(Tag<int32_t>{});
    case DType::kInt16:
      return f(Tag<int16_t>{});
    case DType::kInt8:
      return f(Tag<int8_t>{});
    case DType::kUInt64:
      return f(Tag<uint64_t>{});
    case DType::kUInt32:
      return f(Tag<uint32_t>{});
    case DType::kUInt16:
      return f(Tag<uint16_t>{});
    case DType::kUInt8:
    case DType::kBool:
      return f(Tag<uint8_t>{});
    default:
      return c.error("unsupported element type " + std::string(dtype_name(t)));
  }
}

/// Like visit_numeric but only float and double.
template <class F>
auto visit_floating(const Ctx& c, DType t, F&& f) -> decltype(f(Tag<float>{})) {
  if (t == DType::kFloat) return f(Tag<float>{});
  if (t == DType::kDouble) return f(Tag<double>{});
  return c.error("expected a floating-point input, got " + std::string(dtype_name(t)));
}

/// Accumulator for sums: double for floating types, the type itself for integers.
template <class T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;

/// Elements of a tensor of type T converted to U.
template <class T, class U = T>
std::vector<U> values_as(const Tensor& t) {
  auto s = t.span<T>();
  return std::vector<U>(s.begin(), s.end());
}

// ---- unary kernels (elementwise_unary.cc, activation.cc) ----

/// y = f(x) elementwise for float/double inputs.
template <class F>
Result<Outputs> unary_float(const Ctx& c, F f) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  return visit_floating(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    Tensor out = *x;
    for (T& v : out.mutable_span<T>()) v = static_cast<T>(f(v));
    return Outputs{std::move(out)};
  });
}

/// y = f(x) elementwise for any numeric input (integers wrap).
template <class F>
Result<Outputs> unary_num(const Ctx& c, F f) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  if (x->dtype == DType::kBool) return c.error("bool input is not supported");
  return visit_numeric(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    Tensor out = *x;
    for (T& v : out.mutable_span<T>()) v = static_cast<T>(f(v));
    return Outputs{std::move(out)};
  });
}

/// Attribute as the element type T, read as float like onnxruntime does.
template <class T>
T attr_t(const Ctx& c, std::string_view name, float fallback) {
  return static_cast<T>(c.node().attr_float(name, fallback));
}

}  // namespace common::eval

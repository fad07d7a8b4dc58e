// QuantizeLinear and DequantizeLinear (per-tensor, or per-axis with a 1-D scale from opset 13).
#include <algorithm>
#include <cmath>
#include <limits>

#include "common/eval/kernels.h"

namespace common::eval {
namespace {

/// For each element of x, the index into a per-axis parameter (0 when per-tensor).
Result<std::vector<int64_t>> param_index(const Ctx& c, const Tensor& x, const Tensor& scale) {
  std::vector<int64_t> index(std::max<int64_t>(x.numel(), 0), 0);
  if (scale.numel() == 1) return index;
  if (scale.dims.size() != 1) return c.error("blocked quantization is not supported");
  auto rank = static_cast<int64_t>(x.dims.size());
  ASSIGN_OR_RETURN(int64_t axis, c.at(normalize_axis(c.node().attr_int("axis", 1), rank)));
  if (x.dims[axis] != scale.numel()) return c.error("scale length does not match the axis");
  int64_t inner = strides_of(x.dims)[axis];
  for (size_t i = 0; i < index.size(); ++i)
    index[i] = (static_cast<int64_t>(i) / inner) % x.dims[axis];
  return index;
}

}  // namespace

/// y = saturate(round_half_even(x / scale) + zero_point), computed in float.
Result<Outputs> quantize_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* scale, c.need(1));
  const Tensor* zp = c.in(2);
  DType out = zp ? zp->dtype : DType::kUInt8;
  ASSIGN_OR_RETURN(auto index, param_index(c, *x, *scale));
  return visit_numeric(c, out, [&]<class Q>(Tag<Q>) -> Result<Outputs> {
    if constexpr (!std::is_integral_v<Q>) {
      return c.error("unsupported quantized type");
    } else {
      Tensor y = make_tensor(out, x->dims);
      auto o = y.mutable_span<Q>();
      for (size_t i = 0; i < o.size(); ++i) {
        auto xi = static_cast<float>(scalar_double(*x, static_cast<int64_t>(i)));
        auto s = static_cast<float>(scalar_double(*scale, index[i]));
        float q = std::nearbyint(xi / s) + (zp ? static_cast<float>(scalar_int(*zp, index[i])) : 0);
        q = std::clamp<float>(q, std::numeric_limits<Q>::lowest(), std::numeric_limits<Q>::max());
        o[i] = static_cast<Q>(q);
      }
      return Outputs{std::move(y)};
    }
  });
}

/// y = (x - zero_point) * scale in the scale's type.
Result<Outputs> dequantize_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* scale, c.need(1));
  const Tensor* zp = c.in(2);
  ASSIGN_OR_RETURN(auto index, param_index(c, *x, *scale));
  Tensor y = make_tensor(DType::kFloat, x->dims);
  auto o = y.mutable_span<float>();
  for (size_t i = 0; i < o.size(); ++i) {
    int64_t v = scalar_int(*x, static_cast<int64_t>(i)) - (zp ? scalar_int(*zp, index[i]) : 0);
    o[i] = static_cast<float>(v) * static_cast<float>(scalar_double(*scale, index[i]));
  }
  if (scale->dtype == DType::kFloat) return Outputs{std::move(y)};
  ASSIGN_OR_RETURN(Tensor cast, cast_tensor(c, y, scale->dtype));
  return Outputs{std::move(cast)};
}

void register_quant(KernelRegistry& r) {
  r.add("QuantizeLinear", {quantize_kernel});
  r.add("DequantizeLinear", {dequantize_kernel});
}

}  // namespace common::eval

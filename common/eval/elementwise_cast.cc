// Cast and CastLike: element conversion between every numeric dtype, float16/bfloat16 included.
#include <cmath>
#include <limits>

#include "common/eval/kernels.h"

namespace common::eval {
namespace {

// Storage tags for the 16-bit float formats and for bool (one byte, 0/1).
struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};
struct Bool8 {
  uint8_t v;
};

template <class F>
auto visit_castable(const Ctx& c, DType t, F&& f) -> decltype(f(Tag<float>{})) {
  switch (t) {
    case DType::kFloat16:
      return f(Tag<F16>{});
    case DType::kBFloat16:
      return f(Tag<BF16>{});
    case DType::kBool:
      return f(Tag<Bool8>{});
    case DType::kUInt8:
      return f(Tag<uint8_t>{});
    default:
      return visit_numeric(c, t, std::forward<F>(f));
  }
}

/// Widens a source element to a plain arithmetic type.
template <class S>
auto widen(S v) {
  if constexpr (std::is_same_v<S, F16>) {
    return half_to_float(v.bits);
  } else if constexpr (std::is_same_v<S, BF16>) {
    return bfloat16_to_float(v.bits);
  } else if constexpr (std::is_same_v<S, Bool8>) {
    return static_cast<uint8_t>(v.v != 0);
  } else {
    return v;
  }
}

/// Floating value to integer type D as onnxruntime on x86-64 does it: truncation toward zero
/// through a 32-bit conversion for types up to int32 (NaN and out-of-range give INT32_MIN) and a
/// 64-bit one otherwise (INT64_MIN), then wrap-around to D's width. Measured with onnxruntime
/// 1.30: float [300.7, -129.5, NaN, 1e20, -1.9] -> int8 [44, 127, 0, 0, -1], -> int32
/// [300, -129, INT32_MIN, INT32_MIN, -1].
template <class D, class F>
D float_to_int(F f) {
  if constexpr (sizeof(D) < 4 || std::is_same_v<D, int32_t>) {
    if (!(f > -2147483649.0 && f < 2147483648.0)) return static_cast<D>(INT32_MIN);
    return static_cast<D>(static_cast<int32_t>(f));
  } else if constexpr (std::is_same_v<D, uint64_t>) {
    if (f >= 0 && f < 18446744073709551616.0) return static_cast<D>(f);
    return static_cast<D>(float_to_int<int64_t>(f));
  } else {
    if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0))
      return static_cast<D>(INT64_MIN);
    return static_cast<D>(static_cast<int64_t>(f));
  }
}

template <class D, class S>
D convert(S s) {
  auto v = widen(s);
  using V = decltype(v);
  if constexpr (std::is_same_v<D, Bool8>) {
    return Bool8{static_cast<uint8_t>(v != V(0))};
  } else if constexpr (std::is_same_v<D, F16>) {
    return F16{float_to_half(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<D, BF16>) {
    return BF16{float_to_bfloat16(static_cast<float>(v))};
  } else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<V>) {
    return float_to_int<D>(v);
  } else {
    return static_cast<D>(v);
  }
}

Result<Outputs> cast_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  int64_t to = c.node().attr_int("to", 0);
  if (!is_known_dtype(static_cast<int32_t>(to))) return c.error("unknown 'to' type");
  ASSIGN_OR_RETURN(Tensor y, cast_tensor(c, *x, static_cast<DType>(to)));
  return Outputs{std::move(y)};
}

Result<Outputs> cast_like_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* like, c.need(1));
  ASSIGN_OR_RETURN(Tensor y, cast_tensor(c, *x, like->dtype));
  return Outputs{std::move(y)};
}

}  // namespace

Result<Tensor> cast_tensor(const Ctx& c, const Tensor& t, DType to) {
  if (t.dtype == to) return t;
  Tensor out = make_tensor(to, t.dims);
  int64_t n = t.numel();
  Status st = visit_castable(c, t.dtype, [&]<class S>(Tag<S>) -> Status {
    return visit_castable(c, to, [&]<class D>(Tag<D>) -> Status {
      static_assert(sizeof(S) == sizeof(typename Tag<S>::type));
      const auto* src = reinterpret_cast<const S*>(t.raw.data());
      auto* dst = reinterpret_cast<D*>(out.raw.data());
      for (int64_t i = 0; i < n; ++i) dst[i] = convert<D>(src[i]);
      return {};
    });
  });
  if (!st.ok()) return st.error();
  return out;
}

void register_elementwise_cast(KernelRegistry& r) {
  r.add("Cast", {cast_kernel, false});
  r.add("CastLike", {cast_like_kernel, false});
}

}  // namespace common::eval

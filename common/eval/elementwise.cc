// Broadcasting elementwise ops: arithmetic, comparisons, logic, variadic Max/Min/Sum/Mean, Where,
// Clip, PRelu, Trilu. Integer arithmetic wraps modulo 2^bits (as onnxruntime does on two's
// complement).
#include <cmath>
#include <cstring>
#include <limits>

#include "common/eval/kernels.h"

namespace common::eval {
namespace {

/// out[i] = f(a[ia], b[ib]) over the broadcast of a and b.
template <class T, class O, class F>
Tensor binary_map(const Tensor& a, const Tensor& b, const Dims& out_dims, DType out_dtype, F f) {
  Tensor out = make_tensor(out_dtype, out_dims);
  const T* pa = reinterpret_cast<const T*>(a.raw.data());
  const T* pb = reinterpret_cast<const T*>(b.raw.data());
  O* po = reinterpret_cast<O*>(out.raw.data());
  int64_t n = out.numel();
  if (a.dims == out_dims && b.dims == out_dims) {
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
  } else if (a.dims == out_dims && b.numel() == 1) {
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[0]);
  } else {
    auto ma = broadcast_map(a.dims, out_dims);
    auto mb = broadcast_map(b.dims, out_dims);
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[ma[i]], pb[mb[i]]);
  }
  return out;
}

/// Wrapping integer arithmetic (signed overflow is undefined in C++, so go through unsigned).
template <class T, class F>
T wrap(T x, T y, F f) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(f(static_cast<U>(x), static_cast<U>(y))));
  } else {
    return f(x, y);
  }
}

struct AddOp {
  template <class T>
  T operator()(T x, T y) const {
    return wrap(x, y, [](auto p, auto q) { return p + q; });
  }
};
struct SubOp {
  template <class T>
  T operator()(T x, T y) const {
    return wrap(x, y, [](auto p, auto q) { return p - q; });
  }
};
struct MulOp {
  template <class T>
  T operator()(T x, T y) const {
    return wrap(x, y, [](auto p, auto q) { return p * q; });
  }
};
struct DivOp {  // integer division truncates toward zero; the divisor is checked non-zero first
  template <class T>
  T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      if (y == -1) return wrap(T(0), x, [](auto p, auto q) { return p - q; });
    }
    return static_cast<T>(x / y);
  }
};
struct MaxOp {
  template <class T>
  T operator()(T x, T y) const {
    return x >= y || x != x ? x : y;
  }
};
struct MinOp {
  template <class T>
  T operator()(T x, T y) const {
    return x <= y || x != x ? x : y;
  }
};

/// Mod: fmod=1 keeps the dividend's sign (C fmod); fmod=0 the divisor's (Python %).
template <class T>
T mod_value(T x, T y, bool c_style) {
  if constexpr (std::is_floating_point_v<T>) {
    T r = std::fmod(x, y);
    if (!c_style && r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
  } else if constexpr (std::is_signed_v<T>) {
    if (y == -1) return 0;
    T r = static_cast<T>(x % y);
    if (!c_style && r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
    return r;
  } else {
    return static_cast<T>(x % y);
  }
}

Result<std::pair<const Tensor*, const Tensor*>> two_same_type(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* a, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* b, c.need(1));
  if (a->dtype != b->dtype)
    return c.error("input types differ: " + std::string(dtype_name(a->dtype)) + " and " +
                   std::string(dtype_name(b->dtype)));
  return std::make_pair(a, b);
}

template <class Op>
Result<Outputs> arith(const Ctx& c) {
  ASSIGN_OR_RETURN(auto ab, two_same_type(c));
  const Tensor* a = ab.first;
  const Tensor* b = ab.second;
  ASSIGN_OR_RETURN(Dims dims, broadcast_all(c, {a, b}));
  if constexpr (std::is_same_v<Op, DivOp>) {
    if (is_integer(b->dtype) || b->dtype == DType::kBool)  // bool divides as uint8
      for (int64_t i = 0; i < b->numel(); ++i)
        if (scalar_int(*b, i) == 0) return c.error("integer division by zero");
  }
  return visit_numeric(c, a->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    return Outputs{binary_map<T, T>(*a, *b, dims, a->dtype, Op{})};
  });
}

Result<Outputs> mod_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(auto ab, two_same_type(c));
  const Tensor* a = ab.first;
  const Tensor* b = ab.second;
  ASSIGN_OR_RETURN(Dims dims, broadcast_all(c, {a, b}));
  bool c_style = c.node().attr_int("fmod", 0) != 0;
  if (!c_style && is_floating(a->dtype)) return c.error("fmod must be 1 for floating-point inputs");
  if (is_integer(b->dtype))
    for (int64_t i = 0; i < b->numel(); ++i)
      if (scalar_int(*b, i) == 0) return c.error("integer modulo by zero");
  return visit_numeric(c, a->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    return Outputs{binary_map<T, T>(*a, *b, dims, a->dtype,
                                    [&](T x, T y) { return mod_value(x, y, c_style); })};
  });
}

/// Pow(X, Y): the result has X's type. Float bases compute in their own type with the exponent
/// converted to it; integer bases compute in double and convert back.
Result<Outputs> pow_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* a, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* b, c.need(1));
  ASSIGN_OR_RETURN(Dims dims, broadcast_all(c, {a, b}));
  DType work = is_floating(a->dtype) ? a->dtype : DType::kDouble;
  ASSIGN_OR_RETURN(Tensor x, cast_tensor(c, *a, work));
  ASSIGN_OR_RETURN(Tensor y, cast_tensor(c, *b, work));
  return visit_floating(c, work, [&]<class T>(Tag<T>) -> Result<Outputs> {
    Tensor out = binary_map<T, T>(x, y, dims, work, [](T p, T q) { return std::pow(p, q); });
    ASSIGN_OR_RETURN(Tensor r, cast_tensor(c, out, a->dtype));
    return Outputs{std::move(r)};
  });
}

template <class Cmp>
Result<Outputs> compare(const Ctx& c) {
  ASSIGN_OR_RETURN(auto ab, two_same_type(c));
  const Tensor* a = ab.first;
  const Tensor* b = ab.second;
  ASSIGN_OR_RETURN(Dims dims, broadcast_all(c, {a, b}));
  return visit_numeric(c, a->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    return Outputs{binary_map<T, uint8_t>(*a, *b, dims, DType::kBool,
                                          [](T x, T y) { return uint8_t(Cmp{}(x, y)); })};
  });
}

/// Bool (And/Or/Xor) and integer bitwise ops share this: f works on the raw integer values.
template <class F>
Result<Outputs> bitwise(const Ctx& c, bool bool_only, F f) {
  ASSIGN_OR_RETURN(auto ab, two_same_type(c));
  const Tensor* a = ab.first;
  const Tensor* b = ab.second;
  if (bool_only && a->dtype != DType::kBool) return c.error("expected bool inputs");
  if (!bool_only && !is_integer(a->dtype)) return c.error("expected integer inputs");
  ASSIGN_OR_RETURN(Dims dims, broadcast_all(c, {a, b}));
  return visit_numeric(c, a->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    if constexpr (std::is_integral_v<T>) {
      return Outputs{
          binary_map<T, T>(*a, *b, dims, a->dtype, [&](T x, T y) { return T(f(x, y)); })};
    } else {
      return c.error("expected integer inputs");
    }
  });
}

Result<Outputs> bitshift_kernel(const Ctx& c) {
  bool left = c.node().attr_string("direction", "") == "LEFT";
  return bitwise(c, false, [left](auto x, auto y) -> decltype(x) {
    if (y >= static_cast<decltype(y)>(sizeof(x) * 8)) return 0;
    return left ? static_cast<decltype(x)>(x << y) : static_cast<decltype(x)>(x >> y);
  });
}

/// Max/Min/Sum/Mean: a left fold of the binary op over all inputs, with broadcasting.
template <class Op>
Result<Outputs> variadic(const Ctx& c, bool mean) {
  if (c.inputs().empty() || c.in(0) == nullptr) return c.error("needs at least one input");
  Tensor acc = *c.in(0);
  for (size_t i = 1; i < c.inputs().size(); ++i) {
    ASSIGN_OR_RETURN(const Tensor* t, c.need(i));
    if (t->dtype != acc.dtype) return c.error("input types differ");
    ASSIGN_OR_RETURN(Dims dims, broadcast_all(c, {&acc, t}));
    ASSIGN_OR_RETURN(acc, visit_numeric(c, acc.dtype, [&]<class T>(Tag<T>) -> Result<Tensor> {
                       return binary_map<T, T>(acc, *t, dims, acc.dtype, Op{});
                     }));
  }
  if (!mean) return Outputs{std::move(acc)};
  auto n = static_cast<double>(c.inputs().size());
  RETURN_IF_ERROR(visit_floating(c, acc.dtype, [&]<class T>(Tag<T>) -> Status {
    for (T& v : acc.mutable_span<T>()) v = static_cast<T>(v / static_cast<T>(n));
    return {};
  }));
  return Outputs{std::move(acc)};
}

/// Where(cond, X, Y): element bytes picked from X or Y over the broadcast of all three.
Result<Outputs> where_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* cond, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* x, c.need(1));
  ASSIGN_OR_RETURN(const Tensor* y, c.need(2));
  if (x->dtype != y->dtype) return c.error("X and Y types differ");
  ASSIGN_OR_RETURN(Dims dims, broadcast_all(c, {cond, x, y}));
  Tensor out = make_tensor(x->dtype, dims);
  auto mc = broadcast_map(cond->dims, dims);
  auto mx = broadcast_map(x->dims, dims);
  auto my = broadcast_map(y->dims, dims);
  size_t es = dtype_size(x->dtype);
  for (size_t i = 0; i < mc.size(); ++i) {
    bool pick_x = scalar_int(*cond, mc[i]) != 0;
    const char* src = pick_x ? x->raw.data() + mx[i] * es : y->raw.data() + my[i] * es;
    std::memcpy(out.raw.data() + i * es, src, es);
  }
  return Outputs{std::move(out)};
}

/// Clip: bounds are attributes before opset 11, optional scalar inputs from 11.
Result<Outputs> clip_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  return visit_numeric(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    T lo = std::numeric_limits<T>::lowest();
    T hi = std::numeric_limits<T>::max();
    if (c.opset() < 11 && c.node().has_attr("min"))
      lo = static_cast<T>(c.node().attr_float("min", 0));
    if (c.opset() < 11 && c.node().has_attr("max"))
      hi = static_cast<T>(c.node().attr_float("max", 0));
    if (const Tensor* t = c.in(1); t && t->numel() > 0) lo = t->span<T>()[0];
    if (const Tensor* t = c.in(2); t && t->numel() > 0) hi = t->span<T>()[0];
    Tensor out = *x;
    for (T& v : out.mutable_span<T>()) v = v < lo ? lo : (v > hi ? hi : v);
    return Outputs{std::move(out)};
  });
}

/// PRelu(X, slope): slope broadcasts to X.
Result<Outputs> prelu_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(auto ab, two_same_type(c));
  const Tensor* a = ab.first;
  const Tensor* b = ab.second;
  ASSIGN_OR_RETURN(Dims dims, broadcast_all(c, {a, b}));
  return visit_numeric(c, a->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    return Outputs{
        binary_map<T, T>(*a, *b, dims, a->dtype, [](T x, T s) { return x < T(0) ? T(s * x) : x; })};
  });
}

/// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two dims.
Result<Outputs> trilu_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  if (x->dims.size() < 2) return c.error("input must have rank >= 2");
  int64_t k = c.in(1) ? scalar_int(*c.in(1)) : 0;
  bool upper = c.node().attr_int("upper", 1) != 0;
  int64_t rows = x->dims[x->dims.size() - 2], cols = x->dims.back();
  Tensor out = *x;
  size_t es = dtype_size(x->dtype);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t col = i % cols, row = (i / cols) % rows;
    bool keep = upper ? col - row >= k : col - row <= k;
    if (!keep) std::memset(out.raw.data() + i * es, 0, es);
  }
  return Outputs{std::move(out)};
}

}  // namespace

void register_elementwise(KernelRegistry& r) {
  r.add("Add", {arith<AddOp>, true});
  r.add("Sub", {arith<SubOp>, true});
  r.add("Mul", {arith<MulOp>, true});
  r.add("Div", {arith<DivOp>, true});
  r.add("Mod", {mod_kernel, true});
  r.add("Pow", {pow_kernel, true});
  r.add("Equal", {compare<std::equal_to<>>, true});
  r.add("Less", {compare<std::less<>>, true});
  r.add("LessOrEqual", {compare<std::less_equal<>>, true});
  r.add("Greater", {compare<std::greater<>>, true});
  r.add("GreaterOrEqual", {compare<std::greater_equal<>>, true});
  r.add("And",
        {[](const Ctx& c) { return bitwise(c, true, [](auto x, auto y) { return x && y; }); }});
  r.add("Or",
        {[](const Ctx& c) { return bitwise(c, true, [](auto x, auto y) { return x || y; }); }});
  r.add("Xor",
        {[](const Ctx& c) { return bitwise(c, true, [](auto x, auto y) { return !x != !y; }); }});
  r.add("BitwiseAnd", {[](const Ctx& c) { return bitwise(c, false, std::bit_and<>{}); }});
  r.add("BitwiseOr", {[](const Ctx& c) { return bitwise(c, false, std::bit_or<>{}); }});
  r.add("BitwiseXor", {[](const Ctx& c) { return bitwise(c, false, std::bit_xor<>{}); }});
  r.add("BitShift", {bitshift_kernel});
  r.add("Max", {[](const Ctx& c) { return variadic<MaxOp>(c, false); }, true});
  r.add("Min", {[](const Ctx& c) { return variadic<MinOp>(c, false); }, true});
  r.add("Sum", {[](const Ctx& c) { return variadic<AddOp>(c, false); }, true});
  r.add("Mean", {[](const Ctx& c) { return variadic<AddOp>(c, true); }, true});
  r.add("Where", {where_kernel});
  r.add("Clip", {clip_kernel, true});
  r.add("PRelu", {prelu_kernel, true});
  r.add("Trilu", {trilu_kernel});
}

}  // namespace common::eval

// Unary math (Floor ... Erf, Neg, Abs, Sign, Shrink) and predicates (IsNaN, IsInf, Not,
// BitwiseNot), computed in the element type (float in float). Activations are in
// activation.cc.
#include <cmath>

#include "common/eval/kernels.h"

namespace common::eval {
namespace {

/// bool y = f(x) elementwise for float/double inputs.
template <class F>
Result<Outputs> predicate_float(const Ctx& c, F f) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  return visit_floating(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    Tensor out = make_tensor(DType::kBool, x->dims);
    auto in = x->span<T>();
    auto o = out.mutable_span<uint8_t>();
    for (size_t i = 0; i < in.size(); ++i) o[i] = f(in[i]) ? 1 : 0;
    return Outputs{std::move(out)};
  });
}

template <class T>
T negate(T x) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(U(0) - static_cast<U>(x));
  } else {
    return -x;
  }
}

void register_plain(KernelRegistry& r) {
#define FLOAT_UNARY(NAME, EXPR) \
  r.add(NAME, {[](const Ctx& c) { return unary_float(c, [](auto x) { return EXPR; }); }, true})
  FLOAT_UNARY("Floor", std::floor(x));
  FLOAT_UNARY("Ceil", std::ceil(x));
  FLOAT_UNARY("Round", std::nearbyint(x));  // half to even in the default rounding mode
  FLOAT_UNARY("Sqrt", std::sqrt(x));
  FLOAT_UNARY("Reciprocal", decltype(x)(1) / x);
  FLOAT_UNARY("Exp", std::exp(x));
  FLOAT_UNARY("Log", std::log(x));
  FLOAT_UNARY("Sin", std::sin(x));
  FLOAT_UNARY("Cos", std::cos(x));
  FLOAT_UNARY("Tan", std::tan(x));
  FLOAT_UNARY("Asin", std::asin(x));
  FLOAT_UNARY("Acos", std::acos(x));
  FLOAT_UNARY("Atan", std::atan(x));
  FLOAT_UNARY("Sinh", std::sinh(x));
  FLOAT_UNARY("Cosh", std::cosh(x));
  FLOAT_UNARY("Asinh", std::asinh(x));
  FLOAT_UNARY("Acosh", std::acosh(x));
  FLOAT_UNARY("Atanh", std::atanh(x));
  FLOAT_UNARY("Erf", std::erf(x));
#undef FLOAT_UNARY
#define NUM_UNARY(NAME, EXPR) \
  r.add(NAME, {[](const Ctx& c) { return unary_num(c, [](auto x) { return EXPR; }); }, true})
  NUM_UNARY("Neg", negate(x));
  NUM_UNARY("Abs", x < decltype(x)(0) ? negate(x) : x);
  NUM_UNARY("Sign", x > decltype(x)(0) ? 1 : (x < decltype(x)(0) ? -1 : 0));
#undef NUM_UNARY
}

void register_shrink(KernelRegistry& r) {
  r.add("Shrink", {[](const Ctx& c) {
                     return unary_float(c, [&]<class T>(T x) {
                       T lambd = attr_t<T>(c, "lambd", 0.5f), bias = attr_t<T>(c, "bias", 0.0f);
                       return x < -lambd ? x + bias : (x > lambd ? x - bias : T(0));
                     });
                   },
                   true});
}

void register_predicates(KernelRegistry& r) {
  r.add("IsNaN",
        {[](const Ctx& c) { return predicate_float(c, [](auto x) { return x != x; }); }, true});
  r.add("IsInf", {[](const Ctx& c) {
                    bool neg = c.node().attr_int("detect_negative", 1) != 0;
                    bool pos = c.node().attr_int("detect_positive", 1) != 0;
                    return predicate_float(c, [&](auto x) {
                      return std::isinf(x) && ((x > 0 && pos) || (x < 0 && neg));
                    });
                  },
                  true});
  r.add("BitwiseNot", {[](const Ctx& c) -> Result<Outputs> {
          ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
          if (!is_integer(x->dtype)) return c.error("expected an integer input");
          return unary_num(c, [](auto x) -> decltype(x) {
            if constexpr (std::is_integral_v<decltype(x)>) return static_cast<decltype(x)>(~x);
            return x;  // floats were rejected above
          });
        }});
  r.add("Not", {[](const Ctx& c) -> Result<Outputs> {
          ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
          if (x->dtype != DType::kBool) return c.error("expected a bool input");
          Tensor out = *x;
          for (uint8_t& v : out.mutable_span<uint8_t>()) v = v ? 0 : 1;
          return Outputs{std::move(out)};
        }});
}

}  // namespace

void register_elementwise_unary(KernelRegistry& r) {
  register_plain(r);
  register_shrink(r);
  register_predicates(r);
}

}  // namespace common::eval

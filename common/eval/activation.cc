// Activations: Relu, Sigmoid, Tanh, Softplus, Softsign, Mish, HardSwish, the parametric ones
// (LeakyRelu, Elu, Selu, Celu, HardSigmoid, ThresholdedRelu, Gelu) and the softmax family
// (Softmax, LogSoftmax, Hardmax), computed in the element type (float in float); softmax sums
// accumulate in double.
#include <algorithm>
#include <cmath>

#include "common/eval/kernels.h"

namespace common::eval {
namespace {

void register_plain_activations(KernelRegistry& r) {
#define FLOAT_UNARY(NAME, EXPR) \
  r.add(NAME, {[](const Ctx& c) { return unary_float(c, [](auto x) { return EXPR; }); }, true})
  FLOAT_UNARY("Sigmoid", decltype(x)(1) / (decltype(x)(1) + std::exp(-x)));
  FLOAT_UNARY("Tanh", std::tanh(x));
  FLOAT_UNARY("Softplus", std::log(std::exp(x) + decltype(x)(1)));
  FLOAT_UNARY("Softsign", x / (decltype(x)(1) + std::abs(x)));
  FLOAT_UNARY("Mish", x * std::tanh(std::log1p(std::exp(x))));
  FLOAT_UNARY("HardSwish",
              x * std::max(decltype(x)(0),
                           std::min(decltype(x)(1), x / decltype(x)(6) + decltype(x)(0.5))));
#undef FLOAT_UNARY
#define NUM_UNARY(NAME, EXPR) \
  r.add(NAME, {[](const Ctx& c) { return unary_num(c, [](auto x) { return EXPR; }); }, true})
  NUM_UNARY("Relu", x > decltype(x)(0) ? x : decltype(x)(0));
#undef NUM_UNARY
}

void register_parametric(KernelRegistry& r) {
  r.add("LeakyRelu", {[](const Ctx& c) {
                        return unary_float(c, [&]<class T>(T x) {
                          return x < 0 ? attr_t<T>(c, "alpha", 0.01f) * x : x;
                        });
                      },
                      true});
  r.add("Elu", {[](const Ctx& c) {
                  return unary_float(c, [&]<class T>(T x) {
                    return x < 0 ? attr_t<T>(c, "alpha", 1.0f) * (std::exp(x) - T(1)) : x;
                  });
                },
                true});
  r.add("Selu", {[](const Ctx& c) {
                   return unary_float(c, [&]<class T>(T x) {
                     T alpha = attr_t<T>(c, "alpha", 1.67326319217681884765625f);
                     T gamma = attr_t<T>(c, "gamma", 1.05070102214813232421875f);
                     return x > 0 ? gamma * x : gamma * (alpha * std::exp(x) - alpha);
                   });
                 },
                 true});
  r.add("Celu", {[](const Ctx& c) {
                   return unary_float(c, [&]<class T>(T x) {
                     T alpha = attr_t<T>(c, "alpha", 1.0f);
                     return std::max(T(0), x) +
                            std::min(T(0), alpha * (std::exp(x / alpha) - T(1)));
                   });
                 },
                 true});
  r.add("HardSigmoid", {[](const Ctx& c) {
                          return unary_float(c, [&]<class T>(T x) {
                            T y = attr_t<T>(c, "alpha", 0.2f) * x + attr_t<T>(c, "beta", 0.5f);
                            return std::max(T(0), std::min(T(1), y));
                          });
                        },
                        true});
  r.add("ThresholdedRelu", {[](const Ctx& c) {
                              return unary_float(c, [&]<class T>(T x) {
                                return x > attr_t<T>(c, "alpha", 1.0f) ? x : T(0);
                              });
                            },
                            true});
  r.add("Gelu", {[](const Ctx& c) {
                   bool tanh_form = c.node().attr_string("approximate", "none") == "tanh";
                   return unary_float(c, [&]<class T>(T x) {
                     if (tanh_form) {
                       T k = static_cast<T>(std::sqrt(2.0 / M_PI));
                       return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
                     }
                     return T(0.5) * x * (T(1) + std::erf(x / static_cast<T>(M_SQRT2)));
                   });
                 },
                 true});
}

enum class SKind { kSoftmax, kLogSoftmax, kHardmax };

/// Softmax family: before opset 13 the input is coerced to 2-D at axis (default 1); from 13 it
/// works along one axis (default -1).
template <SKind K>
Result<Outputs> softmax_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  auto rank = static_cast<int64_t>(x->dims.size());
  bool legacy = c.opset() < 13;
  int64_t axis_attr = c.node().attr_int("axis", legacy ? 1 : -1);
  if (legacy && axis_attr == rank) axis_attr = rank - 1;  // coerced [N, 1] shape is fine too
  ASSIGN_OR_RETURN(int64_t axis, c.at(normalize_axis(axis_attr, rank)));
  int64_t outer = prod(x->dims, 0, axis);
  int64_t n = legacy ? prod(x->dims, axis, rank) : x->dims[axis];
  int64_t inner = legacy ? 1 : prod(x->dims, axis + 1, rank);
  return visit_floating(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    Tensor out = *x;
    auto o = out.mutable_span<T>();
    for (int64_t a = 0; a < outer; ++a) {
      for (int64_t b = 0; b < inner; ++b) {
        T* p = o.data() + a * n * inner + b;
        T mx = -INFINITY;
        int64_t arg = 0;
        for (int64_t k = 0; k < n; ++k)
          if (p[k * inner] > mx) mx = p[k * inner], arg = k;
        if constexpr (K == SKind::kHardmax) {
          for (int64_t k = 0; k < n; ++k) p[k * inner] = k == arg ? T(1) : T(0);
          continue;
        }
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) sum += std::exp(static_cast<double>(p[k * inner] - mx));
        for (int64_t k = 0; k < n; ++k) {
          T& v = p[k * inner];
          if constexpr (K == SKind::kSoftmax) v = static_cast<T>(std::exp(double(v - mx)) / sum);
          if constexpr (K == SKind::kLogSoftmax) v = static_cast<T>(double(v - mx) - std::log(sum));
        }
      }
    }
    return Outputs{std::move(out)};
  });
}

}  // namespace

void register_activation(KernelRegistry& r) {
  register_plain_activations(r);
  register_parametric(r);
  r.add("Softmax", {softmax_kernel<SKind::kSoftmax>, true});
  r.add("LogSoftmax", {softmax_kernel<SKind::kLogSoftmax>, true});
  r.add("Hardmax", {softmax_kernel<SKind::kHardmax>, true});
}

}  // namespace common::eval

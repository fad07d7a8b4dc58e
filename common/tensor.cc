#include "common/tensor.h"

#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>

namespace common {

int64_t num_elements(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const float a = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00;  // rounds to infinity
  if (a < 6.103515625e-05f) {               // subnormal half: round(a / 2^-24)
    return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f));
  }
  // Normal: round mantissa to 10 bits, ties to even.
  uint32_t ax = std::bit_cast<uint32_t>(a);
  const uint32_t lsb = (ax >> 13) & 1;
  ax += 0xfff + lsb;
  return sign | static_cast<uint16_t>(((ax >> 13) - (112u << 10)) & 0x7fff);
}

float bfloat16_to_float(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

uint16_t float_to_bfloat16(float f) {
  if (std::isnan(f)) return 0x7fc0;
  uint32_t x = std::bit_cast<uint32_t>(f);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

namespace {

template <class T>
T load(const std::string& raw, int64_t i) {
  T v;
  std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
  return v;
}

// A value as the integer type T: a floating one truncated and saturated at T's range, NaN as 0
// (a plain cast of a floating value out of T's range is undefined behaviour).
template <class T, class S>
T to_integer(S v) {
  if constexpr (std::is_floating_point_v<S>) {
    if (std::isnan(v)) return 0;
    // Both bounds are powers of two (or one less): as doubles, min is exact and max rounds up.
    if (static_cast<double>(v) <= static_cast<double>(std::numeric_limits<T>::min())) {
      return std::numeric_limits<T>::min();
    }
    if (static_cast<double>(v) >= static_cast<double>(std::numeric_limits<T>::max())) {
      return std::numeric_limits<T>::max();
    }
  }
  return static_cast<T>(v);
}

// A value of a tensor's element type as R (int64_t or double): floating values into an integer
// saturate as to_integer does.
template <class R, class S>
R as(S v) {
  if constexpr (std::is_integral_v<R>) {
    return to_integer<R>(v);
  } else {
    return static_cast<R>(v);
  }
}

template <class R>
R element(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::kFloat:
      return as<R>(load<float>(t.raw, i));
    case DType::kDouble:
      return as<R>(load<double>(t.raw, i));
    case DType::kFloat16:
      return as<R>(half_to_float(load<uint16_t>(t.raw, i)));
    case DType::kBFloat16:
      return as<R>(bfloat16_to_float(load<uint16_t>(t.raw, i)));
    case DType::kInt8:
      return as<R>(load<int8_t>(t.raw, i));
    case DType::kUInt8:
      return as<R>(load<uint8_t>(t.raw, i));
    case DType::kBool:
      return static_cast<R>(load<uint8_t>(t.raw, i) != 0);
    case DType::kInt16:
      return as<R>(load<int16_t>(t.raw, i));
    case DType::kUInt16:
      return as<R>(load<uint16_t>(t.raw, i));
    case DType::kInt32:
      return as<R>(load<int32_t>(t.raw, i));
    case DType::kUInt32:
      return as<R>(load<uint32_t>(t.raw, i));
    case DType::kInt64:
      return as<R>(load<int64_t>(t.raw, i));
    case DType::kUInt64:
      return as<R>(load<uint64_t>(t.raw, i));
    default:
      return R{};
  }
}

template <class T>
void store(std::string& raw, int64_t i, T v) {
  std::memcpy(raw.data() + i * sizeof(T), &v, sizeof(T));
}

// Writes element i of a tensor of any numeric dtype from a double or int64 source.
template <class S>
void put(Tensor& t, int64_t i, S v) {
  switch (t.dtype) {
    case DType::kFloat:
      return store(t.raw, i, static_cast<float>(v));
    case DType::kDouble:
      return store(t.raw, i, static_cast<double>(v));
    case DType::kFloat16:
      return store(t.raw, i, float_to_half(static_cast<float>(v)));
    case DType::kBFloat16:
      return store(t.raw, i, float_to_bfloat16(static_cast<float>(v)));
    case DType::kInt8:
      return store(t.raw, i, to_integer<int8_t>(v));
    case DType::kUInt8:
      return store(t.raw, i, to_integer<uint8_t>(v));
    case DType::kBool:
      return store(t.raw, i, static_cast<uint8_t>(v != 0));
    case DType::kInt16:
      return store(t.raw, i, to_integer<int16_t>(v));
    case DType::kUInt16:
      return store(t.raw, i, to_integer<uint16_t>(v));
    case DType::kInt32:
      return store(t.raw, i, to_integer<int32_t>(v));
    case DType::kUInt32:
      return store(t.raw, i, to_integer<uint32_t>(v));
    case DType::kInt64:
      return store(t.raw, i, to_integer<int64_t>(v));
    case DType::kUInt64:
      return store(t.raw, i, to_integer<uint64_t>(v));
    default:
      return;
  }
}

}  // namespace

int64_t saturating_int64(double v) { return to_integer<int64_t>(v); }

int64_t Tensor::int_at(int64_t i) const { return element<int64_t>(*this, i); }
double Tensor::double_at(int64_t i) const { return element<double>(*this, i); }

std::vector<int64_t> Tensor::to_int64() const {
  std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(numel(), 0)));
  for (size_t i = 0; i < out.size(); ++i) out[i] = int_at(static_cast<int64_t>(i));
  return out;
}

std::vector<double> Tensor::to_double() const {
  std::vector<double> out(static_cast<size_t>(std::max<int64_t>(numel(), 0)));
  // float and double in one typed loop (large weights: no dtype switch per element).
  if (dtype == DType::kFloat && raw.size() >= out.size() * sizeof(float)) {
    const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
    for (size_t i = 0; i < out.size(); ++i, p += sizeof(float)) {
      float v;
      std::memcpy(&v, p, sizeof(float));
      out[i] = v;
    }
    return out;
  }
  if (dtype == DType::kDouble && raw.size() >= out.size() * sizeof(double)) {
    // An empty vector's data() may be null, which memcpy must not get even for 0 bytes.
    if (!out.empty()) std::memcpy(out.data(), raw.data(), out.size() * sizeof(double));
    return out;
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = double_at(static_cast<int64_t>(i));
  return out;
}

Tensor Tensor::zeros(DType dtype, Dims dims) {
  Tensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.raw.assign(static_cast<size_t>(std::max<int64_t>(t.numel(), 0) * dtype_size(dtype)), '\0');
  return t;
}

Tensor Tensor::from_int64(const std::vector<int64_t>& values, Dims dims, DType dtype) {
  Tensor t = zeros(dtype, std::move(dims));
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < t.numel(); ++i) {
    put(t, static_cast<int64_t>(i), values[i]);
  }
  return t;
}

Tensor Tensor::from_double(const std::vector<double>& values, Dims dims, DType dtype) {
  Tensor t = zeros(dtype, std::move(dims));
  if (dtype == DType::kFloat) {  // one typed loop, as to_double
    const size_t n = std::min(values.size(), t.raw.size() / sizeof(float));
    auto* p = reinterpret_cast<unsigned char*>(t.raw.data());
    for (size_t i = 0; i < n; ++i, p += sizeof(float)) {
      const auto v = static_cast<float>(values[i]);
      std::memcpy(p, &v, sizeof(float));
    }
    return t;
  }
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < t.numel(); ++i) {
    put(t, static_cast<int64_t>(i), values[i]);
  }
  return t;
}

Tensor Tensor::from_floats(const std::vector<float>& values, Dims dims) {
  Tensor t = zeros(DType::kFloat, std::move(dims));
  if (!values.empty()) {
    std::memcpy(t.raw.data(), values.data(), std::min(t.raw.size(), values.size() * sizeof(float)));
  }
  return t;
}

}  // namespace common

// A dense tensor: element type, dimensions and little-endian row-major bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "common/dtype.h"

namespace common {

using Dims = std::vector<int64_t>;

/// Product of dims (1 for a scalar); -1 when a dim is negative or the product overflows int64.
int64_t num_elements(const Dims& dims);

/// A constant tensor. `raw` holds numel * dtype_size(dtype) bytes (strings are not supported as
/// data).
struct Tensor {
  DType dtype = DType::kUndefined;
  Dims dims;
  std::string raw;

  int64_t numel() const { return num_elements(dims); }
  template <class T>
  std::span<const T> span() const {
    return {reinterpret_cast<const T*>(raw.data()), raw.size() / sizeof(T)};
  }
  template <class T>
  std::span<T> mutable_span() {
    return {reinterpret_cast<T*>(raw.data()), raw.size() / sizeof(T)};
  }
  /// Element i converted to int64 / double, whatever the dtype (float16 and bfloat16 included).
  int64_t int_at(int64_t i) const;
  double double_at(int64_t i) const;
  /// All elements converted.
  std::vector<int64_t> to_int64() const;
  std::vector<double> to_double() const;

  /// Builds a tensor of `dtype` from values (converted with static_cast; float16 rounded to
  /// nearest).
  static Tensor from_int64(const std::vector<int64_t>& values, Dims dims,
                           DType dtype = DType::kInt64);
  static Tensor from_double(const std::vector<double>& values, Dims dims,
                            DType dtype = DType::kFloat);
  static Tensor from_floats(const std::vector<float>& values, Dims dims);
  /// A zero-filled tensor.
  static Tensor zeros(DType dtype, Dims dims);
  /// Same dtype/dims/bytes.
  bool operator==(const Tensor& other) const = default;
};

/// float16 / bfloat16 conversions.
/// v truncated toward zero and saturated at int64's range, NaN as 0 (a plain cast of a floating
/// value out of range is undefined behaviour).
int64_t saturating_int64(double v);

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bfloat16_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);

}  // namespace common

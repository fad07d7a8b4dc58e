// Element types, numbered as ONNX's TensorProto.DataType.
#pragma once

#include <cstdint>
#include <string_view>

namespace common {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};

/// Bytes per element (0 for undefined and string).
int dtype_size(DType t);
/// ONNX spelling: "float", "int64", ...
std::string_view dtype_name(DType t);
bool is_integer(DType t);   ///< signed or unsigned integer types (not bool)
bool is_floating(DType t);  ///< float16, bfloat16, float, double
bool is_float_or_double(DType t);
/// True for values of an ONNX enum that this suite knows.
bool is_known_dtype(int32_t onnx_type);

}  // namespace common

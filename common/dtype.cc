#include "common/dtype.h"

namespace common {

int dtype_size(DType t) {
  switch (t) {
    case DType::kBool:
    case DType::kUInt8:
    case DType::kInt8:
      return 1;
    case DType::kUInt16:
    case DType::kInt16:
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kFloat:
    case DType::kInt32:
    case DType::kUInt32:
      return 4;
    case DType::kInt64:
    case DType::kUInt64:
    case DType::kDouble:
      return 8;
    default:
      return 0;
  }
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kFloat:
      return "float";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt8:
      return "int8";
    case DType::kUInt16:
      return "uint16";
    case DType::kInt16:
      return "int16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kString:
      return "string";
    case DType::kBool:
      return "bool";
    case DType::kFloat16:
      return "float16";
    case DType::kDouble:
      return "double";
    case DType::kUInt32:
      return "uint32";
    case DType::kUInt64:
      return "uint64";
    case DType::kBFloat16:
      return "bfloat16";
    default:
      return "undefined";
  }
}

bool is_integer(DType t) {
  switch (t) {
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kUInt16:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt32:
    case DType::kUInt64:
      return true;
    default:
      return false;
  }
}

bool is_float_or_double(DType t) { return t == DType::kFloat || t == DType::kDouble; }

bool is_floating(DType t) {
  return t == DType::kFloat || t == DType::kDouble || t == DType::kFloat16 || t == DType::kBFloat16;
}

bool is_known_dtype(int32_t onnx_type) {
  return (onnx_type >= 1 && onnx_type <= 13) || onnx_type == 16;
}

}  // namespace common

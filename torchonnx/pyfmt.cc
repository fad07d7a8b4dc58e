#include "torchonnx/pyfmt.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace torchonnx {

using common::DType;

common::Result<std::string> torch_dtype(DType dtype) {
  switch (dtype) {
    case DType::kFloat:
      return std::string("torch.float32");
    case DType::kDouble:
      return std::string("torch.float64");
    case DType::kFloat16:
      return std::string("torch.float16");
    case DType::kBFloat16:
      return std::string("torch.bfloat16");
    case DType::kInt64:
      return std::string("torch.int64");
    case DType::kInt32:
      return std::string("torch.int32");
    case DType::kInt16:
      return std::string("torch.int16");
    case DType::kInt8:
      return std::string("torch.int8");
    case DType::kUInt8:
      return std::string("torch.uint8");
    case DType::kBool:
      return std::string("torch.bool");
    default:
      break;
  }
  return common::Error{
      "", "", "",
      "element type " + std::string(common::dtype_name(dtype)) + " has no PyTorch equivalent"};
}

common::Result<py::Expr> dtype_expr(common::DType dtype) {
  ASSIGN_OR_RETURN(std::string name, torch_dtype(dtype));
  return py::torch(name.substr(name.find('.') + 1));
}

// The shortest %g text that reads back as the same float (or double).
std::string py_float(double value, bool single_precision) {
  if (std::isnan(value)) return "float(\"nan\")";
  if (std::isinf(value)) return value > 0 ? "float(\"inf\")" : "-float(\"inf\")";
  char buf[40];
  int digits = 1;
  for (; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, value);
    const double back = std::strtod(buf, nullptr);
    const bool same =
        single_precision ? static_cast<float>(back) == static_cast<float>(value) : back == value;
    if (same) break;
  }
  // Plain notation for ordinary magnitudes ("10.0", not "1e+01").
  const double magnitude = std::fabs(value);
  if (magnitude >= 1 && magnitude < 1e16 && std::strchr(buf, 'e') != nullptr) {
    const int integer_digits = static_cast<int>(std::floor(std::log10(magnitude))) + 1;
    std::snprintf(buf, sizeof buf, "%.*g", std::max(std::min(digits, 17), integer_digits), value);
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string py_scalar(const common::Tensor& tensor, int64_t i) {
  if (tensor.dtype == DType::kBool) return tensor.int_at(i) ? "True" : "False";
  if (common::is_floating(tensor.dtype)) {
    return py_float(tensor.double_at(i), tensor.dtype != DType::kDouble);
  }
  return std::to_string(tensor.int_at(i));
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

static std::vector<std::string> to_strings(const std::vector<int64_t>& values) {
  std::vector<std::string> out;
  out.reserve(values.size());
  for (int64_t v : values) out.push_back(std::to_string(v));
  return out;
}

std::string py_tuple(const std::vector<int64_t>& values) {
  if (values.size() == 1) return "(" + std::to_string(values[0]) + ",)";
  return "(" + join(to_strings(values)) + ")";
}

std::string py_list(const std::vector<int64_t>& values) {
  return "[" + join(to_strings(values)) + "]";
}

std::string shape_args(const std::vector<int64_t>& dims, bool batched) {
  return shape_args_at(dims, batched ? 0 : -1);
}

std::string shape_args_at(const std::vector<int64_t>& dims, int axis) {
  std::vector<std::string> parts = to_strings(dims);
  if (axis >= 0 && axis < static_cast<int>(parts.size())) parts[axis] = "-1";
  return join(parts);
}

}  // namespace torchonnx

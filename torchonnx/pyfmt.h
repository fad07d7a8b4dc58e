// Formatting of Python literals shared by the handlers and the emitter.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/tensor.h"
#include "torchonnx/pyexpr.h"

namespace torchonnx {

/// "torch.float32", ...; an error for types PyTorch 1.13 lacks (uint16/32/64, strings).
common::Result<std::string> torch_dtype(common::DType dtype);
/// `torch_dtype` as an expression (`torch.float32`).
common::Result<py::Expr> dtype_expr(common::DType dtype);
/// A float as a Python expression that round-trips the value (`0.1`, `float("inf")`).
std::string py_float(double value, bool single_precision = true);
/// Element i of a constant as a Python number literal of its kind (int, float or bool).
std::string py_scalar(const common::Tensor& tensor, int64_t i = 0);
/// "a, b, c" (no brackets).
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");
/// Python tuple: "()", "(3,)", "(1, 2)".
std::string py_tuple(const std::vector<int64_t>& values);
/// Python list: "[1, 2]".
std::string py_list(const std::vector<int64_t>& values);
/// Dims as reshape arguments with dim 0 written as -1 when `batched` ("-1, 784").
std::string shape_args(const std::vector<int64_t>& dims, bool batched);
/// `dims` as call arguments with -1 for dim `axis` (the batch; none when negative).
std::string shape_args_at(const std::vector<int64_t>& dims, int axis);

}  // namespace torchonnx

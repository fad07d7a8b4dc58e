// Ops of other domains that the user computes (torchonnx calls a Python function for them):
// shape inference takes their outputs' types as declared, and nothing is known of their values.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "common/error.h"
#include "common/graph.h"

namespace shapeonnx {

/// The type of a value a custom op computes. A negative dims[0] is the batch dim (batch_size).
struct ValueType {
  common::DType dtype = common::DType::kUndefined;
  common::Dims dims;
};

/// Declared custom ops ("domain::Op") and types for their outputs by value name; an output
/// without an entry takes its declared type (the model's value_info or graph output).
struct CustomOps {
  std::set<std::string, std::less<>> ops;
  std::map<std::string, ValueType, std::less<>> types;

  bool empty() const { return ops.empty(); }
  /// Whether `node` is one of `ops`.
  bool has(const common::Node& node) const;
};

/// "domain::Op" for a node of another domain, else the op type.
std::string custom_op_key(const common::Node& node);

/// Parses `--custom-op DOMAIN::OP[=TARGET]`: ("DOMAIN::OP", TARGET or "").
common::Result<std::pair<std::string, std::string>> parse_custom_op(std::string_view text);
/// Parses `--custom-op-shape NAME=DTYPE[D0,D1,...]` (DTYPE in ONNX spelling, e.g. float or
/// float32; D0 may be a name, e.g. N, for the batch dim; `DTYPE[]` is a scalar).
common::Result<std::pair<std::string, ValueType>> parse_custom_type(std::string_view text);
/// Parses both flags' lists into `out`.
common::Status parse_custom_flags(const std::vector<std::string>& ops,
                                  const std::vector<std::string>& types, CustomOps& out);

/// Gives the outputs of custom op `node` their types (see CustomOps); their values stay unknown.
common::Status infer_custom(common::Graph& graph, const common::Node& node, const CustomOps& custom,
                            int64_t batch_size);

}  // namespace shapeonnx

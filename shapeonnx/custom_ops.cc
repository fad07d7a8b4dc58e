#include "shapeonnx/custom_ops.h"

#include <charconv>
#include <vector>

namespace shapeonnx {

namespace {

common::Error flag_error(const std::string& message) { return common::Error{"", "", "", message}; }

common::Result<common::DType> parse_dtype(std::string_view name) {
  if (name == "float32") return common::DType::kFloat;
  if (name == "float64") return common::DType::kDouble;
  for (int t = 1; t <= 16; ++t) {
    if (!common::is_known_dtype(t)) continue;
    const auto dtype = static_cast<common::DType>(t);
    if (common::dtype_name(dtype) == name && dtype != common::DType::kString) return dtype;
  }
  return flag_error("unknown element type '" + std::string(name) + "'");
}

bool is_name(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// "D0,D1,..." of a shape; a name in dim 0 is the batch (-1).
common::Result<common::Dims> parse_dims(std::string_view text, const std::string& flag) {
  common::Dims dims;
  if (text.empty()) return dims;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view part = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    int64_t d = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), d);
    if (dims.empty() && is_name(part)) {
      d = -1;
    } else if (ec != std::errc() || end != part.data() + part.size() || d < 0) {
      return flag_error("--custom-op-shape: bad dim '" + std::string(part) + "' in '" + flag +
                        "' (sizes, or a name for a batch dim 0)");
    }
    dims.push_back(d);
    if (comma == std::string_view::npos) return dims;
    start = comma + 1;
  }
}

}  // namespace

bool CustomOps::has(const common::Node& node) const {
  return !node.domain.empty() && node.domain != "ai.onnx" && ops.count(custom_op_key(node)) != 0;
}

std::string custom_op_key(const common::Node& node) {
  const bool plain = node.domain.empty() || node.domain == "ai.onnx";
  return plain ? node.op_type : node.domain + "::" + node.op_type;
}

common::Result<std::pair<std::string, std::string>> parse_custom_op(std::string_view text) {
  const size_t eq = text.find('=');
  const std::string_view op = text.substr(0, eq);
  const size_t sep = op.find("::");
  if (sep == 0 || sep == std::string_view::npos || sep + 2 == op.size() ||
      op.substr(0, sep) == "ai.onnx") {
    return flag_error(
        "--custom-op expects DOMAIN::OP[=MODULE:FUNCTION] with a domain other than "
        "ai.onnx, got '" +
        std::string(text) + "'");
  }
  return std::make_pair(std::string(op),
                        eq == std::string_view::npos ? "" : std::string(text.substr(eq + 1)));
}

common::Result<std::pair<std::string, ValueType>> parse_custom_type(std::string_view text) {
  const std::string flag(text);
  const size_t eq = text.rfind('=');
  const size_t open = text.find('[', eq == std::string_view::npos ? 0 : eq);
  if (eq == 0 || eq == std::string_view::npos || open == std::string_view::npos ||
      text.back() != ']') {
    return flag_error("--custom-op-shape expects NAME=DTYPE[D0,D1,...], got '" + flag + "'");
  }
  ValueType type;
  ASSIGN_OR_RETURN(type.dtype, parse_dtype(text.substr(eq + 1, open - eq - 1)));
  ASSIGN_OR_RETURN(type.dims, parse_dims(text.substr(open + 1, text.size() - open - 2), flag));
  return std::make_pair(std::string(text.substr(0, eq)), type);
}

common::Status parse_custom_flags(const std::vector<std::string>& ops,
                                  const std::vector<std::string>& types, CustomOps& out) {
  for (const std::string& t : ops) {
    ASSIGN_OR_RETURN(auto op, parse_custom_op(t));
    out.ops.insert(op.first);
  }
  for (const std::string& t : types) {
    ASSIGN_OR_RETURN(auto type, parse_custom_type(t));
    if (!out.types.emplace(type.first, type.second).second) {
      return flag_error("--custom-op-shape given twice for '" + type.first + "'");
    }
  }
  return {};
}

common::Status infer_custom(common::Graph& graph, const common::Node& node, const CustomOps& custom,
                            int64_t batch_size) {
  for (const std::string& out : node.outputs) {
    if (out.empty()) continue;
    common::Value& v = graph.value(out);
    v.known.reset();
    if (auto it = custom.types.find(out); it != custom.types.end()) {
      v.dtype = it->second.dtype;
      v.shape = it->second.dims;
      v.dim_params.clear();
    }
    if (!v.shape || v.dtype == common::DType::kUndefined) {
      return graph.error(node, "output '" + out + "' of a custom op has no declared type; give " +
                                   "--custom-op-shape " + out + "=DTYPE[D0,D1,...]");
    }
    for (size_t d = 0; d < v.shape->size(); ++d) {
      int64_t& dim = (*v.shape)[d];
      const bool symbolic = dim < 0 || (d < v.dim_params.size() && !v.dim_params[d].empty());
      if (d == 0 && symbolic) {
        dim = batch_size;
      } else if (symbolic) {
        return graph.error(node, "output '" + out + "' of a custom op has a symbolic dim " +
                                     std::to_string(d) + "; give --custom-op-shape");
      }
    }
    v.dim_params.clear();
  }
  return {};
}

}  // namespace shapeonnx

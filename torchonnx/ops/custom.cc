// Declared custom ops (--custom-op DOMAIN::OP=MODULE:FUNCTION): a call of the user's function.
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/names.h"
#include "torchonnx/context.h"
#include "torchonnx/pyfmt.h"
#include "torchonnx/stems.h"

namespace torchonnx {

namespace {

using common::AttrType;

bool is_identifier(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  }
  static const std::set<std::string_view> kKeywords = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  return kKeywords.count(s) == 0;
}

// "a.b.c" with each part an identifier.
bool is_module_path(std::string_view s) {
  for (size_t start = 0;;) {
    const size_t dot = s.find('.', start);
    if (!is_identifier(s.substr(start, dot == std::string_view::npos ? dot : dot - start)))
      return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

template <typename T, typename F>
std::string py_list_of(const std::vector<T>& items, F format) {
  std::vector<std::string> parts;
  parts.reserve(items.size());
  for (const T& x : items) parts.push_back(format(x));
  return "[" + join(parts) + "]";
}

// An attribute as a Python literal: numbers, strings and lists of them.
common::Result<std::string> attribute_literal(Context& ctx, const common::Attribute& a) {
  auto number = [](float f) { return py_float(f); };
  auto text = [](const std::string& s) { return common::python_string_literal(s); };
  switch (a.type) {
    case AttrType::kInt:
      return std::to_string(a.i);
    case AttrType::kFloat:
      return py_float(a.f);
    case AttrType::kString:
      return text(a.s);
    case AttrType::kInts:
      return py_list(a.ints);
    case AttrType::kFloats:
      return py_list_of(a.floats, number);
    case AttrType::kStrings:
      return py_list_of(a.strings, text);
    default:
      return ctx.error("attribute '" + a.name +
                       "' is not a number, string or list of them; a custom op cannot take it");
  }
}

}  // namespace

common::Status lower_custom(Context& ctx, const std::string& target) {
  const size_t colon = target.rfind(':');
  const std::string module = colon == std::string::npos ? "" : target.substr(0, colon);
  const std::string function = colon == std::string::npos ? "" : target.substr(colon + 1);
  if (!is_module_path(module) || !is_identifier(function)) {
    return ctx.error("--custom-op target '" + target + "' is not MODULE:FUNCTION");
  }
  const std::string root = module.substr(0, module.find('.'));
  if (root == "F" || root == "nn" || root == "self") {
    return ctx.error("--custom-op module '" + module + "' is a name the generated code uses");
  }
  std::vector<std::string> args;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    args.push_back(ctx.has_input(i) ? ctx.in(i) : "None");
  for (const common::Attribute& a : ctx.node().attrs) {
    if (!is_identifier(a.name)) {
      return ctx.error("attribute '" + a.name + "' is not a Python identifier");
    }
    ASSIGN_OR_RETURN(std::string value, attribute_literal(ctx, a));
    args.push_back(a.name + "=" + value);
  }
  ctx.add_import(module);
  const std::string expr = module + "." + function + "(" + join(args) + ")";
  std::vector<int> axes;
  for (size_t i = 0; i < ctx.num_outputs(); ++i) axes.push_back(std::max(ctx.probed_axis(i), -1));
  if (axes.size() == 1) return ctx.emit_at(py::Expr::raw(expr, {}), function, axes[0]);
  ctx.emit_tuple_axes(py::Expr::raw(expr, {}), function, axes);
  return {};
}

}  // namespace torchonnx

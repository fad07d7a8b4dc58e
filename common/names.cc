#include "common/names.h"

#include <array>
#include <cstdint>
#include <cstdio>

namespace common {

namespace {

// Python keywords, soft keywords, builtins and the module names generated code uses.
constexpr std::array kReserved = {
    "False",    "None",      "True",       "and",     "as",         "assert",
    "async",    "await",     "break",      "class",   "continue",   "def",
    "del",      "elif",      "else",       "except",  "finally",    "for",
    "from",     "global",    "if",         "import",  "in",         "is",
    "lambda",   "nonlocal",  "not",        "or",      "pass",       "raise",
    "return",   "try",       "while",      "with",    "yield",      "match",
    "case",     "type",      "abs",        "all",     "any",        "bool",
    "bytes",    "callable",  "chr",        "compile", "dict",       "dir",
    "divmod",   "enumerate", "eval",       "exec",    "filter",     "float",
    "format",   "getattr",   "globals",    "hasattr", "hash",       "id",
    "input",    "int",       "isinstance", "iter",    "len",        "list",
    "locals",   "map",       "max",        "min",     "next",       "object",
    "open",     "ord",       "pow",        "print",   "property",   "range",
    "repr",     "reversed",  "round",      "set",     "setattr",    "slice",
    "sorted",   "str",       "sum",        "super",   "tuple",      "vars",
    "zip",      "self",      "torch",      "nn",      "F",          "math",
    "typing",   "Tensor",    "functorch",  "forward", "__import__", "__builtins__",
    "__name__", "__file__",  "__class__",  "__dict__"};

std::string sanitize(std::string_view hint) {
  std::string out;
  for (unsigned char c : hint) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    char ch = ok ? static_cast<char>(c) : '_';
    if (ch == '_' && !out.empty() && out.back() == '_') continue;  // collapse runs
    out += ch;
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  // Leading digits are invalid; leading underscores invite name mangling and dunder clashes.
  if (out.empty() || (out[0] >= '0' && out[0] <= '9') || out[0] == '_') out = "v" + out;
  return out;
}

}  // namespace

NameScope::NameScope() {
  for (const char* r : kReserved) taken_.insert(r);
}

void NameScope::reserve(std::string_view name) { taken_.insert(std::string(name)); }

std::string NameScope::make(std::string_view hint, bool numbered) {
  std::string base = sanitize(hint);
  const bool ends_digit = base.back() >= '0' && base.back() <= '9';
  const std::string stem = numbered && !ends_digit ? base : base + "_";
  if (!numbered && !taken_.count(base)) {
    taken_.insert(base);
    return base;
  }
  // Suffixes below next_[stem] are all taken already: counting resumes there (linear, not
  // quadratic, in the number of names with one stem).
  int& next = next_.try_emplace(stem, 1).first->second;
  for (;; ++next) {
    std::string candidate = stem + std::to_string(next);
    if (taken_.insert(candidate).second) {
      ++next;
      return candidate;
    }
  }
}

std::string python_string_literal(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    char buf[16];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      // Bytes outside printable ASCII (control characters, UTF-8 sequences) as \x escapes of a
      // bytes-level view would change the string; decode UTF-8 to code points instead.
      uint32_t cp = c;
      int extra = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
      if (extra) cp = c & (0x3f >> extra);
      for (int k = 0; k < extra && i + 1 < text.size(); ++k) cp = (cp << 6) | (text[++i] & 0x3f);
      std::snprintf(buf, sizeof buf, cp > 0xffff ? "\\U%08x" : "\\u%04x", cp);
      out += buf;
    }
  }
  return out + "\"";
}

std::string python_comment_text(std::string_view text) {
  std::string lit = python_string_literal(text);
  return lit.substr(1, lit.size() - 2);
}

}  // namespace common

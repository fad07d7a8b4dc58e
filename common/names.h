// One scope that hands out identifiers: sanitized, unique, never a keyword or builtin.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>

namespace common {

/// Hands out Python identifiers. Any input text (quotes, newlines, unicode, keywords, dunder
/// names) becomes a valid, unique identifier; two texts that sanitize alike get distinct names.
class NameScope {
 public:
  NameScope();
  /// Marks a name as taken without handing it out (e.g. `self`, `torch`).
  void reserve(std::string_view name);
  /// A fresh identifier derived from `hint` ("conv" -> "conv1", "conv2", ... when `numbered`).
  std::string make(std::string_view hint, bool numbered = false);
  bool taken(std::string_view name) const { return taken_.count(std::string(name)) != 0; }

 private:
  std::set<std::string, std::less<>> taken_;
  std::map<std::string, int, std::less<>> next_;  ///< per stem: the first suffix not yet tried
};

/// `text` as a Python string literal (double-quoted, escaped; non-ASCII as \u escapes).
std::string python_string_literal(std::string_view text);
/// `text` safe inside a Python `#` comment: one line, control characters escaped.
std::string python_comment_text(std::string_view text);

}  // namespace common

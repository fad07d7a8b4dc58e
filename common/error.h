// Errors as values: every failure carries the file, node and op it concerns.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace common {

/// A failure with its location. `str()` renders one line:
/// `model.onnx: node 'conv1' (Conv): kernel rank 3 does not match input rank 4`.
struct Error {
  std::string file;     ///< input path ("-" for stdin); may be empty
  std::string node;     ///< node name; may be empty
  std::string op;       ///< op type; may be empty
  std::string message;  ///< what went wrong, without trailing period

  /// One line, control characters escaped so that hostile names cannot break it.
  std::string str() const;
};

/// An error about a whole file (no node): `path: message`.
Error file_error(std::string_view path, std::string message);

/// Escapes control characters (newline, tab, ...) as \n, \t, \xHH so the text stays on one line.
std::string one_line(std::string_view text);

/// Success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return !error_.has_value(); }
  const Error& error() const { return *error_; }
  Error& error() { return *error_; }

 private:
  std::optional<Error> error_;
};

/// A value or an Error.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                 // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}             // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status.error())) {}  // NOLINT: only from a failed Status
  bool ok() const { return v_.index() == 0; }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  Status status() const { return ok() ? Status() : Status(error()); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace common

#define COMMON_CONCAT_INNER(a, b) a##b
#define COMMON_CONCAT(a, b) COMMON_CONCAT_INNER(a, b)

/// Returns the error of a failed Status or Result from the enclosing function.
#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    auto&& _status_or = (expr);                      \
    if (!_status_or.ok()) return _status_or.error(); \
  } while (0)

/// `ASSIGN_OR_RETURN(auto x, f());` declares x from a Result or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(COMMON_CONCAT(_result_, __LINE__), lhs, expr)
// `tmp` is an identifier and `lhs` a declaration: neither can be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.error();          \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)

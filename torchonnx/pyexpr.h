// Generated Python expressions as a tree (names, calls, operators, subscripts), printed by one
// printer; the modules an expression uses come from its structure.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace torchonnx::py {

/// A module generated code refers to by name: `torch.`, `F.` (torch.nn.functional), `nn.`,
/// `math.`.
enum class Ns : uint8_t { kTorch = 1, kF = 2, kNn = 4, kMath = 8 };

/// The set of modules an expression (or a method, a module) uses.
class Namespaces {
 public:
  Namespaces() = default;
  Namespaces(std::initializer_list<Ns> list) {
    for (Ns n : list) add(n);
  }
  void add(Ns n) { bits_ |= static_cast<uint8_t>(n); }
  void add(const Namespaces& other) { bits_ |= other.bits_; }
  bool has(Ns n) const { return (bits_ & static_cast<uint8_t>(n)) != 0; }
  bool empty() const { return bits_ == 0; }
  bool operator==(const Namespaces&) const = default;

 private:
  uint8_t bits_ = 0;
};

/// Python operator precedence, lowest first (the Python reference's table).
enum class Prec : uint8_t {
  kLowest,
  kIf,       ///< a if c else b
  kOr,       ///< or
  kAnd,      ///< and
  kNot,      ///< not x
  kCompare,  ///< < <= > >= == != in is
  kBitOr,    ///< |
  kBitXor,   ///< ^
  kBitAnd,   ///< &
  kShift,    ///< << >>
  kSum,      ///< + -
  kProduct,  ///< * / // % @
  kUnary,    ///< -x +x ~x
  kPower,    ///< **
  kPrimary,  ///< calls, subscripts, attributes
  kAtom,     ///< names, literals, parenthesized forms, lists
};

struct Keyword;

/// One Python expression. Build with the free functions below; print with `str()`.
class Expr {
 public:
  enum class Kind : uint8_t {
    kAtom,
    kCall,
    kAttr,
    kBinary,
    kUnary,
    kSubscript,
    kTuple,
    kList,
    kParen
  };

  Expr() = default;
  /// A name or literal printed as given (an identifier, `self.<attr>`, `3`, `"trunc"`).
  static Expr name(std::string text) { return Expr(Kind::kAtom, std::move(text)); }
  /// Escape hatch: Python text composed elsewhere, with the modules it uses and its precedence.
  static Expr raw(std::string text, Namespaces uses, Prec prec = Prec::kAtom);

  /// `<this>.<member>` (an attribute read).
  Expr attr(std::string member) const;
  /// `<this>.<method>(args..., key=value, ...)`. (Two overloads, not a default argument: a
  /// defaulted vector of the still incomplete Keyword is an error for clang.)
  Expr method(std::string name, std::vector<Expr> args = {}) const;
  Expr method(std::string name, std::vector<Expr> args, std::vector<Keyword> keywords) const;
  /// `<this>[index]`.
  Expr operator[](Expr index) const;
  /// `<this>[i0, i1, ...]` (slices such as `1:3` and `...` as atoms).
  Expr index(std::vector<Expr> items) const;

  Kind kind() const { return kind_; }
  /// The Python text.
  std::string str() const;
  /// The modules the expression uses (its own and its operands').
  Namespaces uses() const;
  Prec prec() const { return prec_; }

 private:
  friend Expr call(Expr callee, std::vector<Expr> args, std::vector<Keyword> keywords);
  friend Expr binary(std::string_view op, Expr lhs, Expr rhs);
  friend Expr unary(std::string_view op, Expr operand);
  friend Expr ns(Ns module, const std::string& member);
  friend Expr tuple(std::vector<Expr> items);
  friend Expr list(std::vector<Expr> items);
  friend Expr paren(Expr inner);

  Expr(Kind kind, std::string text, Prec prec = Prec::kAtom)
      : kind_(kind), prec_(prec), text_(std::move(text)) {}
  void print(std::string& out) const;
  void print_operand(const Expr& e, bool paren, std::string& out) const;
  void print_args(size_t first, std::string& out) const;

  Kind kind_ = Kind::kAtom;
  Prec prec_ = Prec::kAtom;
  Namespaces uses_;   ///< modules this node itself names
  std::string text_;  ///< atom text, operator, attribute or method name
  /// Operands: the receiver/callee first for calls, attributes and subscripts; for calls the
  /// last `keys_.size()` are keyword values.
  std::vector<Expr> items_;
  std::vector<std::string> keys_;
};

/// `key=value` in a call.
struct Keyword {
  std::string key;
  Expr value;
};

/// A member of a module: `torch.where`, `F.relu`, `nn.Conv2d`, `torch.float32`.
Expr ns(Ns module, const std::string& member);
inline Expr torch(const std::string& member) { return ns(Ns::kTorch, member); }
inline Expr fn(const std::string& member) { return ns(Ns::kF, member); }
inline Expr nn(const std::string& member) { return ns(Ns::kNn, member); }
/// `callee(args..., key=value, ...)`.
Expr call(Expr callee, std::vector<Expr> args, std::vector<Keyword> keywords = {});
/// `lhs <op> rhs` with the operands parenthesized as Python's precedence needs.
Expr binary(std::string_view op, Expr lhs, Expr rhs);
/// `<op>operand` ("-", "~", "not ").
Expr unary(std::string_view op, Expr operand);
/// `(a,)`, `(a, b)`, `()`.
Expr tuple(std::vector<Expr> items);
/// `[a, b]`.
Expr list(std::vector<Expr> items);
/// `(inner)`: parentheses the generated code writes although precedence needs none.
Expr paren(Expr inner);
/// Atoms for literals.
Expr lit(int64_t value);
Expr lit(std::string_view text);  ///< text printed as given (a number or literal formatted)
/// A Python string literal of `text` ("trunc" -> `"trunc"`).
Expr str_lit(std::string_view text);
/// Atoms of the items (identifiers, literals).
std::vector<Expr> names(const std::vector<std::string>& items);
/// Ints as atoms.
std::vector<Expr> ints(const std::vector<int64_t>& values);

}  // namespace torchonnx::py

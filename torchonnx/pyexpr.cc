#include "torchonnx/pyexpr.h"

#include <map>

namespace torchonnx::py {

namespace {

Prec binary_prec(std::string_view op) {
  static const std::map<std::string_view, Prec> table = {
      {"or", Prec::kOr},      {"and", Prec::kAnd},    {"<", Prec::kCompare},
      {"<=", Prec::kCompare}, {">", Prec::kCompare},  {">=", Prec::kCompare},
      {"==", Prec::kCompare}, {"!=", Prec::kCompare}, {"in", Prec::kCompare},
      {"is", Prec::kCompare}, {"|", Prec::kBitOr},    {"^", Prec::kBitXor},
      {"&", Prec::kBitAnd},   {"<<", Prec::kShift},   {">>", Prec::kShift},
      {"+", Prec::kSum},      {"-", Prec::kSum},      {"*", Prec::kProduct},
      {"/", Prec::kProduct},  {"//", Prec::kProduct}, {"%", Prec::kProduct},
      {"@", Prec::kProduct},  {"**", Prec::kPower},
  };
  auto it = table.find(op);
  return it == table.end() ? Prec::kLowest : it->second;
}

const char* module_name(Ns n) {
  switch (n) {
    case Ns::kTorch:
      return "torch";
    case Ns::kF:
      return "F";
    case Ns::kNn:
      return "nn";
    case Ns::kMath:
      return "math";
  }
  return "";
}

}  // namespace

Expr Expr::raw(std::string text, Namespaces uses, Prec prec) {
  Expr e(Kind::kAtom, std::move(text), prec);
  e.uses_ = uses;
  return e;
}

Expr Expr::attr(std::string member) const {
  Expr e(Kind::kAttr, std::move(member), Prec::kPrimary);
  e.items_.push_back(*this);
  return e;
}

Expr Expr::method(std::string name, std::vector<Expr> args) const {
  return method(std::move(name), std::move(args), {});
}

Expr Expr::method(std::string name, std::vector<Expr> args, std::vector<Keyword> keywords) const {
  return call(attr(std::move(name)), std::move(args), std::move(keywords));
}

Expr Expr::operator[](Expr index) const { return this->index({std::move(index)}); }

Expr Expr::index(std::vector<Expr> items) const {
  Expr e(Kind::kSubscript, "", Prec::kPrimary);
  e.items_.reserve(1 + items.size());
  e.items_.push_back(*this);
  for (Expr& i : items) e.items_.push_back(std::move(i));
  return e;
}

std::string Expr::str() const {
  std::string out;
  print(out);
  return out;
}

Namespaces Expr::uses() const {
  Namespaces all = uses_;
  for (const Expr& e : items_) all.add(e.uses());
  return all;
}

void Expr::print_operand(const Expr& e, bool paren, std::string& out) const {
  if (paren) out += '(';
  e.print(out);
  if (paren) out += ')';
}

// Items from `first` on, comma separated, the last keys_.size() as keywords.
void Expr::print_args(size_t first, std::string& out) const {
  const size_t positional = items_.size() - keys_.size();
  for (size_t i = first; i < items_.size(); ++i) {
    if (i > first) out += ", ";
    if (i >= positional) out += keys_[i - positional] + "=";
    items_[i].print(out);
  }
}

void Expr::print(std::string& out) const {
  switch (kind_) {
    case Kind::kAtom:
      out += text_;
      return;
    case Kind::kAttr:
      print_operand(items_[0], items_[0].prec_ < Prec::kPrimary, out);
      out += "." + text_;
      return;
    case Kind::kCall:
      print_operand(items_[0], items_[0].prec_ < Prec::kPrimary, out);
      out += '(';
      print_args(1, out);
      out += ')';
      return;
    case Kind::kSubscript:
      print_operand(items_[0], items_[0].prec_ < Prec::kPrimary, out);
      out += '[';
      print_args(1, out);
      out += ']';
      return;
    case Kind::kUnary:
      out += text_;
      // -x ** 2 is -(x ** 2): an operand that binds tighter than the operator needs no parens.
      print_operand(items_[0], items_[0].prec_ < prec_, out);
      return;
    case Kind::kBinary: {
      // Left-associative except **; comparisons chain, so a comparison operand gets parens.
      const bool right_assoc = prec_ == Prec::kPower;
      const bool chain = prec_ == Prec::kCompare;
      const Prec l = items_[0].prec_, r = items_[1].prec_;
      print_operand(items_[0], l < prec_ || (l == prec_ && (right_assoc || chain)), out);
      out += " " + text_ + " ";
      print_operand(items_[1], r < prec_ || (r == prec_ && !right_assoc), out);
      return;
    }
    case Kind::kTuple:
      out += '(';
      print_args(0, out);
      if (items_.size() == 1) out += ',';
      out += ')';
      return;
    case Kind::kParen:
      print_operand(items_[0], true, out);
      return;
    case Kind::kList:
      out += '[';
      print_args(0, out);
      out += ']';
      return;
  }
}

Expr ns(Ns module, const std::string& member) {
  Expr e = Expr::name(std::string(module_name(module)) + "." + member);
  e.uses_.add(module);
  return e;
}

Expr call(Expr callee, std::vector<Expr> args, std::vector<Keyword> keywords) {
  Expr e(Expr::Kind::kCall, "", Prec::kPrimary);
  e.items_.reserve(1 + args.size() + keywords.size());
  e.items_.push_back(std::move(callee));
  for (Expr& a : args) e.items_.push_back(std::move(a));
  for (Keyword& k : keywords) {
    e.keys_.push_back(std::move(k.key));
    e.items_.push_back(std::move(k.value));
  }
  return e;
}

Expr binary(std::string_view op, Expr lhs, Expr rhs) {
  Expr e(Expr::Kind::kBinary, std::string(op), binary_prec(op));
  e.items_ = {std::move(lhs), std::move(rhs)};
  return e;
}

Expr unary(std::string_view op, Expr operand) {
  Expr e(Expr::Kind::kUnary, std::string(op), op == "not " ? Prec::kNot : Prec::kUnary);
  e.items_.push_back(std::move(operand));
  return e;
}

Expr tuple(std::vector<Expr> items) {
  Expr e(Expr::Kind::kTuple, "");
  e.items_ = std::move(items);
  return e;
}

Expr list(std::vector<Expr> items) {
  Expr e(Expr::Kind::kList, "");
  e.items_ = std::move(items);
  return e;
}

Expr paren(Expr inner) {
  Expr e(Expr::Kind::kParen, "");
  e.items_.push_back(std::move(inner));
  return e;
}

Expr lit(int64_t value) {
  return value < 0 ? Expr::raw(std::to_string(value), {}, Prec::kUnary)
                   : Expr::name(std::to_string(value));
}

Expr lit(std::string_view text) { return Expr::name(std::string(text)); }

Expr str_lit(std::string_view text) { return Expr::name("\"" + std::string(text) + "\""); }

std::vector<Expr> names(const std::vector<std::string>& items) {
  std::vector<Expr> out;
  out.reserve(items.size());
  for (const std::string& s : items) out.push_back(Expr::name(s));
  return out;
}

std::vector<Expr> ints(const std::vector<int64_t>& values) {
  std::vector<Expr> out;
  out.reserve(values.size());
  for (int64_t v : values) out.push_back(lit(v));
  return out;
}

}  // namespace torchonnx::py

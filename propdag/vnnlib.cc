#include "propdag/vnnlib.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "common/onnx_io.h"

namespace propdag {
namespace {

using common::Error;
using common::Result;

constexpr size_t kMaxDisjuncts = 100000;
// Lists nest a few levels in VNN-LIB; the reader recurses once per level, so a file nesting
// deeper (a damaged or hostile one) is refused before the stack runs out.
constexpr int kMaxDepth = 1000;

struct Sexp {
  std::string atom;  // empty for a list
  std::vector<Sexp> items;
  int line = 0;
};

class Parser {
 public:
  Parser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  Result<std::vector<Sexp>> all() {
    std::vector<Sexp> out;
    while (skip(), pos_ < text_.size()) {
      ASSIGN_OR_RETURN(Sexp s, one());
      out.push_back(std::move(s));
    }
    return out;
  }
  Error error(int line, std::string message) const {
    std::string where(source_);
    if (line > 0) where += ":" + std::to_string(line);
    return Error{where, "", "", std::move(message)};
  }

 private:
  void skip() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ';') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        line_ += c == '\n';
        ++pos_;
      } else {
        return;
      }
    }
  }
  Result<Sexp> one() {
    Sexp s;
    s.line = line_;
    if (text_[pos_] == ')') return error(line_, "unexpected ')'");
    if (text_[pos_] != '(') {
      size_t start = pos_;
      while (pos_ < text_.size() && !std::isspace(static_cast<unsigned char>(text_[pos_])) &&
             text_[pos_] != '(' && text_[pos_] != ')' && text_[pos_] != ';')
        ++pos_;
      s.atom = std::string(text_.substr(start, pos_ - start));
      return s;
    }
    if (depth_ >= kMaxDepth) {
      return error(line_, "lists nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    ++pos_;
    ++depth_;
    while (skip(), pos_ < text_.size() && text_[pos_] != ')') {
      ASSIGN_OR_RETURN(Sexp item, one());
      s.items.push_back(std::move(item));
    }
    --depth_;
    if (pos_ >= text_.size()) return error(s.line, "unclosed '('");
    ++pos_;
    return s;
  }

  std::string_view text_, source_;
  size_t pos_ = 0;
  int line_ = 1;
  int depth_ = 0;
};

// sum(coef * var) + constant; variables keyed as 'X'/'Y' and index.
struct Linear {
  std::map<std::pair<char, int64_t>, double> coef;
  double constant = 0;
};

// expr <= 0
using Atom = Linear;
using Dnf = std::vector<std::vector<Atom>>;

class Builder {
 public:
  explicit Builder(const Parser& p) : p_(p) {}

  common::Status declare(const Sexp& s) {
    if (s.items.size() < 2 || !s.items[1].items.empty())
      return p_.error(s.line, "bad declare-const");
    auto var = variable(s.items[1].atom);
    if (!var) return p_.error(s.line, "unsupported variable '" + s.items[1].atom + "'");
    int64_t& count = var->first == 'X' ? inputs : outputs;
    count = std::max(count, var->second + 1);
    return {};
  }

  Result<Linear> term(const Sexp& s) const {
    if (s.items.empty()) {
      if (auto var = variable(s.atom)) {
        // SMT-LIB declares before use; an undeclared index would silently widen the property.
        if (var->second >= (var->first == 'X' ? inputs : outputs)) {
          return p_.error(s.line, "'" + s.atom + "' is not declared");
        }
        Linear l;
        l.coef[*var] = 1;
        return l;
      }
      char* end = nullptr;
      double v = std::strtod(s.atom.c_str(), &end);
      if (s.atom.empty() || *end != '\0') return p_.error(s.line, "unknown term '" + s.atom + "'");
      Linear l;
      l.constant = v;
      return l;
    }
    const std::string& op = s.items[0].atom;
    std::vector<Linear> args;
    for (size_t i = 1; i < s.items.size(); ++i) {
      ASSIGN_OR_RETURN(Linear a, term(s.items[i]));
      args.push_back(std::move(a));
    }
    if (args.empty()) return p_.error(s.line, "empty term");
    if (op == "+" || (op == "-" && args.size() > 1)) {
      Linear out = args[0];
      for (size_t i = 1; i < args.size(); ++i) add(out, args[i], op == "+" ? 1.0 : -1.0);
      return out;
    }
    if (op == "-") return scaled(args[0], -1.0);
    if (op == "*" && args.size() == 2) {
      if (args[0].coef.empty()) return scaled(args[1], args[0].constant);
      if (args[1].coef.empty()) return scaled(args[0], args[1].constant);
    }
    return p_.error(s.line, "unsupported term operator '" + op + "'");
  }

  Result<Dnf> formula(const Sexp& s) const {
    if (s.items.empty()) return p_.error(s.line, "expected a formula");
    const std::string& op = s.items[0].atom;
    if (op == "and" || op == "or") {
      Dnf out = op == "and" ? Dnf{{}} : Dnf{};
      for (size_t i = 1; i < s.items.size(); ++i) {
        ASSIGN_OR_RETURN(Dnf part, formula(s.items[i]));
        if (op == "or") {
          out.insert(out.end(), part.begin(), part.end());
        } else {
          ASSIGN_OR_RETURN(out, conjoin(std::move(out), part, s.line));
        }
      }
      return out;
    }
    if (s.items.size() != 3) return p_.error(s.line, "unsupported formula '" + op + "'");
    ASSIGN_OR_RETURN(Linear a, term(s.items[1]));
    ASSIGN_OR_RETURN(Linear b, term(s.items[2]));
    if (op == "<=" || op == "<") return Dnf{{difference(a, b)}};
    if (op == ">=" || op == ">") return Dnf{{difference(b, a)}};
    if (op == "=") return Dnf{{difference(a, b), difference(b, a)}};
    return p_.error(s.line, "unsupported comparison '" + op + "'");
  }

  // a AND b: each conjunction of a extended by each of b's. a is taken by value so that the
  // common case, b a single conjunction (one more assert), extends it in place: a property's
  // asserts are conjoined one by one, and copying the conjunctions so far for each made
  // reading quadratic in the number of asserts (16,229 in a TinyYOLO property).
  Result<Dnf> conjoin(Dnf a, const Dnf& b, int line) const {
    if (a.size() * b.size() > kMaxDisjuncts)
      return p_.error(line, "property has too many disjuncts");
    if (b.size() == 1) {
      for (auto& x : a) x.insert(x.end(), b.front().begin(), b.front().end());
      return a;
    }
    Dnf out;
    for (const auto& x : a)
      for (const auto& y : b) {
        out.push_back(x);
        out.back().insert(out.back().end(), y.begin(), y.end());
      }
    return out;
  }

  int64_t inputs = 0, outputs = 0;

 private:
  // Past this a variable's index is refused: no network has that many inputs or outputs, and
  // declaring it would allocate a box of that size.
  static constexpr int64_t kMaxIndex = int64_t{1} << 28;
  static std::optional<std::pair<char, int64_t>> variable(const std::string& name) {
    if (name.size() < 3 || (name[0] != 'X' && name[0] != 'Y') || name[1] != '_' || name[2] < '0' ||
        name[2] > '9')  // from_chars would take "X_-1" as index -1
      return std::nullopt;
    int64_t index = 0;
    auto [end, ec] = std::from_chars(name.data() + 2, name.data() + name.size(), index);
    if (ec != std::errc() || end != name.data() + name.size()) return std::nullopt;
    if (index >= kMaxIndex) return std::nullopt;
    return std::pair{name[0], index};
  }
  static void add(Linear& into, const Linear& x, double s) {
    for (const auto& [k, v] : x.coef) into.coef[k] += s * v;
    into.constant += s * x.constant;
  }
  static Linear scaled(Linear x, double s) {
    for (auto& [k, v] : x.coef) v *= s;
    x.constant *= s;
    return x;
  }
  static Linear difference(const Linear& a, const Linear& b) {
    Linear out = a;
    add(out, b, -1.0);
    return out;
  }

  const Parser& p_;
};

// Turns one conjunction into a case; returns false when it is trivially infeasible.
Result<bool> make_case(const std::vector<Atom>& atoms, const Builder& b, const Parser& p,
                       SpecCase& out) {
  const double inf = std::numeric_limits<double>::infinity();
  out.box = {Vec::Constant(b.inputs, -inf), Vec::Constant(b.inputs, inf)};
  for (const Atom& a : atoms) {
    bool has_x = false, has_y = false;
    for (const auto& [k, v] : a.coef)
      if (v != 0) (k.first == 'X' ? has_x : has_y) = true;
    if (!has_x && !has_y) {
      if (a.constant > 0) return false;
      continue;
    }
    if (has_x && has_y) return p.error(0, "constraints mixing X and Y are not supported");
    if (has_y) {
      OutputConstraint c{Vec::Zero(b.outputs), -a.constant};
      for (const auto& [k, v] : a.coef) c.coef[k.second] += v;
      out.unsafe.push_back(std::move(c));
      continue;
    }
    int nonzero = 0;
    for (const auto& [k, v] : a.coef) nonzero += v != 0;
    if (nonzero != 1) return p.error(0, "input constraints over several X are not supported");
    for (const auto& [k, v] : a.coef) {
      if (v == 0) continue;
      double bound = -a.constant / v;  // v x + c <= 0
      if (v > 0)
        out.box.hi[k.second] = std::min(out.box.hi[k.second], bound);
      else
        out.box.lo[k.second] = std::max(out.box.lo[k.second], bound);
    }
  }
  for (int64_t i = 0; i < b.inputs; ++i)
    if (!std::isfinite(out.box.lo[i]) || !std::isfinite(out.box.hi[i]))
      return p.error(0, "input X_" + std::to_string(i) + " is not bounded");
  return (out.box.lo.array() <= out.box.hi.array()).all();
}

}  // namespace

Interval Spec::hull() const {
  Interval h = cases.front().box;
  for (const SpecCase& c : cases) {
    h.lo = h.lo.cwiseMin(c.box.lo);
    h.hi = h.hi.cwiseMax(c.box.hi);
  }
  return h;
}

Result<Spec> parse_vnnlib(std::string_view text, std::string_view source) {
  Parser p(text, source);
  ASSIGN_OR_RETURN(std::vector<Sexp> commands, p.all());
  Builder b(p);
  Dnf dnf{{}};
  for (const Sexp& s : commands) {
    std::string head = s.items.empty() ? "" : s.items[0].atom;
    if (head == "declare-const") {
      RETURN_IF_ERROR(b.declare(s));
    } else if (head == "assert" && s.items.size() == 2) {
      ASSIGN_OR_RETURN(Dnf f, b.formula(s.items[1]));
      ASSIGN_OR_RETURN(dnf, b.conjoin(std::move(dnf), f, s.line));
    } else {
      return p.error(s.line, "unsupported command '" + head + "'");
    }
  }
  Spec spec;
  spec.num_inputs = b.inputs;
  spec.num_outputs = b.outputs;
  for (const auto& atoms : dnf) {
    SpecCase c;
    ASSIGN_OR_RETURN(bool feasible, make_case(atoms, b, p, c));
    if (feasible) spec.cases.push_back(std::move(c));
  }
  if (spec.cases.empty()) return p.error(0, "the property has no feasible input region");
  return spec;
}

Result<Spec> read_vnnlib(std::string_view path) {
  ASSIGN_OR_RETURN(std::string text, common::read_input(path));
  return parse_vnnlib(text, path);
}

}  // namespace propdag

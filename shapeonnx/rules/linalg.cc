// Linear algebra: MatMul, Gemm, Einsum, Det.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "common/eval/eval.h"
#include "shapeonnx/rules/rules.h"
#include "shapeonnx/rules/util.h"

namespace shapeonnx {
namespace {

using common::Dims;
using common::Result;
using common::Status;

// numpy.matmul: [..., n, k] x [..., k, m] -> [broadcast(...), n, m]; a 1-D operand gets a 1
// prepended (left) or appended (right) that is dropped from the result.
}  // namespace

Result<Dims> matmul_output_dims(const InferContext& ctx, Dims a, Dims b) {
  if (a.empty() || b.empty()) return ctx.error("MatMul operands must have rank >= 1");
  const bool a_vec = a.size() == 1;
  const bool b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  const int64_t k_a = a[a.size() - 1];
  const int64_t k_b = b[b.size() - 2];
  if (k_a != k_b) {
    return ctx.error("MatMul inner dims differ: " + std::to_string(k_a) + " vs " +
                     std::to_string(k_b));
  }
  std::optional<Dims> batch =
      common::broadcast_shapes(Dims(a.begin(), a.end() - 2), Dims(b.begin(), b.end() - 2));
  if (!batch) return ctx.error("MatMul batch dims do not broadcast");
  Dims out = std::move(*batch);
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
  return out;
}

namespace {

Status matmul_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(Dims out, matmul_output_dims(ctx, ctx.shape(0), ctx.shape(1)));
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// Gemm: op(A) [M, K] x op(B) [K, N] -> [M, N], op = transpose when transA / transB is set.
Status gemm_rule(InferContext& ctx) {
  if (ctx.rank(0) != 2 || ctx.rank(1) != 2) return ctx.error("Gemm operands must be 2-D");
  const Dims& a = ctx.shape(0);
  const Dims& b = ctx.shape(1);
  const bool ta = ctx.node().attr_int("transA", 0) != 0;
  const bool tb = ctx.node().attr_int("transB", 0) != 0;
  const int64_t m = ta ? a[1] : a[0];
  const int64_t k_a = ta ? a[0] : a[1];
  const int64_t k_b = tb ? b[1] : b[0];
  const int64_t n = tb ? b[0] : b[1];
  if (k_a != k_b) {
    return ctx.error("Gemm inner dims differ: " + std::to_string(k_a) + " vs " +
                     std::to_string(k_b));
  }
  if (ctx.has_input(2) && !common::broadcast_shapes({m, n}, ctx.shape(2))) {
    return ctx.error("Gemm C does not broadcast to [M, N]");
  }
  ctx.set_output(0, ctx.dtype(0), {m, n});
  return {};
}

// One operand of an Einsum equation: its letters, with '.' standing for the ellipsis dims.
struct EinsumTerm {
  std::string letters;
  size_t ellipsis = std::string::npos;  ///< index of '.' in `letters`, npos when absent
};

Result<EinsumTerm> parse_term(const InferContext& ctx, std::string_view text) {
  EinsumTerm t;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (t.ellipsis != std::string::npos || text.substr(i, 3) != "...") {
        return ctx.error("bad ellipsis in Einsum equation");
      }
      t.ellipsis = t.letters.size();
      t.letters.push_back('.');
      i += 2;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(c))) return ctx.error("bad Einsum equation");
    t.letters.push_back(c);
  }
  return t;
}

// Collected letter sizes and the broadcast ellipsis dims of all operands.
struct EinsumDims {
  std::map<char, int64_t> letters;
  Dims ellipsis;
};

Status bind_operand(const InferContext& ctx, const EinsumTerm& t, const Dims& shape,
                    EinsumDims& dims) {
  const int64_t named = static_cast<int64_t>(t.letters.size()) - (t.ellipsis != std::string::npos);
  const int64_t ell_rank = static_cast<int64_t>(shape.size()) - named;
  if (ell_rank < 0 || (t.ellipsis == std::string::npos && ell_rank != 0)) {
    return ctx.error("Einsum term '" + t.letters + "' does not match operand rank");
  }
  size_t d = 0;
  for (char c : t.letters) {
    if (c == '.') {
      Dims ell(shape.begin() + d, shape.begin() + d + ell_rank);
      auto b = common::broadcast_shapes(dims.ellipsis, ell);
      if (!b) return ctx.error("Einsum ellipsis dims do not broadcast");
      dims.ellipsis = std::move(*b);
      d += ell_rank;
      continue;
    }
    auto [it, fresh] = dims.letters.emplace(c, shape[d]);
    if (!fresh && it->second != shape[d]) {
      if (it->second != 1 && shape[d] != 1)
        return ctx.error(std::string("Einsum dim '") + c + "' differs between operands");
      it->second = std::max(it->second, shape[d]);
    }
    ++d;
  }
  return {};
}

// The implicit output of an equation without "->": ellipsis, then letters used once, sorted.
std::string implicit_output(const std::vector<EinsumTerm>& terms) {
  std::map<char, int> count;
  bool ellipsis = false;
  for (const EinsumTerm& t : terms) {
    for (char c : t.letters) c == '.' ? (void)(ellipsis = true) : (void)++count[c];
  }
  std::string out = ellipsis ? "." : "";
  for (auto [c, n] : count) {
    if (n == 1) out.push_back(c);
  }
  return out;
}

Status einsum_rule(InferContext& ctx) {
  const std::string eq = ctx.node().attr_string("equation", "");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<EinsumTerm> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    ASSIGN_OR_RETURN(EinsumTerm t, parse_term(ctx, lhs.substr(start, comma - start)));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ctx.num_inputs()) return ctx.error("Einsum terms differ from the inputs");
  EinsumDims dims;
  for (size_t i = 0; i < terms.size(); ++i) {
    RETURN_IF_ERROR(bind_operand(ctx, terms[i], ctx.shape(i), dims));
  }
  std::string out_letters = implicit_output(terms);
  if (arrow != std::string::npos) {
    ASSIGN_OR_RETURN(EinsumTerm out_term, parse_term(ctx, eq.substr(arrow + 2)));
    out_letters = out_term.letters;
  }
  Dims out;
  for (char c : out_letters) {
    if (c == '.') {
      out.insert(out.end(), dims.ellipsis.begin(), dims.ellipsis.end());
      continue;
    }
    auto it = dims.letters.find(c);
    if (it == dims.letters.end())
      return ctx.error(std::string("Einsum output letter '") + c + "' is not in any input");
    out.push_back(it->second);
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// Det([..., M, M]) -> [...].
Status det_rule(InferContext& ctx) {
  const Dims& x = ctx.shape(0);
  if (x.size() < 2 || x[x.size() - 1] != x[x.size() - 2]) {
    return ctx.error("Det needs square matrices in the last two dims");
  }
  ctx.set_output(0, ctx.dtype(0), Dims(x.begin(), x.end() - 2));
  return {};
}

}  // namespace

void register_linalg_rules(ShapeRegistry& table) {
  table.add("MatMul", &matmul_rule);
  table.add("Gemm", &gemm_rule);
  table.add("Einsum", &einsum_rule);
  table.add("Det", &det_rule);
}

}  // namespace shapeonnx

// Einsum (torch.einsum, the batch followed through the equation) and Det (torch.linalg.det).
#include <string>
#include <vector>

#include "common/names.h"
#include "torchonnx/context.h"
#include "torchonnx/pyexpr.h"

namespace torchonnx {

namespace {

using common::Status;

// The output's dim 0 is the batch when it is labelled like dim 0 of every input and every input
// is batched: "bij,bjk->bik", or "...ij,...jk->...ik" over inputs of one rank.
bool einsum_batched(const Context& ctx, std::string equation) {
  std::erase(equation, ' ');
  const size_t arrow = equation.find("->");
  if (arrow == std::string::npos || arrow + 2 >= equation.size()) return false;
  const std::string out = equation.substr(arrow + 2);
  const std::string lead = out.rfind("...", 0) == 0 ? "..." : out.substr(0, 1);
  std::vector<std::string> terms;
  std::string rest = equation.substr(0, arrow);
  for (size_t at; (at = rest.find(',')) != std::string::npos; rest.erase(0, at + 1)) {
    terms.push_back(rest.substr(0, at));
  }
  terms.push_back(rest);
  if (terms.size() != ctx.num_inputs()) return false;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (!ctx.batched(i) || terms[i].rfind(lead, 0) != 0) return false;
    if (lead == "..." && ctx.rank(i) != ctx.rank(0)) return false;
  }
  return true;
}

Status einsum(Context& ctx) {
  const std::string equation = ctx.node().attr_string("equation", "");
  std::vector<py::Expr> args{py::lit(common::python_string_literal(equation))};
  for (size_t i = 0; i < ctx.num_inputs(); ++i) args.push_back(py::Expr::name(ctx.in(i)));
  return ctx.emit(py::call(py::torch("einsum"), std::move(args)), "einsum",
                  einsum_batched(ctx, equation));
}

// Det: torch.linalg.det.
Status det(Context& ctx) {
  if (ctx.rank(0) < 2) return ctx.error("input must have rank >= 2");
  return ctx.emit(py::call(py::torch("linalg.det"), {py::Expr::name(ctx.in(0))}), "det",
                  ctx.batched(0) && ctx.rank(0) > 2);
}

}  // namespace

void register_linalg_einsum(HandlerRegistry& t) {
  t.add("Einsum", einsum);
  t.add("Det", det);
}

}  // namespace torchonnx

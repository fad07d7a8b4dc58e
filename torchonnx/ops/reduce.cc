// Reductions (Reduce*, with axes as attribute or input) and CumSum.
#include <algorithm>
#include <map>
#include <string>

#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::DType;
using common::Status;
using common::Tensor;

struct Reduction {
  std::string_view pre;   ///< applied to x first ("$.abs()")
  std::string_view fn;    ///< method taking (dims, keepdim=)
  std::string_view post;  ///< applied to the result ("torch.sqrt($)")
  std::string_view hint;
};

const std::map<std::string_view, Reduction>& reductions() {
  static const std::map<std::string_view, Reduction> table = {
      {"ReduceSum", {"$", "sum", "$", "sum"}},
      {"ReduceMean", {"$", "mean", "$", "mean"}},
      {"ReduceMax", {"$", "amax", "$", "max"}},
      {"ReduceMin", {"$", "amin", "$", "min"}},
      {"ReduceProd", {"$", "prod", "$", "prod"}},
      {"ReduceL1", {"$.abs()", "sum", "$", "l1"}},
      {"ReduceL2", {"($ * $)", "sum", "torch.sqrt($)", "l2"}},
      {"ReduceSumSquare", {"($ * $)", "sum", "$", "sum_square"}},
      {"ReduceLogSum", {"$", "sum", "torch.log($)", "log_sum"}},
      {"ReduceLogSumExp", {"$", "logsumexp", "$", "log_sum_exp"}},
  };
  return table;
}

std::string subst(std::string_view pattern, const std::string& x) {
  std::string out;
  for (char c : pattern) c == '$' ? void(out += x) : void(out += c);
  return out;
}

bool empty_axis(const common::Dims& dims, const std::vector<int64_t>& axes) {
  return std::any_of(axes.begin(), axes.end(), [&](int64_t a) { return dims[a] == 0; });
}

// ReduceMax's (`max`) or ReduceMin's value over an empty set, as a Python literal.
std::string identity_value(DType t, bool max) {
  if (common::is_floating(t)) return std::string(max ? "float(\"-inf\")" : "float(\"inf\")");
  switch (t) {
    case DType::kBool:
      return std::string(max ? "False" : "True");
    case DType::kUInt8:
      return std::string(max ? "0" : "255");
    case DType::kInt8:
      return std::string(max ? "-128" : "127");
    case DType::kInt16:
      return std::string(max ? "-32768" : "32767");
    case DType::kInt32:
      return std::string(max ? "-2147483648" : "2147483647");
    case DType::kInt64:
      return std::string(max ? "-9223372036854775808" : "9223372036854775807");
    default:
      return "";
  }
}

Status reduce(Context& ctx) {
  const Reduction& r = reductions().at(ctx.node().op_type);
  const bool extreme = r.fn == "amax" || r.fn == "amin";
  const bool axes_input = ctx.num_inputs() > 1 ||
                          (ctx.node().op_type == "ReduceSum" && ctx.opset() >= 13) ||
                          ctx.opset() >= 18;
  bool present = false;
  ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                   ints_from(ctx, axes_input ? 1 : 99, "axes", &present));
  const int64_t rank = ctx.rank(0);
  if (axes.empty() && ctx.node().attr_int("noop_with_empty_axes", 0) != 0) {
    ctx.alias(0, ctx.operand(0));
    return {};
  }
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  ASSIGN_OR_RETURN(axes, axes_at(ctx, axes, rank));
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  const bool keep = ctx.node().attr_int("keepdims", 1) != 0;
  const std::string kd = keep ? ", keepdim=True" : "";
  std::string expr = subst(r.pre, ctx.in(0));
  if (extreme && empty_axis(ctx.shape(0), axes)) {
    // torch's amax/amin reject an empty dim; ONNX gives the identity (-inf for max, or the type's
    // lowest value). sum keeps the batch and gives the output's shape.
    const std::string value = identity_value(ctx.dtype(0), r.fn == "amax");
    if (value.empty()) return ctx.error("no empty-set value for this element type");
    ASSIGN_OR_RETURN(std::string dtype, torch_dtype(ctx.dtype(0)));
    expr = "torch.full_like(" + expr + ".sum(" + int_or_tuple(axes, false) + kd + "), " + value +
           ", dtype=" + dtype + ")";
  } else if (r.fn == "prod") {
    // prod reduces one dim at a time; go from the last so the remaining indices stay valid.
    for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
      expr += ".prod(" + std::to_string(*it) + kd + ")";
    }
  } else if (rank == 0) {
    expr = "torch." + std::string(r.fn) + "(" + expr + (r.fn == "logsumexp" ? ", ()" : "") + ")";
  } else {
    expr += "." + std::string(r.fn) + "(" + int_or_tuple(axes, false) + kd + ")";
  }
  expr = subst(r.post, expr);
  // torch sums integer types into int64.
  const DType t = ctx.dtype(0);
  if (common::is_integer(t) && t != DType::kInt64 && !extreme) {
    expr = cast_to_output(ctx, expr, DType::kInt64);
  }
  // The batch dim survives unless reduced; without keepdims it moves down past reduced dims.
  const int in_axis = ctx.batch_axis(0);
  int batch_axis = in_axis;
  for (int64_t a : axes) {
    if (a == in_axis) batch_axis = -1;
    if (a < in_axis && batch_axis >= 0 && !keep) --batch_axis;
  }
  return ctx.emit_at(py::Expr::raw(expr, {py::Ns::kTorch}), r.hint, batch_axis);
}

Status cumsum(Context& ctx) {
  const common::Tensor* a = ctx.constant(1);
  if (!a) return ctx.error("axis must be a constant");
  ASSIGN_OR_RETURN(const int64_t axis, axis_at(ctx, a->int_at(0), ctx.rank(0)));
  const bool exclusive = ctx.node().attr_int("exclusive", 0) != 0;
  const bool reverse = ctx.node().attr_int("reverse", 0) != 0;
  const std::string ax = std::to_string(axis);
  std::string x = ctx.in(0);
  std::string src = reverse ? x + ".flip(" + ax + ")" : x;
  std::string expr = "torch.cumsum(" + src + ", " + ax + ")";
  if (exclusive) expr += " - " + src;
  if (reverse) expr = "(" + expr + ").flip(" + ax + ")";
  const DType t = ctx.dtype(0);
  if (common::is_integer(t) && t != DType::kInt64) expr = cast_to_output(ctx, expr, DType::kInt64);
  const int in_axis = ctx.batch_axis(0);
  return ctx.emit_at(py::Expr::raw(expr, {py::Ns::kTorch}), "cumsum",
                     in_axis == axis ? -1 : in_axis);
}

// ArgMax / ArgMin (select_last_index through a flip), TopK (K constant).
Status arg_extreme(Context& ctx) {
  ASSIGN_OR_RETURN(const int64_t axis, axis_at(ctx, ctx.node().attr_int("axis", 0), ctx.rank(0)));
  const bool keep = ctx.node().attr_int("keepdims", 1) != 0;
  const bool last = ctx.node().attr_int("select_last_index", 0) != 0;
  const std::string fn = ctx.node().op_type == "ArgMax" ? "torch.argmax(" : "torch.argmin(";
  const std::string x = last ? ctx.in(0) + ".flip(" + std::to_string(axis) + ")" : ctx.in(0);
  std::string expr = fn + x + ", " + std::to_string(axis) + (keep ? ", keepdim=True)" : ")");
  if (last) expr = std::to_string(ctx.shape(0)[axis] - 1) + " - " + expr;
  return ctx.emit(py::Expr::raw(expr, {py::Ns::kTorch}), "argmax", ctx.batched(0) && axis != 0);
}

Status topk(Context& ctx) {
  int64_t k = ctx.node().attr_int("k", -1);
  if (ctx.has_input(1)) {
    const Tensor* t = ctx.constant(1);
    if (!t) return ctx.error("K must be a constant");
    k = t->int_at(0);
  }
  ASSIGN_OR_RETURN(const int64_t axis, axis_at(ctx, ctx.node().attr_int("axis", -1), ctx.rank(0)));
  const bool largest = ctx.node().attr_int("largest", 1) != 0;
  std::string expr = "torch.topk(" + ctx.in(0) + ", " + std::to_string(k) + ", " +
                     std::to_string(axis) + (largest ? "" : ", largest=False") + ")";
  ctx.emit_tuple(py::Expr::raw(expr, {py::Ns::kTorch}), "topk", ctx.batched(0) && axis != 0);
  return {};
}

}  // namespace

void register_reduce(HandlerRegistry& t) {
  for (const auto& [op, r] : reductions()) t.add(op, reduce);
  t.add("CumSum", cumsum);
  t.add("ArgMax", arg_extreme);
  t.add("ArgMin", arg_extreme);
  t.add("TopK", topk);
}

}  // namespace torchonnx

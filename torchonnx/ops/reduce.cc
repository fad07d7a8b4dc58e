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

// What x goes through before the reduction.
enum class Pre : uint8_t { kNone, kAbs, kSquare };

struct Reduction {
  Pre pre;
  std::string_view fn;    ///< method taking (dims, keepdim=)
  std::string_view post;  ///< torch.<post> applied to the result ("sqrt"), or ""
  std::string_view hint;
};

const std::map<std::string_view, Reduction>& reductions() {
  static const std::map<std::string_view, Reduction> table = {
      {"ReduceSum", {Pre::kNone, "sum", "", "sum"}},
      {"ReduceMean", {Pre::kNone, "mean", "", "mean"}},
      {"ReduceMax", {Pre::kNone, "amax", "", "max"}},
      {"ReduceMin", {Pre::kNone, "amin", "", "min"}},
      {"ReduceProd", {Pre::kNone, "prod", "", "prod"}},
      {"ReduceL1", {Pre::kAbs, "sum", "", "l1"}},
      {"ReduceL2", {Pre::kSquare, "sum", "sqrt", "l2"}},
      {"ReduceSumSquare", {Pre::kSquare, "sum", "", "sum_square"}},
      {"ReduceLogSum", {Pre::kNone, "sum", "log", "log_sum"}},
      {"ReduceLogSumExp", {Pre::kNone, "logsumexp", "", "log_sum_exp"}},
  };
  return table;
}

py::Expr pre(Pre p, const py::Expr& x) {
  if (p == Pre::kAbs) return x.method("abs");
  if (p == Pre::kSquare) return py::paren(py::binary("*", x, x));
  return x;
}

// `x.<fn>(dims, keepdim=True)` (the keyword when `keep`).
py::Expr reduced(const py::Expr& x, std::string fn, py::Expr dims, bool keep) {
  std::vector<py::Keyword> kd;
  if (keep) kd.push_back({"keepdim", py::lit("True")});
  return x.method(std::move(fn), {std::move(dims)}, std::move(kd));
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
  py::Expr expr = pre(r.pre, py::Expr::name(ctx.in(0)));
  if (extreme && empty_axis(ctx.shape(0), axes)) {
    // torch's amax/amin reject an empty dim; ONNX gives the identity (-inf for max, or the type's
    // lowest value). sum keeps the batch and gives the output's shape.
    const std::string value = identity_value(ctx.dtype(0), r.fn == "amax");
    if (value.empty()) return ctx.error("no empty-set value for this element type");
    ASSIGN_OR_RETURN(py::Expr dtype, dtype_expr(ctx.dtype(0)));
    py::Expr sum = reduced(expr, "sum", py::lit(int_or_tuple(axes, false)), keep);
    expr = py::call(py::torch("full_like"), {sum, py::lit(value)}, {{"dtype", dtype}});
  } else if (r.fn == "prod") {
    // prod reduces one dim at a time; go from the last so the remaining indices stay valid.
    for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
      expr = reduced(expr, "prod", py::lit(*it), keep);
    }
  } else if (rank == 0) {
    std::vector<py::Expr> args{expr};
    if (r.fn == "logsumexp") args.push_back(py::tuple({}));
    expr = py::call(py::torch(std::string(r.fn)), std::move(args));
  } else {
    expr = reduced(expr, std::string(r.fn), py::lit(int_or_tuple(axes, false)), keep);
  }
  if (!r.post.empty()) expr = py::call(py::torch(std::string(r.post)), {expr});
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
  return ctx.emit_at(expr, r.hint, batch_axis);
}

Status cumsum(Context& ctx) {
  const common::Tensor* a = ctx.constant(1);
  if (!a) return ctx.error("axis must be a constant");
  ASSIGN_OR_RETURN(const int64_t axis, axis_at(ctx, a->int_at(0), ctx.rank(0)));
  const bool exclusive = ctx.node().attr_int("exclusive", 0) != 0;
  const bool reverse = ctx.node().attr_int("reverse", 0) != 0;
  const py::Expr ax = py::lit(axis);
  const py::Expr x = py::Expr::name(ctx.in(0));
  const py::Expr src = reverse ? x.method("flip", {ax}) : x;
  py::Expr expr = py::call(py::torch("cumsum"), {src, ax});
  if (exclusive) expr = py::binary("-", expr, src);
  if (reverse) expr = py::paren(expr).method("flip", {ax});
  const DType t = ctx.dtype(0);
  if (common::is_integer(t) && t != DType::kInt64) expr = cast_to_output(ctx, expr, DType::kInt64);
  const int in_axis = ctx.batch_axis(0);
  return ctx.emit_at(expr, "cumsum", in_axis == axis ? -1 : in_axis);
}

// ArgMax / ArgMin (select_last_index through a flip), TopK (K constant).
Status arg_extreme(Context& ctx) {
  ASSIGN_OR_RETURN(const int64_t axis, axis_at(ctx, ctx.node().attr_int("axis", 0), ctx.rank(0)));
  const bool keep = ctx.node().attr_int("keepdims", 1) != 0;
  const bool last = ctx.node().attr_int("select_last_index", 0) != 0;
  const std::string fn = ctx.node().op_type == "ArgMax" ? "argmax" : "argmin";
  const py::Expr in = py::Expr::name(ctx.in(0));
  const py::Expr x = last ? in.method("flip", {py::lit(axis)}) : in;
  std::vector<py::Keyword> kd;
  if (keep) kd.push_back({"keepdim", py::lit("True")});
  py::Expr expr = py::call(py::torch(fn), {x, py::lit(axis)}, std::move(kd));
  if (last) expr = py::binary("-", py::lit(ctx.shape(0)[axis] - 1), expr);
  return ctx.emit(expr, "argmax", ctx.batched(0) && axis != 0);
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
  std::vector<py::Keyword> kw;
  if (!largest) kw.push_back({"largest", py::lit("False")});
  py::Expr expr =
      py::call(py::torch("topk"), {py::Expr::name(ctx.in(0)), py::lit(k), py::lit(axis)}, kw);
  ctx.emit_tuple(expr, "topk", ctx.batched(0) && axis != 0);
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

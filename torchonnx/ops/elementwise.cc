// Elementwise ops: unary math, binary arithmetic and comparisons, variadic Max/Min/Sum/Mean,
// Clip, Cast/CastLike, Where, Shrink, Trilu, PRelu, BitShift.
#include <map>
#include <string>

#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::DType;
using common::Status;

// An elementwise op as generated code: a function of torch (`fn`), or an operator (`op`).
struct Spec {
  std::string_view fn;  ///< torch.<fn>(...), or "" for the operator
  std::string_view op;  ///< "+", "-" (unary for one operand), ...
  std::string_view hint;
};

const std::map<std::string_view, Spec>& unary_specs() {
  static const std::map<std::string_view, Spec> specs = {
      {"Abs", {"abs", "", "abs"}},
      {"Neg", {"", "-", "neg"}},
      {"Exp", {"exp", "", "exp"}},
      {"Log", {"log", "", "log"}},
      {"Sqrt", {"sqrt", "", "sqrt"}},
      {"Reciprocal", {"reciprocal", "", "recip"}},
      {"Floor", {"floor", "", "floor"}},
      {"Ceil", {"ceil", "", "ceil"}},
      {"Round", {"round", "", "round"}},
      {"Sign", {"sign", "", "sign"}},
      {"Sin", {"sin", "", "sin"}},
      {"Cos", {"cos", "", "cos"}},
      {"Tan", {"tan", "", "tan"}},
      {"Asin", {"asin", "", "asin"}},
      {"Acos", {"acos", "", "acos"}},
      {"Atan", {"atan", "", "atan"}},
      {"Sinh", {"sinh", "", "sinh"}},
      {"Cosh", {"cosh", "", "cosh"}},
      {"Asinh", {"asinh", "", "asinh"}},
      {"Acosh", {"acosh", "", "acosh"}},
      {"Atanh", {"atanh", "", "atanh"}},
      {"Erf", {"erf", "", "erf"}},
      {"IsNaN", {"isnan", "", "isnan"}},
      {"Not", {"logical_not", "", "not_"}},
      {"BitwiseNot", {"bitwise_not", "", "bitnot"}},
  };
  return specs;
}

py::Expr torch_call(std::string_view fn, std::vector<py::Expr> args,
                    std::vector<py::Keyword> keywords = {}) {
  return py::call(py::torch(std::string(fn)), std::move(args), std::move(keywords));
}

Status unary(Context& ctx) {
  const Spec& spec = unary_specs().at(ctx.node().op_type);
  py::Expr x = py::Expr::name(ctx.in(0));
  py::Expr expr = spec.fn.empty() ? py::unary(spec.op, x) : torch_call(spec.fn, {x});
  return ctx.emit_at(expr, spec.hint, ctx.batch_axis(0));
}

const std::map<std::string_view, Spec>& binary_specs() {
  static const std::map<std::string_view, Spec> specs = {
      {"Add", {"", "+", "add"}},
      {"Sub", {"", "-", "sub"}},
      {"Mul", {"", "*", "mul"}},
      {"Div", {"", "/", "div"}},
      {"Equal", {"", "==", "eq"}},
      {"Less", {"", "<", "lt"}},
      {"Greater", {"", ">", "gt"}},
      {"LessOrEqual", {"", "<=", "le"}},
      {"GreaterOrEqual", {"", ">=", "ge"}},
      {"And", {"logical_and", "", "and_"}},
      {"Or", {"logical_or", "", "or_"}},
      {"Xor", {"logical_xor", "", "xor"}},
      {"BitwiseAnd", {"bitwise_and", "", "bitand"}},
      {"BitwiseOr", {"bitwise_or", "", "bitor"}},
      {"BitwiseXor", {"bitwise_xor", "", "bitxor"}},
  };
  return specs;
}

// Operands of a binary op: at most one inlined Python number, and only for operator syntax.
std::vector<py::Expr> binary_operands(Context& ctx, bool allow_literal) {
  if (!allow_literal) return py::names({ctx.in(0), ctx.in(1)});
  if (ctx.inlinable(0) && ctx.inlinable(1)) return py::names({ctx.in(0), ctx.scalar_or_in(1)});
  return py::names({ctx.scalar_or_in(0), ctx.scalar_or_in(1)});
}

// A floating product of a computed value with itself.
bool is_square(Context& ctx) {
  const common::Node& node = ctx.node();
  return node.inputs.size() == 2 && node.inputs[0] == node.inputs[1] &&
         common::is_floating(ctx.dtype(0)) && !ctx.constant(0);
}

Status binary(Context& ctx) {
  const std::string& op = ctx.node().op_type;
  const Spec& spec = binary_specs().at(op);
  const bool is_int = common::is_integer(ctx.dtype(0));
  const int axis = broadcast_batch_axis(ctx);
  if (op == "Div" && is_int) {
    return ctx.emit_at(torch_call("div", py::names({ctx.in(0), ctx.in(1)}),
                                  {{"rounding_mode", py::str_lit("trunc")}}),
                       spec.hint, axis);
  }
  // A computed divisor as a product with its reciprocal: the form verifiers bound (auto_LiRPA has
  // no bound for a division by a perturbed tensor).
  if (op == "Div" && !ctx.constant(1)) {
    std::vector<py::Expr> args = binary_operands(ctx, true);
    return ctx.emit_at(py::binary("*", args[0], torch_call("reciprocal", {args[1]})), spec.hint,
                       axis);
  }
  // Mul(x, x) (slimonnx's form of Pow(x, 2)) says what it is: a square, at least 0 (auto_LiRPA
  // finds Mul(x, x) itself; a reader that sees two operands bounds a product of independent
  // intervals). Exact: torch computes x * x.
  if (op == "Mul" && is_square(ctx)) {
    return ctx.emit_at(py::Expr::name(ctx.in(0)).method("square"), "square", ctx.batch_axis(0));
  }
  std::vector<py::Expr> args = binary_operands(ctx, spec.fn.empty());
  py::Expr expr = spec.fn.empty() ? py::binary(spec.op, args[0], args[1])
                                  : torch_call(spec.fn, std::move(args));
  return ctx.emit_at(expr, spec.hint, axis);
}

// Inputs are read last first where both may be new buffers: the buffers keep the numbering of
// earlier releases (generated code stays byte-identical).
Status pow_op(Context& ctx) {
  py::Expr exponent = py::Expr::name(ctx.scalar_or_in(1));
  py::Expr x = py::Expr::name(ctx.in(0));
  py::Expr expr = torch_call("pow", {x, exponent});
  const common::Tensor* e = ctx.constant(1);
  if (e && e->numel() == 1 && e->double_at(0) == 2.0 && common::is_floating(ctx.dtype(0))) {
    expr = x.method("square");  // exact (torch computes x * x), and cheaper than pow
  }
  DType promoted = common::is_floating(ctx.dtype(1)) ? ctx.dtype(1) : ctx.dtype(0);
  if (common::is_floating(ctx.dtype(0))) promoted = ctx.dtype(0);
  return ctx.emit_at(cast_to_output(ctx, expr, promoted), "pow", broadcast_batch_axis(ctx));
}

Status mod_op(Context& ctx) {
  const bool fmod = ctx.node().attr_int("fmod", 0) != 0;
  py::Expr divisor = py::Expr::name(ctx.scalar_or_in(1));  // read first, as in pow_op
  py::Expr x = py::Expr::name(ctx.in(0));
  return ctx.emit_at(torch_call(fmod ? "fmod" : "remainder", {x, divisor}), "mod",
                     broadcast_batch_axis(ctx));
}

// Max, Min, Sum, Mean over any number of inputs.
Status variadic(Context& ctx) {
  const std::string& op = ctx.node().op_type;
  std::vector<py::Expr> args;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) args.push_back(py::Expr::name(ctx.in(i)));
  if (args.size() == 1 && op != "Mean") {
    ctx.alias(0, ctx.operand(0));
    return {};
  }
  py::Expr expr = args[0];
  for (size_t i = 1; i < args.size(); ++i) {
    if (op == "Max") expr = torch_call("maximum", {expr, args[i]});
    if (op == "Min") expr = torch_call("minimum", {expr, args[i]});
    if (op == "Sum" || op == "Mean") expr = py::binary("+", expr, args[i]);
  }
  if (op == "Mean") {
    expr = py::binary("/", py::paren(expr), py::lit(static_cast<int64_t>(args.size())));
  }
  std::string hint = op == "Max" ? "max" : op == "Min" ? "min" : op == "Sum" ? "sum" : "mean";
  return ctx.emit_at(expr, hint, broadcast_batch_axis(ctx));
}

Status clip(Context& ctx) {
  std::string lo, hi;
  const bool use_inputs = ctx.opset() >= 11;
  if (use_inputs) {
    for (size_t i = 1; i <= 2; ++i) {
      if (!ctx.has_input(i)) continue;
      const common::Tensor* c = ctx.constant(i);
      std::string v = c && c->numel() == 1 ? py_scalar(*c) : ctx.in(i);
      (i == 1 ? lo : hi) = v;
    }
  } else {
    if (ctx.node().has_attr("min")) lo = py_float(ctx.node().attr_float("min", 0));
    if (ctx.node().has_attr("max")) hi = py_float(ctx.node().attr_float("max", 0));
  }
  if (lo.empty() && hi.empty()) {
    ctx.alias(0, ctx.operand(0));
    return {};
  }
  std::vector<py::Keyword> bounds;
  if (!lo.empty()) bounds.push_back({"min", py::lit(lo)});
  if (!hi.empty()) bounds.push_back({"max", py::lit(hi)});
  return ctx.emit_at(torch_call("clamp", {py::Expr::name(ctx.in(0))}, std::move(bounds)), "clip",
                     broadcast_batch_axis(ctx));
}

Status cast(Context& ctx) {
  if (ctx.out_dtype() == ctx.dtype(0)) {
    ctx.alias(0, ctx.operand(0));
    return {};
  }
  auto dtype = dtype_expr(ctx.out_dtype());
  if (!dtype.ok()) return ctx.error(dtype.error().message);
  return ctx.emit_at(py::Expr::name(ctx.in(0)).method("to", {*dtype}), "cast", ctx.batch_axis(0));
}

// y = x + bias where x < -lambd, x - bias where x > lambd, else 0.
Status shrink(Context& ctx) {
  const py::Expr x = py::Expr::name(ctx.in(0));
  const py::Expr l = py::lit(py_float(ctx.node().attr_float("lambd", 0.5f)));
  const py::Expr b = py::lit(py_float(ctx.node().attr_float("bias", 0.0f)));
  py::Expr above = torch_call(
      "where", {py::binary(">", x, l), py::binary("-", x, b), torch_call("zeros_like", {x})});
  return ctx.emit(
      torch_call("where", {py::binary("<", x, py::unary("-", l)), py::binary("+", x, b), above}),
      "shrink", ctx.batched(0));
}

Status trilu(Context& ctx) {
  int64_t k = 0;
  if (ctx.has_input(1)) {
    const common::Tensor* t = ctx.constant(1);
    if (!t) return ctx.error("k must be a constant");
    k = t->int_at(0);
  }
  const bool upper = ctx.node().attr_int("upper", 1) != 0;
  std::vector<py::Expr> args{py::Expr::name(ctx.in(0))};
  if (k != 0) args.push_back(py::lit(k));
  return ctx.emit(torch_call(upper ? "triu" : "tril", std::move(args)), upper ? "triu" : "tril",
                  ctx.batched(0) && ctx.rank(0) > 2);
}

Status where(Context& ctx) {
  // Read last first, as in pow_op.
  py::Expr b = py::Expr::name(ctx.in(2));
  py::Expr a = py::Expr::name(ctx.in(1));
  py::Expr cond = py::Expr::name(ctx.in(0));
  return ctx.emit_at(torch_call("where", {cond, a, b}), "where", broadcast_batch_axis(ctx));
}

Status is_inf(Context& ctx) {
  const bool pos = ctx.node().attr_int("detect_positive", 1) != 0;
  const bool neg = ctx.node().attr_int("detect_negative", 1) != 0;
  const py::Expr x = py::Expr::name(ctx.in(0));
  py::Expr expr = pos && neg ? torch_call("isinf", {x})
                  : pos      ? torch_call("isposinf", {x})
                  : neg      ? torch_call("isneginf", {x})
                             : torch_call("zeros_like", {x}, {{"dtype", py::torch("bool")}});
  return ctx.emit(expr, "isinf", ctx.batched(0));
}

// PRelu(x, slope): x where x >= 0, else x * slope (the slope broadcasts).
// Before opset 7 a 1-D slope holds one value per channel (dim 1): it is reshaped to [C, 1, ...].
Status prelu(Context& ctx) {
  const py::Expr x = py::Expr::name(ctx.in(0));
  py::Expr slope = py::Expr::name(ctx.in(1));
  const bool per_channel =
      ctx.opset() < 7 && ctx.rank(1) == 1 && ctx.rank(0) > 2 && ctx.shape(1)[0] == ctx.shape(0)[1];
  if (per_channel) {
    std::vector<int64_t> dims{ctx.shape(1)[0]};
    dims.resize(ctx.rank(0) - 1, 1);
    slope = slope.method("reshape", py::ints(dims));
  }
  return ctx.emit(
      torch_call("where", {py::binary("<", x, py::lit(0)), py::binary("*", x, slope), x}), "prelu",
      per_channel ? ctx.batched(0) : broadcast_batched(ctx));
}

// BitShift on uint8, the one unsigned type every supported torch version has.
Status bit_shift(Context& ctx) {
  if (ctx.dtype(0) != DType::kUInt8) {
    return ctx.error("BitShift on " + std::string(common::dtype_name(ctx.dtype(0))) +
                     " is not supported (PyTorch 1.13 has no such unsigned type)");
  }
  const std::string direction = ctx.node().attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") {
    return ctx.error("direction must be LEFT or RIGHT, got '" + direction + "'");
  }
  py::Expr shift = py::Expr::name(ctx.scalar_or_in(1));  // read first, as in pow_op
  py::Expr x = py::Expr::name(ctx.in(0));
  return ctx.emit(py::binary(direction == "LEFT" ? "<<" : ">>", x, shift), "shifted",
                  broadcast_batched(ctx));
}

}  // namespace

void register_elementwise(HandlerRegistry& t) {
  for (const auto& [op, spec] : unary_specs()) t.add(op, unary);
  for (const auto& [op, spec] : binary_specs()) t.add(op, binary);
  t.add("Pow", pow_op);
  t.add("Mod", mod_op);
  for (std::string_view op : {"Max", "Min", "Sum", "Mean"}) t.add(op, variadic);
  t.add("Clip", clip);
  t.add("Cast", cast);
  t.add("CastLike", cast);
  t.add("Shrink", shrink);
  t.add("Trilu", trilu);
  t.add("Where", where);
  t.add("IsInf", is_inf);
  t.add("PRelu", prelu);
  t.add("BitShift", bit_shift);
}

}  // namespace torchonnx

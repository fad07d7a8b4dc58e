// Padding, the index family's ops that write a tensor around the input: Pad (every mode) and
// CenterCropPad.
#include <string>
#include <vector>

#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::DType;
using common::Status;
using common::Tensor;

// F.pad's list for per-dim amounts `begin`/`end` (last dim first, down to the outermost dim that
// changes, whose index goes to `first`); empty when no dim changes.
std::vector<int64_t> torch_pad(const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                               int64_t& first) {
  const auto rank = static_cast<int64_t>(begin.size());
  first = 0;
  while (first < rank && begin[first] == 0 && end[first] == 0) ++first;
  std::vector<int64_t> tp;
  for (int64_t d = rank - 1; d >= first; --d) {
    tp.push_back(begin[d]);
    tp.push_back(end[d]);
  }
  return tp;
}

Status pad(Context& ctx) {
  const int64_t rank = ctx.rank(0);
  std::vector<int64_t> pads;
  std::string value;
  ASSIGN_OR_RETURN(pads, ints_from(ctx, 1, ctx.opset() < 11 ? "pads" : ""));
  if (ctx.opset() < 11) {
    value = py_float(ctx.node().attr_float("value", 0.0f));
  } else {
    if (ctx.has_input(2)) {
      const Tensor* v = ctx.constant(2);
      if (!v) return ctx.error("constant_value must be a constant");
      value = py_scalar(*v);
    }
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, ints_from(ctx, 3, ""));
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  const size_t n = axes.size();
  if (pads.size() != 2 * n) return ctx.error("pads do not match the input rank");
  std::vector<int64_t> begin(rank, 0), end(rank, 0);
  for (size_t j = 0; j < n; ++j) {
    ASSIGN_OR_RETURN(const int64_t a, axis_at(ctx, axes[j], rank));
    begin[a] = pads[j];
    end[a] = pads[j + n];
  }
  int64_t first = 0;  // outermost padded dim
  const std::vector<int64_t> tp = torch_pad(begin, end, first);
  if (tp.empty()) {
    ctx.alias(0, ctx.operand(0));
    return {};
  }
  const std::string mode = ctx.node().attr_string("mode", "constant");
  // torch's reflect/replicate/circular kernels take floating types only; float64 is exact here.
  const bool widen = mode != "constant" && !common::is_floating(ctx.dtype(0));
  py::Expr x = py::Expr::name(ctx.in(0));
  if (widen) x = x.method("to", {py::torch("float64")});
  std::vector<py::Keyword> kw;
  if (mode == "reflect")
    kw.push_back({"mode", py::str_lit("reflect")});
  else if (mode == "edge")
    kw.push_back({"mode", py::str_lit("replicate")});
  else if (mode == "wrap")
    kw.push_back({"mode", py::str_lit("circular")});
  else if (mode != "constant")
    return ctx.error("unknown pad mode");
  else if (!value.empty() && value != "0" && value != "0.0")
    kw.push_back({"value", py::lit(value)});
  py::Expr expr = py::call(py::fn("pad"), {x, py::tuple(py::ints(tp))}, std::move(kw));
  if (widen) expr = cast_to_output(ctx, expr, DType::kDouble);
  return ctx.emit(expr, "pad", ctx.batched(0) && first > 0);
}

// CenterCropPad: F.pad with each axis's centred padding, negative where it crops (an odd
// difference leaves the extra element at the end).
Status center_crop_pad(Context& ctx) {
  const int64_t rank = ctx.rank(0);
  ASSIGN_OR_RETURN(std::vector<int64_t> lengths, ints_from(ctx, 1, ""));
  std::vector<int64_t> axes = ctx.node().attr_ints("axes");
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (lengths.size() != axes.size()) return ctx.error("shape length does not match the axes");
  std::vector<int64_t> begin(rank, 0), end(rank, 0);
  for (size_t j = 0; j < axes.size(); ++j) {
    ASSIGN_OR_RETURN(const int64_t a, axis_at(ctx, axes[j], rank));
    const int64_t diff = lengths[j] - ctx.shape(0)[a];
    begin[a] = diff >= 0 ? diff / 2 : -(-diff / 2);
    end[a] = diff - begin[a];
  }
  int64_t first = 0;  // outermost changed dim
  const std::vector<int64_t> tp = torch_pad(begin, end, first);
  if (tp.empty()) {
    ctx.alias(0, ctx.operand(0));
    return {};
  }
  return ctx.emit(py::call(py::fn("pad"), {py::Expr::name(ctx.in(0)), py::tuple(py::ints(tp))}),
                  "crop_pad", ctx.batched(0) && first > 0);
}

}  // namespace

void register_index_pad(HandlerRegistry& t) {
  t.add("Pad", pad);
  t.add("CenterCropPad", center_crop_pad);
}

}  // namespace torchonnx

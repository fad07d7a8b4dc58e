// OneHot (opsets 9 and 11): a comparison of the (runtime) indices with arange(depth) along the
// new axis, mapped to the off/on values with torch.where. Depth must be static; indices outside
// the valid range give all-off rows, as ONNX specifies.
#include <string>
#include <vector>

#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::DType;
using common::Status;

// Indices as int64 (ONNX casts non-integer indices to integers, truncating).
py::Expr long_indices(const Context& ctx, const py::Expr& x) {
  return ctx.dtype(0) == DType::kInt64 ? x : x.method("to", {py::torch("int64")});
}

Status one_hot(Context& ctx) {
  const common::Tensor* depth_t = ctx.constant(1);
  if (!depth_t || depth_t->numel() != 1) return ctx.error("depth must be a constant scalar");
  const int64_t depth = depth_t->int_at(0);
  if (depth < 1) return ctx.error("depth must be positive");
  const int64_t in_rank = ctx.rank(0);
  ASSIGN_OR_RETURN(const int64_t axis, axis_at(ctx, ctx.node().attr_int("axis", -1), in_rank + 1));
  // Negative positions relative to the output's last dim, so that broadcasting (and vmap over
  // extra leading dims) line the new axis up wherever dim 0 is.
  const int64_t after = in_rank - axis;  // output dims after the new axis
  const py::Expr d = py::lit(depth);
  const py::Expr x = py::Expr::name(ctx.in(0));
  py::Expr idx = long_indices(ctx, x);
  // Opset 11 counts negative indices from the end; opset 9 treats them as out of range.
  if (ctx.opset() >= 11) {
    idx = py::paren(py::binary("+", idx, py::binary("*", py::binary("<", idx, py::lit(0)), d)));
  }
  std::vector<int64_t> ashape{depth};
  ashape.insert(ashape.end(), after, 1);
  py::Expr arange = py::call(py::torch("arange"), {d}, {{"device", x.attr("device")}});
  if (after > 0) arange = arange.method("reshape", py::ints(ashape));
  const py::Expr mask =
      py::paren(py::binary("==", idx.method("unsqueeze", {py::lit(-after - 1)}), arange));
  const py::Expr values = py::Expr::name(ctx.in(2));
  py::Expr expr = py::call(py::torch("where"), {mask, values[py::lit(1)], values[py::lit(0)]});
  return ctx.emit(expr, "onehot", ctx.batched(0) && axis != 0);
}

}  // namespace

void register_index_onehot(HandlerRegistry& t) { t.add("OneHot", one_hot); }

}  // namespace torchonnx

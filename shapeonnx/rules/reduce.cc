// Reductions: Reduce*, ArgMax/ArgMin, TopK, CumSum.
#include <string>

#include "shapeonnx/rules/rules.h"
#include "shapeonnx/rules/util.h"

namespace shapeonnx {
namespace {

using common::Dims;
using common::DType;
using common::Status;

// Reduced dims: axes listed are dropped, or kept as 1 with keepdims.
Dims reduce_dims(const Dims& in, const std::vector<bool>& reduced, bool keepdims) {
  Dims out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(in[i]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

// Reduce*(data, axes?): axes from the input (ReduceSum since opset 13, the others since 18) or
// the attribute; no axes reduces everything unless noop_with_empty_axes=1.
Status reduce_rule(InferContext& ctx) {
  const Dims& in = ctx.shape(0);
  const bool keepdims = ctx.node().attr_int("keepdims", 1) != 0;
  ASSIGN_OR_RETURN(auto listed, ints_from_input_or_attr(ctx, 1, "axes", "reduction axes"));
  std::vector<bool> reduced(in.size(), true);
  if (!listed || listed->empty()) {
    if (ctx.node().attr_int("noop_with_empty_axes", 0) != 0) return same_as_input(ctx);
  } else {
    ASSIGN_OR_RETURN(std::vector<int64_t> axes, normalize_axes(ctx, *listed, ctx.rank(0)));
    reduced.assign(in.size(), false);
    for (int64_t a : axes) reduced[a] = true;
  }
  ctx.set_output(0, ctx.dtype(0), reduce_dims(in, reduced, keepdims));
  return {};
}

// ArgMax / ArgMin: one axis reduced (kept as 1 by default), int64 indices.
Status arg_rule(InferContext& ctx) {
  const Dims& in = ctx.shape(0);
  ASSIGN_OR_RETURN(int64_t axis, ctx.axis(ctx.node().attr_int("axis", 0), ctx.rank(0)));
  std::vector<bool> reduced(in.size(), false);
  reduced[axis] = true;
  const bool keepdims = ctx.node().attr_int("keepdims", 1) != 0;
  ctx.set_output(0, DType::kInt64, reduce_dims(in, reduced, keepdims));
  return {};
}

// TopK(X, K): values and int64 indices with dim `axis` replaced by k (input since opset 10,
// attribute `k` before).
Status top_k_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, ctx.axis(ctx.node().attr_int("axis", -1), ctx.rank(0)));
  int64_t k = ctx.node().attr_int("k", -1);
  if (ctx.has_input(1)) {
    ASSIGN_OR_RETURN(std::vector<int64_t> ks, known_ints(ctx, 1, "TopK k"));
    if (ks.size() != 1) return ctx.error("TopK k must hold one value");
    k = ks[0];
  }
  Dims out = ctx.shape(0);
  if (k < 0 || k > out[axis]) {
    return ctx.error("TopK k=" + std::to_string(k) + " out of range for dim " +
                     std::to_string(out[axis]));
  }
  out[axis] = k;
  ctx.set_output(0, ctx.dtype(0), out);
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::kInt64, std::move(out));
  return {};
}

constexpr std::string_view kReduce =
    "ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd "
    "ReduceSum ReduceSumSquare";

// CumSum(x, axis): x's shape and dtype.
Status cumsum_rule(InferContext& ctx) { return same_as_input(ctx); }

}  // namespace

void register_reduce_rules(ShapeRegistry& table) {
  add_rules(table, kReduce, &reduce_rule);
  table.add("ArgMax", &arg_rule);
  table.add("ArgMin", &arg_rule);
  table.add("TopK", &top_k_rule);
  table.add("CumSum", &cumsum_rule);
}

}  // namespace shapeonnx

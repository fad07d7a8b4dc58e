// Pools: MaxPool, AveragePool, LpPool, their Global forms, and MaxUnpool.
#include <string>

#include "shapeonnx/rules/rules.h"
#include "shapeonnx/rules/util.h"

namespace shapeonnx {
namespace {

using common::Dims;
using common::DType;
using common::Status;

// X [N, C, D...] -> [N, C, out...], out per window_output; MaxPool's optional Indices output is
// int64 of the same shape.
Status pool_rule(InferContext& ctx) {
  const Dims& x = ctx.shape(0);
  if (x.size() < 3) return ctx.error("input must have rank >= 3 ([N, C, spatial...])");
  if (!ctx.node().has_attr("kernel_shape")) return ctx.error("pool needs 'kernel_shape'");
  const size_t spatial = x.size() - 2;
  ASSIGN_OR_RETURN(Window win, read_window(ctx, spatial, {}));
  Dims out = {x[0], x[1]};
  for (size_t i = 0; i < spatial; ++i) {
    ASSIGN_OR_RETURN(int64_t d, window_output(ctx, win, i, x[i + 2]));
    out.push_back(d);
  }
  ctx.set_output(0, ctx.dtype(0), out);
  if (ctx.num_outputs() > 1 && !ctx.node().outputs[1].empty()) {
    ctx.set_output(1, DType::kInt64, std::move(out));
  }
  return {};
}

// GlobalAveragePool, GlobalMaxPool, GlobalLpPool: [N, C, D...] -> [N, C, 1...].
Status global_pool_rule(InferContext& ctx) {
  const Dims& x = ctx.shape(0);
  if (x.size() < 2) return ctx.error("input must have rank >= 2 ([N, C, ...])");
  Dims out(x.size(), 1);
  out[0] = x[0];
  out[1] = x[1];
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// MaxUnpool(X, I, output_shape?): the output_shape input when given, else per spatial dim
// out = (in - 1) * stride + kernel - pad_begin - pad_end.
Status max_unpool_rule(InferContext& ctx) {
  const Dims& x = ctx.shape(0);
  if (x.size() < 3) return ctx.error("input must have rank >= 3 ([N, C, spatial...])");
  if (ctx.has_input(2)) {
    ASSIGN_OR_RETURN(std::vector<int64_t> shape, known_ints(ctx, 2, "MaxUnpool output_shape"));
    if (shape.size() != x.size()) return ctx.error("output_shape length differs from rank");
    ctx.set_output(0, ctx.dtype(0), std::move(shape));
    return {};
  }
  const size_t spatial = x.size() - 2;
  ASSIGN_OR_RETURN(Window win, read_window(ctx, spatial, {}));
  Dims out = {x[0], x[1]};
  for (size_t i = 0; i < spatial; ++i) {
    out.push_back((x[i + 2] - 1) * win.strides[i] + win.kernel[i] - win.pad_begin[i] -
                  win.pad_end[i]);
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

}  // namespace

void register_pool_rules(ShapeRegistry& table) {
  table.add("MaxPool", &pool_rule);
  table.add("AveragePool", &pool_rule);
  table.add("LpPool", &pool_rule);
  table.add("GlobalAveragePool", &global_pool_rule);
  table.add("GlobalMaxPool", &global_pool_rule);
  table.add("GlobalLpPool", &global_pool_rule);
  table.add("MaxUnpool", &max_unpool_rule);
}

}  // namespace shapeonnx

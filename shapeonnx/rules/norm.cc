// Normalizations: BatchNormalization, InstanceNormalization, GroupNormalization, LRN,
// LayerNormalization, LpNormalization, MeanVarianceNormalization.
#include "shapeonnx/rules/rules.h"
#include "shapeonnx/rules/util.h"

namespace shapeonnx {
namespace {

using common::Dims;
using common::DType;
using common::Status;

// BatchNormalization: Y like X; the optional statistics outputs (training mode, or the 5-output
// form of older opsets) are vectors over the channels.
Status batch_norm_rule(InferContext& ctx) {
  if (ctx.rank(0) < 1) return ctx.error("BatchNormalization input has rank 0");
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
  const int64_t channels = ctx.rank(0) >= 2 ? ctx.shape(0)[1] : 1;
  const DType stats = ctx.has_input(3) ? ctx.dtype(3) : ctx.dtype(0);
  for (size_t i = 1; i < ctx.num_outputs(); ++i) {
    if (!ctx.node().outputs[i].empty()) ctx.set_output(i, stats, {channels});
  }
  return {};
}

// Normalizations that keep the input's shape.
Status same_shape_rule(InferContext& ctx) { return same_as_input(ctx); }

// LayerNormalization: Y like X; Mean and InvStdDev keep dims before axis and have 1 after it, in
// the stash_type (float by default).
Status layer_norm_rule(InferContext& ctx) {
  const Dims& x = ctx.shape(0);
  ASSIGN_OR_RETURN(int64_t axis, ctx.axis(ctx.node().attr_int("axis", -1), ctx.rank(0)));
  ctx.set_output(0, ctx.dtype(0), x);
  Dims stats(x.begin(), x.begin() + axis);
  stats.resize(x.size(), 1);
  const auto stash = static_cast<DType>(ctx.node().attr_int("stash_type", 1));
  for (size_t i = 1; i < ctx.num_outputs() && i < 3; ++i) {
    if (!ctx.node().outputs[i].empty()) ctx.set_output(i, stash, stats);
  }
  return {};
}

}  // namespace

void register_norm_rules(ShapeRegistry& table) {
  table.add("BatchNormalization", &batch_norm_rule);
  table.add("InstanceNormalization", &same_shape_rule);
  table.add("GroupNormalization", &same_shape_rule);
  table.add("LRN", &same_shape_rule);
  table.add("LayerNormalization", &layer_norm_rule);
  table.add("LpNormalization", &same_shape_rule);
  table.add("MeanVarianceNormalization", &same_shape_rule);
}

}  // namespace shapeonnx

// Resize and Upsample: output dims from `sizes` or from `scales` (floor(dim * scale)); and the
// sampling ops GridSample, AffineGrid, RoiAlign.
#include <algorithm>
#include <cmath>
#include <string>

#include "shapeonnx/rules/rules.h"
#include "shapeonnx/rules/util.h"

namespace shapeonnx {
namespace {

using common::Dims;
using common::Result;
using common::Status;

// floor(dim * scale), multiplied in float as ONNX's reference and onnxruntime do.
Result<int64_t> scaled_dim(const InferContext& ctx, int64_t dim, double scale) {
  if (!(scale > 0)) return ctx.error("scale " + std::to_string(scale) + " is not positive");
  const double out = std::floor(static_cast<float>(dim) * static_cast<float>(scale));
  if (!(out < 9.0e18)) return ctx.error("scaled dim overflows int64");
  return static_cast<int64_t>(out);
}

// Applies one scale per listed axis.
Result<Dims> apply_scales(const InferContext& ctx, const std::vector<int64_t>& axes,
                          const std::vector<double>& scales) {
  if (scales.size() != axes.size()) {
    return ctx.error("scales has " + std::to_string(scales.size()) + " values for " +
                     std::to_string(axes.size()) + " axes");
  }
  Dims out = ctx.shape(0);
  for (size_t i = 0; i < axes.size(); ++i) {
    ASSIGN_OR_RETURN(out[axes[i]], scaled_dim(ctx, out[axes[i]], scales[i]));
  }
  return out;
}

// Applies sizes per listed axis. keep_aspect_ratio_policy (opset 18): `not_larger` / `not_smaller`
// use one scale, the min / max of sizes[i] / dim[i], and round(scale * dim) on every listed axis.
Result<Dims> apply_sizes(const InferContext& ctx, const std::vector<int64_t>& axes,
                         const std::vector<int64_t>& sizes) {
  if (sizes.size() != axes.size()) {
    return ctx.error("sizes has " + std::to_string(sizes.size()) + " values for " +
                     std::to_string(axes.size()) + " axes");
  }
  Dims out = ctx.shape(0);
  const std::string policy = ctx.node().attr_string("keep_aspect_ratio_policy", "stretch");
  if (policy == "stretch") {
    for (size_t i = 0; i < axes.size(); ++i) out[axes[i]] = sizes[i];
    return out;
  }
  if (policy != "not_larger" && policy != "not_smaller") {
    return ctx.error("unknown keep_aspect_ratio_policy '" + policy + "'");
  }
  double scale = policy == "not_larger" ? INFINITY : 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    const double s = static_cast<double>(sizes[i]) / static_cast<double>(out[axes[i]]);
    scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
  }
  for (int64_t a : axes) out[a] = static_cast<int64_t>(std::round(scale * out[a]));
  return out;
}

// Resize: opset 10 (X, scales); opset 11+ (X, roi, scales, sizes), where exactly one of scales and
// sizes is non-empty; opset 18 adds the `axes` attribute.
Status resize_rule(InferContext& ctx) {
  const int64_t r = ctx.rank(0);
  std::vector<int64_t> axes;
  if (ctx.node().has_attr("axes")) {
    ASSIGN_OR_RETURN(axes, normalize_axes(ctx, ctx.node().attr_ints("axes"), r));
  } else {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  if (ctx.opset() < 11) {
    ASSIGN_OR_RETURN(std::vector<double> scales, known_doubles(ctx, 1, "Resize scales"));
    ASSIGN_OR_RETURN(Dims out, apply_scales(ctx, axes, scales));
    ctx.set_output(0, ctx.dtype(0), std::move(out));
    return {};
  }
  if (ctx.has_input(3)) {
    ASSIGN_OR_RETURN(std::vector<int64_t> sizes, known_ints(ctx, 3, "Resize sizes"));
    if (!sizes.empty()) {
      ASSIGN_OR_RETURN(Dims out, apply_sizes(ctx, axes, sizes));
      ctx.set_output(0, ctx.dtype(0), std::move(out));
      return {};
    }
  }
  if (!ctx.has_input(2)) return ctx.error("Resize needs scales or sizes");
  ASSIGN_OR_RETURN(std::vector<double> scales, known_doubles(ctx, 2, "Resize scales"));
  if (scales.empty()) return ctx.error("Resize scales and sizes are both empty");
  ASSIGN_OR_RETURN(Dims out, apply_scales(ctx, axes, scales));
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// Upsample: scales from the input (opset 9) or the `scales` attribute (opset 7), one per dim.
Status upsample_rule(InferContext& ctx) {
  std::vector<double> scales;
  if (ctx.has_input(1)) {
    ASSIGN_OR_RETURN(scales, known_doubles(ctx, 1, "Upsample scales"));
  } else if (ctx.node().has_attr("scales")) {
    for (float s : ctx.node().attr_floats("scales")) scales.push_back(s);
  } else if (ctx.node().has_attr("height_scale")) {  // opset 1: NCHW, two attributes
    scales = {1, 1, ctx.node().attr_float("height_scale", 1),
              ctx.node().attr_float("width_scale", 1)};
  } else {
    return ctx.error("Upsample needs scales");
  }
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < ctx.rank(0); ++i) axes.push_back(i);
  ASSIGN_OR_RETURN(Dims out, apply_scales(ctx, axes, scales));
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// GridSample(X [N, C, D...], grid [N, D_out..., k]) -> [N, C, D_out...].
Status grid_sample_rule(InferContext& ctx) {
  const Dims& x = ctx.shape(0);
  const Dims& grid = ctx.shape(1);
  if (x.size() < 3 || grid.size() != x.size() || grid[0] != x[0]) {
    return ctx.error("GridSample needs X [N, C, D...] and grid [N, D_out..., k] of equal rank");
  }
  Dims out = {x[0], x[1]};
  out.insert(out.end(), grid.begin() + 1, grid.end() - 1);
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// AffineGrid(theta [N, 2, 3], size [N, C, H, W]) -> [N, H, W, 2];
// (theta [N, 3, 4], size [N, C, D, H, W]) -> [N, D, H, W, 3].
Status affine_grid_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(std::vector<int64_t> size, known_ints(ctx, 1, "AffineGrid size"));
  const Dims& theta = ctx.shape(0);
  const int64_t k = static_cast<int64_t>(size.size()) - 2;
  if ((k != 2 && k != 3) || theta != Dims{size[0], k, k + 1}) {
    return ctx.error(
        "AffineGrid needs theta [N, 2, 3] with size [N, C, H, W], or [N, 3, 4] "
        "with [N, C, D, H, W]");
  }
  Dims out = {size[0]};
  out.insert(out.end(), size.begin() + 2, size.end());
  out.push_back(k);
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// RoiAlign(X [N, C, H, W], rois [R, 4], batch_indices [R]) -> [R, C, output_height, output_width].
Status roi_align_rule(InferContext& ctx) {
  if (ctx.rank(0) != 4 || ctx.rank(1) != 2) return ctx.error("RoiAlign needs 4-D X and 2-D rois");
  const common::Node& node = ctx.node();
  ctx.set_output(0, ctx.dtype(0),
                 {ctx.shape(1)[0], ctx.shape(0)[1], node.attr_int("output_height", 1),
                  node.attr_int("output_width", 1)});
  return {};
}

}  // namespace

void register_resize_rules(ShapeRegistry& table) {
  table.add("Resize", &resize_rule);
  table.add("Upsample", &upsample_rule);
  table.add("GridSample", &grid_sample_rule);
  table.add("AffineGrid", &affine_grid_rule);
  table.add("RoiAlign", &roi_align_rule);
}

}  // namespace shapeonnx

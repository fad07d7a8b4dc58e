// Upsample (integer scales) and Resize in nearest mode: each output element copies one input
// element, an index map (`select` of util.h).
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>

#include "propdag/ops/util.h"

namespace propdag {
namespace {

using common::Dims;
using common::num_elements;
using common::Result;

// out[i] = x[floor(i / scale)] per axis for integer scales: a selection of input elements.
Result<OpOutputs> nearest_upsample(const OpContext& ctx, const std::vector<double>& scales,
                                   std::string_view op) {
  const Dims& x = ctx.shape(0);
  if (scales.size() != x.size()) return ctx.error(std::string(op) + " needs one scale per axis");
  Dims out(x.size());
  std::vector<int64_t> factor(x.size());
  for (size_t d = 0; d < x.size(); ++d) {
    if (!(scales[d] >= 1) || scales[d] != std::floor(scales[d]) || scales[d] > 1e6)
      return ctx.error(std::string(op) + " has a bound rule for integer scales only");
    factor[d] = static_cast<int64_t>(scales[d]);
    out[d] = x[d] * factor[d];
  }
  const std::vector<int64_t> xs = strides_of(x), os = strides_of(out);
  std::vector<Source> src(num_elements(out));
  for (int64_t i = 0; i < static_cast<int64_t>(src.size()); ++i) {
    int64_t at = 0;
    for (size_t d = 0; d < x.size(); ++d) at += (i / os[d]) % out[d] / factor[d] * xs[d];
    src[i] = {0, at};
  }
  return select(ctx, out, src);
}

// Upsample (opsets 7-9) in nearest mode with integer scales.
Result<OpOutputs> upsample_rule(const OpContext& ctx) {
  if (ctx.node.attr_string("mode", "nearest") != "nearest")
    return ctx.error("Upsample has a bound rule in nearest mode only");
  if (ctx.variable(1)) return ctx.error("Upsample needs constant scales");
  std::vector<double> scales;
  if (ctx.present(1)) {
    scales = ctx.constants[1]->to_double();
  } else {
    for (float f : ctx.node.attr_floats("scales")) scales.push_back(f);
  }
  return nearest_upsample(ctx, scales, "Upsample");
}

// The input index that output index `o` of an axis copies in Resize's nearest mode (the ONNX
// operator's coordinate transformations and roundings), clamped into the axis.
int64_t nearest_source(int64_t o, int64_t in, int64_t out, double scale, std::string_view coords,
                       std::string_view rounding) {
  double x = 0;
  if (coords == "asymmetric") {
    x = o / scale;
  } else if (coords == "align_corners") {
    x = out == 1 ? 0 : o * static_cast<double>(in - 1) / static_cast<double>(out - 1);
  } else if (coords == "pytorch_half_pixel" && out == 1) {
    x = 0;
  } else {  // half_pixel, pytorch_half_pixel
    x = (o + 0.5) / scale - 0.5;
  }
  double i = 0;
  if (rounding == "floor") {
    i = std::floor(x);
  } else if (rounding == "ceil") {
    i = std::ceil(x);
  } else {  // round_prefer_floor / round_prefer_ceil: the nearest, a tie to the named side
    const bool tie = x - std::floor(x) == 0.5;
    i = tie ? (rounding == "round_prefer_ceil" ? std::ceil(x) : std::floor(x)) : std::round(x);
  }
  return std::clamp<int64_t>(static_cast<int64_t>(i), 0, in - 1);
}

// Resize (opsets 11+) in nearest mode: each output element copies the input element its
// coordinate transformation and rounding select, per axis (a selection, as Upsample's), for any
// positive scales or sizes. Not: tf_crop_and_resize and half_pixel_symmetric coordinates,
// antialias, axes, an aspect-ratio policy.
Result<OpOutputs> resize_rule(const OpContext& ctx) {
  const common::Node& n = ctx.node;
  const std::string coords = n.attr_string("coordinate_transformation_mode", "half_pixel");
  const std::string rounding = n.attr_string("nearest_mode", "round_prefer_floor");
  if (n.attr_string("mode", "nearest") != "nearest")
    return ctx.error("Resize has a bound rule in nearest mode only");
  if (coords != "half_pixel" && coords != "pytorch_half_pixel" && coords != "asymmetric" &&
      coords != "align_corners")
    return ctx.error("Resize has no bound rule for coordinate_transformation_mode " + coords);
  if (rounding != "round_prefer_floor" && rounding != "round_prefer_ceil" && rounding != "floor" &&
      rounding != "ceil")
    return ctx.error("Resize has no bound rule for nearest_mode " + rounding);
  if (n.attr_int("antialias", 0) != 0 || !n.attr_ints("axes").empty() ||
      n.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch")
    return ctx.error("Resize has a bound rule without antialias, axes or an aspect-ratio policy");
  for (size_t i = 1; i < 4; ++i)
    if (ctx.variable(i)) return ctx.error("Resize needs constant roi, scales and sizes");
  const Dims& x = ctx.shape(0);
  std::vector<double> scales;
  Dims out(x.size());
  if (ctx.present(2)) scales = ctx.constants[2]->to_double();
  if (!scales.empty()) {
    if (scales.size() != x.size()) return ctx.error("Resize needs one scale per axis");
    for (size_t d = 0; d < x.size(); ++d) {
      if (!(scales[d] > 0) || scales[d] > 1e6) return ctx.error("Resize needs positive scales");
      out[d] = static_cast<int64_t>(std::floor(x[d] * scales[d]));
    }
  } else if (ctx.present(3)) {
    const std::vector<int64_t> sizes = ctx.constants[3]->to_int64();
    if (sizes.size() != x.size()) return ctx.error("Resize needs one size per axis");
    for (size_t d = 0; d < x.size(); ++d) {
      if (sizes[d] <= 0 || x[d] <= 0) return ctx.error("Resize needs positive sizes");
      out[d] = sizes[d];
      scales.push_back(static_cast<double>(sizes[d]) / static_cast<double>(x[d]));
    }
  } else {
    return ctx.error("Resize needs scales or sizes");
  }
  std::vector<std::vector<int64_t>> from(x.size());
  for (size_t d = 0; d < x.size(); ++d) {
    if (out[d] <= 0 || x[d] <= 0) return ctx.error("Resize has an empty axis");
    for (int64_t o = 0; o < out[d]; ++o)
      from[d].push_back(nearest_source(o, x[d], out[d], scales[d], coords, rounding));
  }
  const std::vector<int64_t> xs = strides_of(x), os = strides_of(out);
  std::vector<Source> src(num_elements(out));
  for (int64_t i = 0; i < static_cast<int64_t>(src.size()); ++i) {
    int64_t at = 0;
    for (size_t d = 0; d < x.size(); ++d) at += from[d][(i / os[d]) % out[d]] * xs[d];
    src[i] = {0, at};
  }
  return select(ctx, out, src);
}

}  // namespace

void add_resize_rules(RuleTable& table) {
  table.insert(table.end(), {{"Upsample", upsample_rule}, {"Resize", resize_rule}});
}

}  // namespace propdag

// Upsample and Resize in nearest mode with integer scales: each output element copies one input
// element, an index map (`select` of util.h).
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

// Resize (opsets 11+) in nearest mode, asymmetric coordinates and floor rounding, with integer
// scales (or sizes that are integer multiples): x_in = floor(x_out / scale), Upsample's selection.
Result<OpOutputs> resize_rule(const OpContext& ctx) {
  const common::Node& n = ctx.node;
  if (n.attr_string("mode", "nearest") != "nearest" ||
      n.attr_string("coordinate_transformation_mode", "half_pixel") != "asymmetric" ||
      n.attr_string("nearest_mode", "round_prefer_floor") != "floor")
    return ctx.error(
        "Resize has a bound rule in nearest mode with asymmetric coordinates and floor only");
  for (size_t i = 1; i < 4; ++i)
    if (ctx.variable(i)) return ctx.error("Resize needs constant roi, scales and sizes");
  const Dims& x = ctx.shape(0);
  std::vector<double> scales;
  if (ctx.present(2)) scales = ctx.constants[2]->to_double();
  if (scales.empty() && ctx.present(3)) {
    const std::vector<int64_t> sizes = ctx.constants[3]->to_int64();
    if (sizes.size() != x.size()) return ctx.error("Resize needs one size per axis");
    for (size_t d = 0; d < x.size(); ++d) {
      const int64_t factor = x[d] > 0 && sizes[d] % x[d] == 0 ? sizes[d] / x[d] : 0;
      scales.push_back(factor > 0 ? static_cast<double>(factor) : 0.5);  // 0.5: not an integer
    }
  }
  return nearest_upsample(ctx, scales, "Resize");
}

}  // namespace

void add_resize_rules(RuleTable& table) {
  table.insert(table.end(), {{"Upsample", upsample_rule}, {"Resize", resize_rule}});
}

}  // namespace propdag

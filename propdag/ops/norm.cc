// BatchNormalization (inference form): an affine map per channel.
#include <cmath>

#include "propdag/ops/util.h"

namespace propdag {
namespace {

using common::Dims;
using common::num_elements;
using common::Result;

// y = scale * (x - mean) / sqrt(var + eps) + bias, per channel (axis 1).
Result<OpOutputs> batchnorm_rule(const OpContext& ctx) {
  for (size_t i = 1; i < 5; ++i)
    if (!ctx.present(i) || ctx.variable(i))
      return ctx.error("BatchNormalization needs constant parameters");
  const Dims& x = ctx.shape(0);
  if (x.size() < 2) return ctx.error("BatchNormalization input must have a channel axis");
  double eps = ctx.node.attr_float("epsilon", 1e-5f);
  std::vector<double> s = ctx.constants[1]->to_double(), b = ctx.constants[2]->to_double(),
                      mean = ctx.constants[3]->to_double(), var = ctx.constants[4]->to_double();
  int64_t n = num_elements(x), channels = x[1], inner = n / (x[0] * channels);
  if (static_cast<int64_t>(s.size()) != channels) return ctx.error("BatchNormalization scale size");
  Gather g;  // the identity times each channel's factor
  g.rows = g.cols = n;
  g.col = IndexMap::identity(n);
  g.scale_at = IndexMap::broadcast({channels, 1}, {x[0], channels, inner});
  Vec bias(n);
  for (int64_t c = 0; c < channels; ++c) g.values.push_back(s[c] / std::sqrt(var[c] + eps));
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = (i / inner) % channels;
    bias[i] = b[c] - g.values[c] * mean[c];
  }
  return affine_output(one_term(gather_term(0, std::move(g))), std::move(bias), x);
}

}  // namespace

void add_norm_rules(RuleTable& table) {
  table.insert(table.end(), {{"BatchNormalization", batchnorm_rule}});
}

}  // namespace propdag

// Data movement as index maps: Identity, Dropout, Flatten, Reshape, Squeeze, Unsqueeze,
// Transpose, Concat, Split, Expand. Each output element copies one input element (or a constant),
// so the op is affine with a 0/1 matrix per input (`select`, also used by the index maps of
// index_copy.cc and the nearest resizes of resize.cc).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>

#include "common/eval/eval.h"
#include "propdag/ops/util.h"

namespace propdag {
namespace {

using common::Dims;
using common::num_elements;
using common::Result;

}  // namespace

OpOutputs select(const OpContext& ctx, const Dims& out, const std::vector<Source>& src) {
  int64_t n = num_elements(out);
  Vec bias = Vec::Zero(n);
  std::vector<LinearTerm> terms;
  for (size_t slot = 0; slot < ctx.shapes.size(); ++slot) {
    if (!ctx.present(slot)) continue;
    bool var = ctx.variable(slot);
    std::vector<int64_t> map(n, -1);
    bool used = false;
    for (int64_t i = 0; i < n; ++i) {
      if (src[i].slot != static_cast<int>(slot)) continue;
      if (!var) {
        bias[i] = ctx.constants[slot]->double_at(src[i].index);
        continue;
      }
      map[i] = src[i].index;
      used = true;
    }
    if (used) terms.push_back(gather_term(slot, map, num_elements(ctx.shape(slot)), {}));
  }
  return affine_output(std::move(terms), std::move(bias), out);
}

std::vector<Source> strided(const Dims& x, const Dims& out, const std::vector<int64_t>& start,
                            const std::vector<int64_t>& step) {
  std::vector<int64_t> in_strides = strides_of(x), out_strides = strides_of(out);
  std::vector<Source> src(num_elements(out));
  for (size_t flat = 0; flat < src.size(); ++flat) {
    int64_t idx = 0;
    for (size_t i = 0; i < x.size(); ++i)
      idx += (start[i] + (flat / out_strides[i]) % out[i] * step[i]) * in_strides[i];
    src[flat] = {0, idx};
  }
  return src;
}

namespace {

// Same elements, new shape.
OpOutputs reshaped(const OpContext& ctx, const Dims& out) {
  const int64_t n = num_elements(out);
  if (ctx.variable(0) && num_elements(ctx.shape(0)) == n)  // the identity, no per-element data
    return affine_output(one_term(broadcast_term(0, {n}, {n})), Vec::Zero(n), out);
  std::vector<Source> src(num_elements(out));
  for (size_t i = 0; i < src.size(); ++i) src[i] = {0, static_cast<int64_t>(i)};
  return select(ctx, out, src);
}

Result<OpOutputs> identity_rule(const OpContext& ctx) { return reshaped(ctx, ctx.shape(0)); }

Result<OpOutputs> flatten_rule(const OpContext& ctx) {
  const Dims& x = ctx.shape(0);
  auto normalized = common::normalize_flatten_axis(ctx.node.attr_int("axis", 1), x.size());
  if (!normalized.ok()) return ctx.error(normalized.error().message);
  const int64_t axis = *normalized;
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x[i];
  return reshaped(ctx, {outer, num_elements(x) / std::max<int64_t>(outer, 1)});
}

Result<OpOutputs> reshape_rule(const OpContext& ctx) {
  if (!ctx.present(1) || ctx.variable(1)) return ctx.error("Reshape needs a constant shape");
  Dims target = ctx.constants[1]->to_int64();
  const Dims& x = ctx.shape(0);
  bool allowzero = ctx.node.attr_int("allowzero", 0) != 0;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowzero) {
      if (i >= x.size()) return ctx.error("Reshape copies a dim the input lacks");
      target[i] = x[i];
    }
    if (target[i] == -1) {
      infer = i;
      continue;
    }
    known *= target[i];
  }
  if (infer >= 0) target[infer] = known == 0 ? 0 : num_elements(x) / known;
  if (num_elements(target) != num_elements(x))
    return ctx.error("Reshape changes the element count");
  return reshaped(ctx, target);
}

Result<OpOutputs> squeeze_rule(const OpContext& ctx) {
  const Dims& x = ctx.shape(0);
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, ints_input_or_attr(ctx, 1, "axes"));
  std::vector<char> drop(x.size(), 0);
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t ax, axis_at(ctx, a, static_cast<int64_t>(x.size())));
    if (x[ax] != 1) return ctx.error("Squeeze axis is not a dim of size 1");
    drop[ax] = 1;
  }
  Dims out;
  for (size_t i = 0; i < x.size(); ++i)
    if (!(axes.empty() ? x[i] == 1 : drop[i])) out.push_back(x[i]);
  return reshaped(ctx, out);
}

Result<OpOutputs> unsqueeze_rule(const OpContext& ctx) {
  const Dims& x = ctx.shape(0);
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, ints_input_or_attr(ctx, 1, "axes"));
  int64_t rank = x.size() + axes.size();
  std::vector<char> inserted(rank, 0);
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t ax, axis_at(ctx, a, rank));
    inserted[ax] = 1;
  }
  Dims out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) out.push_back(inserted[i] ? 1 : x[next++]);
  return reshaped(ctx, out);
}

Result<OpOutputs> transpose_rule(const OpContext& ctx) {
  const Dims& x = ctx.shape(0);
  int64_t rank = x.size();
  std::vector<int64_t> perm = ctx.node.attr_ints("perm");
  if (perm.empty())
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != rank) return ctx.error("Transpose perm has wrong rank");
  // A permutation of 0..rank-1 (perm [-1, 1, 0] indexed the shape at -1: SIGSEGV).
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < rank; ++i) {
    if (sorted[i] != i) return ctx.error("Transpose perm is not a permutation of the axes");
  }
  Dims out(rank);
  for (int64_t i = 0; i < rank; ++i) out[i] = x[perm[i]];
  std::vector<int64_t> in_strides = strides_of(x), out_strides = strides_of(out);
  std::vector<Source> src(num_elements(out));
  for (size_t flat = 0; flat < src.size(); ++flat) {
    int64_t idx = 0;
    for (int64_t i = 0; i < rank; ++i)
      idx += (flat / out_strides[i]) % out[i] * in_strides[perm[i]];
    src[flat] = {0, idx};
  }
  return select(ctx, out, src);
}

Result<OpOutputs> concat_rule(const OpContext& ctx) {
  if (!ctx.present(0)) return ctx.error("Concat input 0 is missing");
  const Dims& first = ctx.shape(0);
  ASSIGN_OR_RETURN(int64_t axis, axis_at(ctx, ctx.node.attr_int("axis", 0), first.size()));
  Dims out = first;
  out[axis] = 0;
  std::vector<int64_t> offset;
  for (size_t s = 0; s < ctx.shapes.size(); ++s) {
    // Every input is present and has the first one's shape but along the axis (Concat(x, "")
    // read the shape of the omitted input, an empty optional, and sized a vector from it).
    if (!ctx.present(s)) return ctx.error("Concat input " + std::to_string(s) + " is missing");
    Dims rest = ctx.shape(s);
    if (rest.size() != first.size()) return ctx.error("Concat inputs differ in rank");
    rest[axis] = first[axis];
    if (rest != first) return ctx.error("Concat inputs differ off the concatenation axis");
    offset.push_back(out[axis]);
    out[axis] += ctx.shape(s)[axis];
  }
  std::vector<int64_t> out_strides = strides_of(out);
  std::vector<Source> src(num_elements(out));
  for (size_t flat = 0; flat < src.size(); ++flat) {
    int64_t outer = flat / out_strides[axis] / out[axis],
            pos = flat / out_strides[axis] % out[axis];
    int64_t inner = flat % out_strides[axis];
    size_t s = std::upper_bound(offset.begin(), offset.end(), pos) - offset.begin() - 1;
    int64_t len = ctx.shape(s)[axis];
    src[flat] = {static_cast<int>(s), (outer * len + pos - offset[s]) * out_strides[axis] + inner};
  }
  return select(ctx, out, src);
}

Result<OpOutputs> split_rule(const OpContext& ctx) {
  const Dims& x = ctx.shape(0);
  ASSIGN_OR_RETURN(int64_t axis, axis_at(ctx, ctx.node.attr_int("axis", 0), x.size()));
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ints_input_or_attr(ctx, 1, "split"));
  int64_t parts = ctx.node.outputs.size();
  if (sizes.empty())
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(x[axis] / parts + (i < x[axis] % parts ? 1 : 0));
  if (static_cast<int64_t>(sizes.size()) != parts)
    return ctx.error("Split sizes do not match outputs");
  OpOutputs outs;
  std::vector<int64_t> start(x.size(), 0), step(x.size(), 1);
  for (int64_t p = 0; p < parts; ++p) {
    Dims out = x;
    out[axis] = sizes[p];
    OpOutputs one = select(ctx, out, strided(x, out, start, step));
    outs.push_back(std::move(one[0]));
    start[axis] += sizes[p];
  }
  return outs;
}

Result<OpOutputs> expand_rule(const OpContext& ctx) {
  if (!ctx.present(1) || ctx.variable(1)) return ctx.error("Expand needs a constant shape");
  auto out = common::broadcast_shapes(ctx.shape(0), ctx.constants[1]->to_int64());
  if (!out) return ctx.error("Expand shape does not broadcast");
  if (ctx.variable(0))  // index arithmetic, no per-element data
    return affine_output(one_term(broadcast_term(0, ctx.shape(0), *out)),
                         Vec::Zero(num_elements(*out)), *out);
  std::vector<int64_t> map = common::broadcast_map(ctx.shape(0), *out);
  std::vector<Source> src(map.size());
  for (size_t i = 0; i < map.size(); ++i) src[i] = {0, map[i]};
  return select(ctx, *out, src);
}

}  // namespace

void add_shape_rules(RuleTable& table) {
  table.insert(table.end(), {{"Identity", identity_rule},
                             {"Dropout", identity_rule},
                             {"Flatten", flatten_rule},
                             {"Reshape", reshape_rule},
                             {"Squeeze", squeeze_rule},
                             {"Unsqueeze", unsqueeze_rule},
                             {"Transpose", transpose_rule},
                             {"Concat", concat_rule},
                             {"Split", split_rule},
                             {"Expand", expand_rule}});
}

}  // namespace propdag

// Indexing with constant indices, each an affine copy of input elements (or a fill constant): Pad
// (constant mode), Slice (a variable start or end goes to index.cc), Gather.
#include <algorithm>

#include "propdag/ops/util.h"

namespace propdag {
namespace {

using common::Dims;
using common::num_elements;
using common::Result;

// Pad (constant mode): each output element copies the input element at coord - pad_begin, or is
// the constant fill. Negative pads crop.
Result<OpOutputs> pad_rule(const OpContext& ctx) {
  if (ctx.node.attr_string("mode", "constant") != "constant")
    return ctx.error("only constant Pad is supported");
  const Dims& x = ctx.shape(0);
  ASSIGN_OR_RETURN(std::vector<int64_t> pads,
                   ints_input_or_attr(ctx, 1, ctx.opset < 11 ? "pads" : ""));
  if (pads.size() != 2 * x.size()) return ctx.error("Pad pads do not match the input rank");
  double fill = ctx.opset < 11 ? ctx.node.attr_float("value", 0.0f)
                               : (ctx.present(2) ? ctx.constants[2]->double_at(0) : 0.0);
  size_t r = x.size();
  Dims out(r);
  for (size_t i = 0; i < r; ++i) out[i] = x[i] + pads[i] + pads[r + i];
  std::vector<int64_t> os = strides_of(out), is = strides_of(x), src(num_elements(out));
  for (size_t flat = 0; flat < src.size(); ++flat) {
    int64_t idx = 0;
    for (size_t i = 0; i < r && idx >= 0; ++i) {
      int64_t c = (flat / os[i]) % out[i] - pads[i];
      idx = c < 0 || c >= x[i] ? -1 : idx + c * is[i];
    }
    src[flat] = idx;
  }
  Vec bias(src.size());
  for (size_t i = 0; i < src.size(); ++i) bias[i] = src[i] < 0 ? fill : 0.0;
  std::vector<LinearTerm> terms = one_term(gather_term(0, src, num_elements(x)));
  return affine_output(std::move(terms), std::move(bias), out);
}

Result<OpOutputs> slice_rule(const OpContext& ctx) {
  const Dims& x = ctx.shape(0);
  if (ctx.variable(1) || ctx.variable(2)) return variable_slice(ctx);  // index.cc
  if (ctx.variable(3) || ctx.variable(4))
    return ctx.error("no bound rule for Slice with variable axes or steps");
  // Opset 10 moved starts, ends and axes from attributes to inputs 1-3 and added steps (4).
  ASSIGN_OR_RETURN(std::vector<int64_t> starts, ints_input_or_attr(ctx, 1, "starts"));
  ASSIGN_OR_RETURN(std::vector<int64_t> ends, ints_input_or_attr(ctx, 2, "ends"));
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, ints_input_or_attr(ctx, 3, "axes"));
  ASSIGN_OR_RETURN(std::vector<int64_t> steps, ints_input_or_attr(ctx, 4, ""));
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(i);
  if (steps.empty()) steps.assign(starts.size(), 1);
  Dims out = x;
  std::vector<int64_t> start(x.size(), 0), step(x.size(), 1);
  for (size_t i = 0; i < starts.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t ax, axis_at(ctx, axes[i], static_cast<int64_t>(x.size())));
    int64_t dim = x[ax], st = steps[i];
    if (st == 0) return ctx.error("Slice axis or step invalid");
    int64_t lo_clamp = st > 0 ? 0 : -1, hi_clamp = st > 0 ? dim : dim - 1;
    int64_t b = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    b = std::clamp(b, int64_t{0}, hi_clamp);
    e = std::clamp(e, lo_clamp, st > 0 ? dim : dim - 1);
    int64_t count = st > 0 ? (e - b + st - 1) / st : (b - e - st - 1) / -st;
    out[ax] = std::max<int64_t>(count, 0);
    start[ax] = b;
    step[ax] = st;
  }
  return select(ctx, out, strided(x, out, start, step));
}

Result<OpOutputs> gather_rule(const OpContext& ctx) {
  if (!ctx.variable(0) || ctx.variable(1)) return ctx.error("Gather needs constant indices");
  const Dims& x = ctx.shape(0);
  ASSIGN_OR_RETURN(int64_t axis, axis_at(ctx, ctx.node.attr_int("axis", 0), x.size()));
  const common::Tensor& idx = *ctx.constants[1];
  Dims out(x.begin(), x.begin() + axis);
  out.insert(out.end(), idx.dims.begin(), idx.dims.end());
  out.insert(out.end(), x.begin() + axis + 1, x.end());
  std::vector<int64_t> in_strides = strides_of(x);
  int64_t inner = in_strides[axis], count = idx.numel(),
          outer = num_elements(out) / (count * inner);
  std::vector<Source> src(num_elements(out));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < count; ++k) {
      int64_t j = idx.int_at(k);
      if (j < 0) j += x[axis];
      if (j < 0 || j >= x[axis]) return ctx.error("Gather index out of range");
      for (int64_t i = 0; i < inner; ++i)
        src[(o * count + k) * inner + i] = {0, (o * x[axis] + j) * inner + i};
    }
  return select(ctx, out, src);
}

}  // namespace

void add_index_copy_rules(RuleTable& table) {
  table.insert(table.end(), {{"Pad", pad_rule}, {"Slice", slice_rule}, {"Gather", gather_rule}});
}

}  // namespace propdag

// Reductions: ReduceSum / ReduceMean over constant axes (affine) and ArgMax (interval).
#include <algorithm>
#include <memory>

#include "common/eval/eval.h"
#include "propdag/ops/util.h"

namespace propdag {
namespace {

using common::Dims;
using common::num_elements;
using common::Result;

// ReduceSum / ReduceMean over constant axes (attribute, or input 1 in later opsets).
Result<OpOutputs> reduce(const OpContext& ctx, bool mean) {
  if (ctx.variable(1)) return ctx.error("reduction axes must be constant");
  const Dims& x = ctx.shape(0);
  const int64_t rank = static_cast<int64_t>(x.size());
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, ints_input_or_attr(ctx, 1, "axes"));
  std::vector<bool> reduced(rank,
                            axes.empty() && ctx.node.attr_int("noop_with_empty_axes", 0) == 0);
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t ax, axis_at(ctx, a, rank));
    reduced[ax] = true;
  }
  const bool keep = ctx.node.attr_int("keepdims", 1) != 0;
  Dims out, kept;  // kept: x's dims with reduced ones as 1 (the output's elements, row-major)
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    kept.push_back(reduced[d] ? 1 : x[d]);
    if (reduced[d]) count *= x[d];
    if (!reduced[d] || keep) out.push_back(reduced[d] ? 1 : x[d]);
  }
  const int64_t n = num_elements(x);
  const std::vector<int64_t> xs = strides_of(x), ks = strides_of(kept);
  std::vector<Eigen::Triplet<double>> entries;
  entries.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[d]) row += (i / xs[d]) % x[d] * ks[d];
    entries.emplace_back(row, i, mean ? 1.0 / static_cast<double>(count) : 1.0);
  }
  std::vector<LinearTerm> terms = one_term(sparse_term(0, num_elements(kept), n, entries));
  return affine_output(std::move(terms), Vec::Zero(num_elements(kept)), out);
}

Result<OpOutputs> reduce_sum_rule(const OpContext& ctx) { return reduce(ctx, false); }
Result<OpOutputs> reduce_mean_rule(const OpContext& ctx) { return reduce(ctx, true); }

// ArgMax over `axis`: the index lies between the first and the last element that can be the
// largest (its upper bound reaches the largest lower bound).
class ArgMaxOp : public BoundOp {
 public:
  ArgMaxOp(int64_t outer, int64_t len, int64_t inner) : outer_(outer), len_(len), inner_(inner) {}
  Interval interval(const std::vector<const Interval*>& in) const override {
    const Interval& x = *in[0];
    Interval out{Vec(outer_ * inner_), Vec(outer_ * inner_)};
    for (int64_t o = 0; o < outer_; ++o)
      for (int64_t k = 0; k < inner_; ++k) {
        int64_t base = o * len_ * inner_ + k;
        double best = -kInf;
        for (int64_t j = 0; j < len_; ++j) best = std::max(best, x.lo[base + j * inner_]);
        int64_t first = len_, last = -1;
        for (int64_t j = 0; j < len_; ++j)
          if (x.hi[base + j * inner_] >= best) first = std::min(first, j), last = j;
        out.lo[o * inner_ + k] = static_cast<double>(first);
        out.hi[o * inner_ + k] = static_cast<double>(last);
      }
    return out;
  }
  Relaxation relax(const std::vector<const Interval*>&, const Interval&) const override {
    return {};
  }

 private:
  int64_t outer_, len_, inner_;
};

Result<OpOutputs> argmax_rule(const OpContext& ctx) {
  const Dims& x = ctx.shape(0);
  const auto rank = static_cast<int64_t>(x.size());
  ASSIGN_OR_RETURN(const int64_t axis, axis_at(ctx, ctx.node.attr_int("axis", 0), rank));
  if (x[axis] < 1) return ctx.error("ArgMax over an empty axis");
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i)
    if (i != axis) (i < axis ? outer : inner) *= x[i];
  Dims out = x;
  if (ctx.node.attr_int("keepdims", 1))
    out[axis] = 1;
  else
    out.erase(out.begin() + axis);
  OpOutputs result;
  result.push_back({std::make_unique<ArgMaxOp>(outer, x[axis], inner), out});
  return result;
}

}  // namespace

void add_reduce_rules(RuleTable& table) {
  table.insert(
      table.end(),
      {{"ReduceSum", reduce_sum_rule}, {"ReduceMean", reduce_mean_rule}, {"ArgMax", argmax_rule}});
}

}  // namespace propdag

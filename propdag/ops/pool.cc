// Pools: AveragePool (an affine map) and MaxPool (1-D/2-D), over the window of conv.cc.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "propdag/ops/util.h"

namespace propdag {
namespace {

using common::Result;

Result<Window> pool_window(const OpContext& ctx) {
  std::vector<int64_t> ks = ctx.node.attr_ints("kernel_shape");
  if (ks.empty()) return ctx.error("pool needs kernel_shape");
  return window(ctx, ctx.shape(0), {}, true);
}

Result<OpOutputs> average_pool_rule(const OpContext& ctx) {
  ASSIGN_OR_RETURN(Window g, pool_window(ctx));
  bool include_pad = ctx.node.attr_int("count_include_pad", 0) != 0;
  int64_t in_plane = g.h * g.w, out_plane = g.oh * g.ow, planes = g.n * g.c;
  // Divisor per output position: taps inside the input (or inside input + pads).
  std::vector<int64_t> count(out_plane, 0);
  int64_t inside = 0;  // taps inside the input, in one plane
  for_each_tap(g, [&](int64_t o, int64_t, int64_t i, int64_t iy, int64_t ix) {
    bool in_padded = iy >= -g.ph && iy < g.h + g.ph_end && ix >= -g.pw && ix < g.w + g.pw_end;
    if (include_pad ? in_padded : i >= 0) ++count[o];
    inside += i >= 0;
  });
  auto scale = std::make_shared<std::vector<double>>(out_plane, 0.0);
  for (int64_t o = 0; o < out_plane; ++o) (*scale)[o] = count[o] > 0 ? 1.0 / count[o] : 0.0;
  // A lazy term, as a convolution's (conv.cc): the matrix is built row by row on first use,
  // never from a list of triplets, which took 16-32 bytes per entry more (a fuzzed pool over 10M
  // elements: 5.4 GB). Within a row the columns grow with the kernel position.
  LinearTerm term;
  term.rows = planes * out_plane;
  term.cols = planes * in_plane;
  term.entries = planes * inside;
  term.row_entries = [g, in_plane, out_plane, scale](int64_t row, LinearTerm::Entries& out) {
    const int64_t o = row % out_plane, p = row / out_plane, oy = o / g.ow, ox = o % g.ow;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      const int64_t iy = oy * g.sh - g.ph + ky * g.dh;
      if (iy < 0 || iy >= g.h) continue;
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        const int64_t ix = ox * g.sw - g.pw + kx * g.dw;
        if (ix >= 0 && ix < g.w) out.emplace_back(p * in_plane + iy * g.w + ix, (*scale)[o]);
      }
    }
  };
  return affine_output(one_term(std::move(term)), Vec::Zero(planes * out_plane), out_dims(g, g.c));
}

// MaxPool: the max of the window's lower and upper bounds.
class MaxPoolOp : public BoundOp {
 public:
  MaxPoolOp(std::vector<int64_t> taps, int64_t k) : taps_(std::move(taps)), k_(k) {}
  Interval interval(const std::vector<const Interval*>& in) const override {
    int64_t n = taps_.size() / k_;
    Interval out{Vec::Constant(n, -std::numeric_limits<double>::infinity()),
                 Vec::Constant(n, -std::numeric_limits<double>::infinity())};
    for (int64_t o = 0; o < n; ++o)
      for (int64_t j = 0; j < k_; ++j) {
        int64_t i = taps_[o * k_ + j];
        if (i < 0) continue;
        out.lo[o] = std::max(out.lo[o], in[0]->lo[i]);
        out.hi[o] = std::max(out.hi[o], in[0]->hi[i]);
      }
    return out;
  }
  // Per output: the input i with the largest lower bound l_i is a lower line. With M the largest
  // upper bound of the others, the output is x_i where l_i >= M, at most M where u_i <= M, and
  // otherwise at most the chord of max(x_i, M) over [l_i, u_i].
  Relaxation relax(const std::vector<const Interval*>& in, const Interval& out) const override {
    const Interval& x = *in[0];
    const int64_t n = taps_.size() / k_;
    Relaxation r;
    r.kind = Relaxation::Kind::kLinear;
    r.lo_bias = Vec::Zero(n), r.up_bias = Vec::Zero(n);
    std::vector<Eigen::Triplet<double>> lo, up;
    for (int64_t o = 0; o < n; ++o) {
      int64_t best = -1;
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < k_; ++j) {
        int64_t i = taps_[o * k_ + j];
        if (i >= 0 && (best < 0 || x.lo[i] > x.lo[best])) best = i;
      }
      for (int64_t j = 0; j < k_; ++j) {
        int64_t i = taps_[o * k_ + j];
        if (i >= 0 && i != best) m = std::max(m, x.hi[i]);
      }
      if (best < 0 || !std::isfinite(x.lo[best]) || !std::isfinite(x.hi[best])) return {};
      const double l = x.lo[best], u = x.hi[best];
      lo.emplace_back(o, best, 1.0);
      if (l >= m) {
        up.emplace_back(o, best, 1.0);
      } else if (u <= m || !std::isfinite(m)) {
        r.up_bias[o] = out.hi[o];
      } else {
        const double s = (u - m) / (u - l);
        up.emplace_back(o, best, s);
        r.up_bias[o] = m - s * l + 1e-12 * (1 + std::abs(u) + std::abs(l) + std::abs(m));
      }
    }
    Relaxation::Maps& maps = r.new_maps();
    maps.lo.resize(n, x.size()), maps.up.resize(n, x.size());
    maps.lo.setFromTriplets(lo.begin(), lo.end());
    maps.up.setFromTriplets(up.begin(), up.end());
    return r;
  }

 private:
  std::vector<int64_t> taps_;  // k_ input indices per output element, -1 for padding
  int64_t k_;
};

Result<OpOutputs> max_pool_rule(const OpContext& ctx) {
  ASSIGN_OR_RETURN(Window g, pool_window(ctx));
  int64_t k = g.kh * g.kw, in_plane = g.h * g.w, out_plane = g.oh * g.ow, planes = g.n * g.c;
  std::vector<int64_t> taps(planes * out_plane * k, -1);
  for (int64_t p = 0; p < planes; ++p)
    for_each_tap(g, [&](int64_t o, int64_t kk, int64_t i, int64_t, int64_t) {
      if (i >= 0) taps[(p * out_plane + o) * k + kk] = p * in_plane + i;
    });
  OpOutputs out;
  out.push_back({std::make_unique<MaxPoolOp>(std::move(taps), k), out_dims(g, g.c)});
  return out;
}

}  // namespace

void add_pool_rules(RuleTable& table) {
  table.insert(table.end(), {{"AveragePool", average_pool_rule}, {"MaxPool", max_pool_rule}});
}

}  // namespace propdag

// alpha-CROWN for K boxes: alpha.cc's lower pass, its reverse-mode gradient and the Adam steps on
// [K, rows, n] tensors. The relaxations are fixed by the boxes' node bounds; only the lower
// slopes of elements whose lines allow a range (ReLU / LeakyReLU inputs that straddle 0) and the
// weights between a product's two pairs of planes ([K, rows, 2n]: lower, then upper) move.
#include "propdag/torch/torch_alpha.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/clamp.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/full.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace propdag::torch_engine::internal {
namespace {

using common::Result;

// Tuning row by row (a verifier's few rows, each with a goal) holds about six tensors of this
// many entries per box and row (the pass's coefficients at every node, its gradient, the slopes
// and their Adam moments where they move): about 1.5 GB in float64 at the most.
constexpr double kRowEntries = 3.2e7;

// One lower-bound pass: the coefficients that reached every node (kept for the gradient) and
// the bound [K, rows].
struct Pass {
  std::vector<at::Tensor> lam;
  at::Tensor lb;
};

// The tuning of one objective for one chunk of boxes.
class Tuner {
 public:
  Tuner(const AlphaInput& in, const std::vector<int>& order, int target, const at::Tensor& c)
      : in_(in), order_(order), target_(target), c_(c) {}

  // The lines of every non-affine node and the starting slopes (CROWN's) where they may move.
  common::Status prepare(const Options& opt) {
    const size_t size = in_.model.dag().size();
    lines_.resize(size), planes_.resize(size);
    alpha_.resize(size), lo_min_.resize(size), lo_max_.resize(size);
    zero_lo_bias_.assign(size, 0);
    const int64_t k = in_.x.lo.size(0), rows = c_.size(0);
    for (int n : order_) {
      const Kernel* kernel = in_.kernels[n].get();
      if (kernel == nullptr || kernel->affine() != nullptr) continue;
      ASSIGN_OR_RETURN(const bool planar, kernel->planes(n, in_.b, planes_[n], opt.alpha_planes));
      if (planar) {
        // Weight 1 on the first planes (CROWN's), within [0, 1].
        if (!planes_[n].lo_bias2.defined()) continue;
        alpha_[n] = at::ones({k, rows, 2 * planes_[n].lo_bias.size(1)}, c_.options());
        lo_min_[n] = at::zeros({1}, c_.options());
        lo_max_[n] = at::ones({1}, c_.options());
        tunable_ = true;
        continue;
      }
      ASSIGN_OR_RETURN(lines_[n], kernel->lines(n, in_.b));
      const TLines& l = lines_[n];
      zero_lo_bias_[n] = !l.lo_bias.ne(0).any().item<bool>();  // ReLU-like lines
      if (l.input < 0 || !(l.lo_max > l.lo_min).any().item<bool>()) continue;
      alpha_[n] = l.lo_slope.unsqueeze(1).expand({k, rows, -1}).clone();
      lo_min_[n] = l.lo_min.unsqueeze(1);
      lo_max_[n] = l.lo_max.unsqueeze(1);
      tunable_ = true;
    }
    return {};
  }

  // The best lower bound over the steps; with `coef`, its input coefficients added there. With
  // `goal` ([rows]), stepping stops once every box has a row whose bound exceeds its goal.
  at::Tensor run(const Options& opt, at::Tensor* coef, const at::Tensor& goal) {
    constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;
    Pass p = pass(alpha_);
    at::Tensor best = p.lb;
    std::vector<at::Tensor> best_alpha = alpha_, m1(alpha_.size()), m2(alpha_.size());
    for (at::Tensor& a : alpha_)
      if (a.defined()) a = a.clone();
    const int steps = tunable_ ? opt.alpha_steps : 0;
    auto reached = [&] { return goal.defined() && (best > goal).any(1).all().item<bool>(); };
    for (int s = 1; s <= steps && !opt.past_deadline() && !reached(); ++s) {
      const std::vector<at::Tensor> grad = gradient(p);
      const double fix1 = 1 - std::pow(kBeta1, s), fix2 = 1 - std::pow(kBeta2, s);
      for (int n : order_) {
        // Skipped: untuned nodes, and tuned ones no coefficient reaches.
        if (!alpha_[n].defined() || !grad[n].defined()) continue;
        if (!m1[n].defined()) m1[n] = at::zeros_like(alpha_[n]), m2[n] = at::zeros_like(alpha_[n]);
        // In place (fewer passes over [K, rows, n]); alpha_[n] shares no storage with best_alpha.
        m1[n].mul_(kBeta1).add_(grad[n], 1 - kBeta1);
        m2[n].mul_(kBeta2).addcmul_(grad[n], grad[n], 1 - kBeta2);
        alpha_[n].addcdiv_(m1[n], (m2[n] / fix2).sqrt_().add_(kEps), opt.alpha_rate / fix1);
        at::clamp_(alpha_[n], lo_min_[n], lo_max_[n]);
      }
      p = pass(alpha_);
      const at::Tensor better = p.lb > best;
      best = at::where(better, p.lb, best);
      for (int n : order_)
        if (alpha_[n].defined())
          best_alpha[n] = at::where(better.unsqueeze(-1), alpha_[n], best_alpha[n]);
    }
    if (coef == nullptr) return best;
    // Rows are independent: one pass with every row's best slopes gives every best bound.
    p = pass(best_alpha);
    for (int n : order_)
      if (in_.model.op(n) == nullptr && p.lam[n].defined())
        coef->narrow(2, in_.offset[n], in_.model.numel(n)).add_(p.lam[n]);
    return p.lb;
  }

 private:
  TBox input_part(int n) const {
    return {in_.x.lo.narrow(1, in_.offset[n], in_.model.numel(n)),
            in_.x.hi.narrow(1, in_.offset[n], in_.model.numel(n))};
  }

  at::Tensor slope(int n, const std::vector<at::Tensor>& alpha) const {
    return alpha[n].defined() ? alpha[n] : lines_[n].lo_slope.unsqueeze(1);
  }

  // alpha.cc's lower_pass with the slopes `alpha` (undefined entries: the lines' own).
  Pass pass(const std::vector<at::Tensor>& alpha) const {
    Pass p{std::vector<at::Tensor>(alpha.size()),
           at::zeros({in_.x.lo.size(0), c_.size(0)}, c_.options())};
    p.lam[target_] = c_.unsqueeze(0);  // [1, rows, n]: shared until a box's lines differ
    for (int n : order_) {
      const at::Tensor& lam = p.lam[n];
      if (!lam.defined()) continue;
      if (in_.model.op(n) == nullptr) {
        const TBox x = input_part(n);
        p.lb = p.lb + (at::matmul(lam.clamp_min(0), x.lo.unsqueeze(-1)) +
                       at::matmul(lam.clamp_max(0), x.hi.unsqueeze(-1)))
                          .squeeze(-1);
        continue;
      }
      if (const TAffine* a = in_.kernels[n]->affine()) {
        const int64_t k = lam.size(0), rows = lam.size(1);
        const at::Tensor flat = lam.reshape({k * rows, lam.size(2)});
        for (const auto& [node, map] : a->terms)
          accumulate(p.lam[node], map->adjoint(flat).reshape({k, rows, -1}));
        p.lb = p.lb + at::matmul(lam, a->bias);
        continue;
      }
      const at::Tensor lp = lam.clamp_min(0), ln = lam.clamp_max(0);
      if (const TPlanes& q = planes_[n]; q.lo_bias.defined()) {  // a product's planes
        auto row = [](const at::Tensor& t) { return t.unsqueeze(1); };
        if (!alpha[n].defined()) {
          p.lb = p.lb + (lp * row(q.lo_bias) + ln * row(q.up_bias)).sum(-1);
          for (int s : {0, 1})
            if (q.input[s] >= 0)
              accumulate(p.lam[q.input[s]], planes_onto(q, s, lp * row(q.lo[s]) + ln * row(q.up[s]),
                                                        in_.model.numel(q.input[s])));
          continue;
        }
        // Weight w on the first planes, 1 - w on the second.
        const int64_t m = lam.size(2);
        const at::Tensor a = lp * alpha[n].narrow(2, 0, m), b = lp - a;
        const at::Tensor c = ln * alpha[n].narrow(2, m, m), d = ln - c;
        p.lb = p.lb +
               (a * row(q.lo_bias) + b * row(q.lo_bias2) + c * row(q.up_bias) + d * row(q.up_bias2))
                   .sum(-1);
        for (int s : {0, 1})
          if (q.input[s] >= 0)
            accumulate(p.lam[q.input[s]], planes_onto(q, s,
                                                      a * row(q.lo[s]) + b * row(q.lo2[s]) +
                                                          c * row(q.up[s]) + d * row(q.up2[s]),
                                                      in_.model.numel(q.input[s])));
        continue;
      }
      const TLines& l = lines_[n];
      const at::Tensor up = ln * l.up_bias.unsqueeze(1);
      p.lb = p.lb + (zero_lo_bias_[n] ? up : up + lp * l.lo_bias.unsqueeze(1)).sum(-1);
      if (l.input >= 0)
        accumulate(p.lam[l.input], lp * slope(n, alpha) + ln * l.up_slope.unsqueeze(1));
    }
    return p;
  }

  // alpha.cc's alpha_gradient: g[n] = d lb / d lam[n], a node's inputs before it; returns
  // d lb / d alpha for the tuned nodes.
  std::vector<at::Tensor> gradient(const Pass& p) const {
    std::vector<at::Tensor> g(alpha_.size()), grad(alpha_.size());
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const int n = *it;
      const at::Tensor& lam = p.lam[n];
      if (!lam.defined()) continue;
      if (in_.model.op(n) == nullptr) {  // lb gains lam lo where lam >= 0, lam hi elsewhere
        const TBox x = input_part(n);
        g[n] = at::where(lam >= 0, x.lo.unsqueeze(1), x.hi.unsqueeze(1));
        continue;
      }
      if (const TAffine* a = in_.kernels[n]->affine()) {
        at::Tensor gn = a->bias;
        for (const auto& [node, map] : a->terms) {
          const at::Tensor& gi = g[node];
          const int64_t k = gi.size(0), rows = gi.size(1);
          gn = gn + map->apply(gi.reshape({k * rows, gi.size(2)})).reshape({k, rows, -1});
        }
        g[n] = gn;
        continue;
      }
      if (const TPlanes& q = planes_[n]; q.lo_bias.defined()) {
        // The planes' values at what follows them; tuned, d lb / d w = lam (first's - second's).
        const bool tuned = alpha_[n].defined();
        at::Tensor lo = q.lo_bias.unsqueeze(1), up = q.up_bias.unsqueeze(1), lo2, up2;
        if (tuned) lo2 = q.lo_bias2.unsqueeze(1), up2 = q.up_bias2.unsqueeze(1);
        for (int s : {0, 1}) {
          if (q.input[s] < 0 || !g[q.input[s]].defined()) continue;
          const at::Tensor t = planes_take(q, s, g[q.input[s]]);
          lo = lo + t * q.lo[s].unsqueeze(1);
          up = up + t * q.up[s].unsqueeze(1);
          if (tuned) {
            lo2 = lo2 + t * q.lo2[s].unsqueeze(1);
            up2 = up2 + t * q.up2[s].unsqueeze(1);
          }
        }
        if (!tuned) {
          g[n] = at::where(lam >= 0, lo, up);
          continue;
        }
        const int64_t m = lam.size(2);
        const at::Tensor w_lo = alpha_[n].narrow(2, 0, m), w_up = alpha_[n].narrow(2, m, m);
        g[n] = at::where(lam >= 0, lo2 + w_lo * (lo - lo2), up2 + w_up * (up - up2));
        grad[n] = at::cat({lam.clamp_min(0) * (lo - lo2), lam.clamp_max(0) * (up - up2)}, 2);
        continue;
      }
      const TLines& l = lines_[n];
      const at::Tensor gi = l.input >= 0 ? g[l.input] : at::zeros_like(lam);
      const at::Tensor lower = gi * slope(n, alpha_);
      g[n] = at::where(lam >= 0, zero_lo_bias_[n] ? lower : lower + l.lo_bias.unsqueeze(1),
                       gi * l.up_slope.unsqueeze(1) + l.up_bias.unsqueeze(1));
      if (alpha_[n].defined()) grad[n] = gi * lam.clamp_min(0);
    }
    return grad;
  }

  const AlphaInput& in_;
  const std::vector<int>& order_;
  int target_;
  at::Tensor c_;
  std::vector<TLines> lines_;
  std::vector<TPlanes> planes_;  // products' planes (lines_ for the other kernels)
  std::vector<at::Tensor> alpha_, lo_min_, lo_max_;
  std::vector<char> zero_lo_bias_;  // per node: its lower lines pass through the origin
  bool tunable_ = false;
};

TBox rows_of(const TBox& b, int64_t k0, int64_t k) {
  if (!b.lo.defined()) return {};
  return {b.lo.narrow(0, k0, k), b.hi.narrow(0, k0, k)};
}

// Rows of the objective in the order tuning takes them: by CROWN's margin over their goal, the
// largest first (over the boxes, the best box's), where there is a goal; else as they come.
std::vector<int64_t> row_order(const at::Tensor& crown, const at::Tensor& goal, int64_t rows) {
  std::vector<int64_t> order(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) order[static_cast<size_t>(r)] = r;
  if (!goal.defined() || !crown.defined()) return order;
  const at::Tensor margin = at::amax(crown - goal, 0)
                                .to(at::TensorOptions().dtype(at::kDouble).device(at::kCPU))
                                .contiguous();
  const double* m = margin.data_ptr<double>();
  std::stable_sort(order.begin(), order.end(), [m](int64_t a, int64_t b) { return m[a] > m[b]; });
  return order;
}

}  // namespace

Result<at::Tensor> optimized_lower(const AlphaInput& in, int target, const at::Tensor& c,
                                   const Options& opt, at::Tensor* coef, const at::Tensor& crown,
                                   const Vec* goal) {
  const std::vector<int> order = in.model.dag().backward_order(target);
  double per_row = 0;  // coefficients kept per box and objective row
  for (int n : order) per_row += static_cast<double>(in.model.numel(n));
  const int64_t k = in.x.lo.size(0), rows = c.size(0);
  if (opt.method != Method::kAlpha || opt.alpha_steps <= 0 || rows == 0) return at::Tensor();
  const bool all_rows = per_row * static_cast<double>(rows) <= opt.chunk_entries;
  const bool by_rows = goal != nullptr && goal->size() == rows &&
                       per_row <= std::max(opt.chunk_entries, kRowEntries);
  if (!all_rows && !by_rows) return at::Tensor();
  const at::Tensor g = by_rows ? to_tensor(*goal, c.options()) : at::Tensor();
  // Every box proved by some row, CROWN's or tuned: tuning the rest would gain it nothing.
  const at::Tensor start = crown.defined() ? crown : at::full({k, rows}, -INFINITY, c.options());
  at::Tensor out = at::full({k, rows}, -INFINITY, c.options());
  auto proved = [&] {
    return g.defined() && (at::maximum(start, out) > g).any(1).all().item<bool>();
  };
  const int64_t rn =
      all_rows ? rows : std::max<int64_t>(1, static_cast<int64_t>(opt.chunk_entries / per_row));
  const auto kc = std::max<int64_t>(
      1, static_cast<int64_t>(opt.chunk_entries / (per_row * static_cast<double>(rn))));
  const std::vector<int64_t> taken = row_order(crown, g, rows);
  for (int64_t r0 = 0; r0 < rows && !proved(); r0 += rn) {
    if (r0 > 0 && opt.past_deadline()) break;
    const int64_t rk = std::min(rn, rows - r0);
    std::vector<int64_t> picked(taken.begin() + r0, taken.begin() + r0 + rk);
    const at::Tensor sel =
        at::from_blob(picked.data(), {rk}, at::kLong).to(c.device(), false, true);
    // The picked rows in the order they were taken (not the objective's): lb's column j is
    // row picked[j], which index_copy_ puts back in place.
    const at::Tensor cr = c.index_select(0, sel);
    const at::Tensor gr = g.defined() ? g.index_select(0, sel) : at::Tensor();
    for (int64_t k0 = 0; k0 < k; k0 += kc) {
      const int64_t kk = std::min(kc, k - k0);
      const TBox x = rows_of(in.x, k0, kk);
      std::vector<TBox> b;
      b.reserve(in.b.size());
      for (const TBox& nb : in.b) b.push_back(rows_of(nb, k0, kk));
      const AlphaInput part{in.model, in.kernels, in.offset, x, b};
      Tuner tuner(part, order, target, cr);
      RETURN_IF_ERROR(tuner.prepare(opt));
      at::Tensor part_coef;
      if (coef != nullptr) part_coef = at::zeros({kk, rk, coef->size(2)}, coef->options());
      const at::Tensor lb = tuner.run(opt, coef != nullptr ? &part_coef : nullptr, gr);
      out.narrow(0, k0, kk).index_copy_(1, sel, lb);
      if (coef != nullptr) coef->narrow(0, k0, kk).index_copy_(1, sel, part_coef);
    }
  }
  return out;
}

Result<TBox> tuned_outputs(const AlphaInput& in, int target, const TBox& crown,
                           const Options& opt) {
  if (opt.method != Method::kAlpha) return crown;
  const int64_t n = in.model.numel(target);
  // Both sides tuned: the upper bound of y is minus the lower bound of -y.
  const at::Tensor id = at::eye(n, crown.lo.options());
  ASSIGN_OR_RETURN(at::Tensor lower, optimized_lower(in, target, at::cat({id, -id}, 0), opt,
                                                     nullptr, at::Tensor(), nullptr));
  if (!lower.defined()) return crown;
  return TBox{at::maximum(crown.lo, lower.narrow(1, 0, n)),
              at::minimum(crown.hi, -lower.narrow(1, n, n))};
}

}  // namespace propdag::torch_engine::internal

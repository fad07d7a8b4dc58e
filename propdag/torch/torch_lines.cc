// The torch engine's backward step through an elementwise relaxation (crown.cc's step for lines),
// on [K, rows, n] coefficients: a fused SIMD loop on the CPU, tensor operations elsewhere.
#include <ATen/Dispatch.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>

#include <vector>

#include "propdag/torch/torch_ops.h"

namespace propdag::torch_engine::internal {
namespace {

// Adds the bounds of an elementwise relaxation lo_slope x + lo_bias <= y <= up_slope x + up_bias
// ([K, n] each) and, when `in` >= 0, the coefficients it passes to node `in` (crown.cc's step).
// One side of the step on the CPU, fused into one pass over the coefficients (the tensor form
// below makes about ten passes over [K, rows, n] temporaries, which made it several times
// slower per box than the Eigen engine): out = coef * (coef >= 0 ? s_pos : s_neg) and
// bound += sum_j coef * (coef >= 0 ? b_pos : b_neg), per box and row. Each row's loop is a SIMD
// loop (-fopenmp-simd): the sum is taken in the vector's lanes, then added up.
template <class T>
void fused_row(const T* c, const T* sp, const T* sn, const T* bp, const T* bn, T* o, T& acc,
               int64_t n) {
  T sum = 0;
  if (o != nullptr) {
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; ++j) {
      const T v = c[j];
      const bool pos = v >= 0;
      sum += v * (pos ? bp[j] : bn[j]);
      o[j] = v * (pos ? sp[j] : sn[j]);
    }
  } else {
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; ++j) sum += c[j] * (c[j] >= 0 ? bp[j] : bn[j]);
  }
  acc += sum;
}

// fused_row over each row's elements, or over the window `win` alone where it is small (`out`
// then starts as zeros, which the coefficients are outside it).
template <class T>
void fused_side(const at::Tensor& coef, const at::Tensor& s_pos, const at::Tensor& s_neg,
                const at::Tensor& b_pos, const at::Tensor& b_neg, at::Tensor& out,
                at::Tensor& bound, bool want_out, const Window& win) {
  const int64_t k = s_pos.size(0), rows = coef.size(1), n = coef.size(2);
  const bool shared = coef.size(0) == 1;
  const T* c = coef.data_ptr<T>();
  const T *sp = s_pos.data_ptr<T>(), *sn = s_neg.data_ptr<T>();
  const T *bp = b_pos.data_ptr<T>(), *bn = b_neg.data_ptr<T>();
  T* o = want_out ? out.data_ptr<T>() : nullptr;
  T* acc = bound.data_ptr<T>();
  // Runs of elements: the whole row, or each map's rows [r0, r1) from column c0 on.
  const bool part = win.small();
  const int64_t run = part ? win.c1 - win.c0 : n;
  std::vector<int64_t> starts;
  if (part && !win.empty()) {
    for (int64_t ch = 0; ch < win.c; ++ch)
      for (int64_t y = win.r0; y < win.r1; ++y) starts.push_back((ch * win.h + y) * win.w + win.c0);
  } else if (!part) {
    starts.push_back(0);
  }
  for (int64_t b = 0; b < k; ++b) {
    const T* cb = c + (shared ? 0 : b * rows * n);
    for (int64_t r = 0; r < rows; ++r)
      for (const int64_t j : starts)
        fused_row(cb + r * n + j, sp + b * n + j, sn + b * n + j, bp + b * n + j, bn + b * n + j,
                  o != nullptr ? o + (b * rows + r) * n + j : nullptr, acc[b * rows + r], run);
  }
}

}  // namespace

void elementwise_step(const at::Tensor& lo_slope, const at::Tensor& lo_bias,
                      const at::Tensor& up_slope, const at::Tensor& up_bias, int in,
                      const at::Tensor& lam, const at::Tensor& om, TBackward& w,
                      const Window& win) {
  // crown.cc splits each coefficient into its positive and negative parts and takes the lower
  // line for one and the upper for the other; one of the two is exactly 0, so selecting the
  // line by the sign gives the same products.
  if (cpu_paths(lam.device())) {
    const int64_t k = lo_slope.size(0);
    at::Tensor l = lam.contiguous(), o = om.contiguous();
    at::Tensor ls = lo_slope.contiguous(), us = up_slope.contiguous();
    at::Tensor lb = lo_bias.contiguous(), ub = up_bias.contiguous();
    const int64_t n = l.size(2);
    const Window part = win.c * win.h * win.w == n ? win : Window{};
    at::Tensor new_lam, new_om;
    if (in >= 0) {
      // Outside a small window nothing is written: the zeros are the coefficients there.
      new_lam = part.small() ? at::zeros({k, l.size(1), n}, l.options())
                             : at::empty({k, l.size(1), n}, l.options());
      new_om = part.small() ? at::zeros({k, o.size(1), n}, o.options())
                            : at::empty({k, o.size(1), n}, o.options());
    }
    at::Tensor wlb = w.lb.contiguous(), wub = w.ub.contiguous();
    AT_DISPATCH_FLOATING_TYPES(l.scalar_type(), "elementwise_step", [&] {
      fused_side<scalar_t>(l, ls, us, lb, ub, new_lam, wlb, in >= 0, part);
      fused_side<scalar_t>(o, us, ls, ub, lb, new_om, wub, in >= 0, part);
    });
    w.lb = wlb, w.ub = wub;
    if (in < 0) return;
    add_coef(w, in, std::move(new_lam), std::move(new_om), part);
    return;
  }
  at::Tensor lam_pos = lam >= 0, om_pos = om >= 0;
  at::Tensor ls = lo_slope.unsqueeze(1), us = up_slope.unsqueeze(1);
  at::Tensor lb = lo_bias.unsqueeze(1), ub = up_bias.unsqueeze(1);
  w.lb.add_((lam * at::where(lam_pos, lb, ub)).sum(-1));
  w.ub.add_((om * at::where(om_pos, ub, lb)).sum(-1));
  if (in < 0) return;
  add_coef(w, in, lam * at::where(lam_pos, ls, us), om * at::where(om_pos, us, ls),
           win.c * win.h * win.w == lam.size(2) ? win : Window{});
}

}  // namespace propdag::torch_engine::internal

// Kernels of ops with a ScalarRule or a PairRule (op.h): Sin, Cos, powers, Sigmoid, Tanh, Sign,
// and products and quotients of two variables. Their intervals, lines and planes are computed
// element by element over all K boxes in one loop, in double on the CPU with the Eigen rules' own
// scalar functions (so both engines relax alike); the backward steps are tensor operations on
// the engine's device.
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "propdag/relax.h"
#include "propdag/torch/torch_ops.h"

namespace propdag::torch_engine::internal {
namespace {

using common::Result;

// `t` as a contiguous float64 tensor on the CPU (no copy when it is one).
at::Tensor host(const at::Tensor& t) {
  return t.to(at::TensorOptions().dtype(at::kDouble).device(at::kCPU)).contiguous();
}

at::Tensor host_empty(const at::Tensor& like) {
  return at::empty(like.sizes(), at::TensorOptions().dtype(at::kDouble));
}

// A scalar function of each element of its input.
class ScalarKernel : public LinesKernel {
 public:
  ScalarKernel(const ScalarRule& rule, int in, at::TensorOptions opts)
      : rule_(rule), in_(in), opts_(opts) {}
  void kinds(std::vector<std::string>& kinds) const override { kinds.emplace_back("scalar"); }

  Result<TBox> interval(const std::vector<const TBox*>& in) const override {
    const at::Tensor l = host(in[0]->lo), u = host(in[0]->hi);
    at::Tensor lo = host_empty(l), hi = host_empty(l);
    const double *lp = l.data_ptr<double>(), *up = u.data_ptr<double>();
    double *op = lo.data_ptr<double>(), *hp = hi.data_ptr<double>();
    for (int64_t i = 0, n = l.numel(); i < n; ++i)
      std::tie(op[i], hp[i]) = rule_.range(lp[i], up[i]);
    return TBox{lo.to(opts_), hi.to(opts_)};
  }

  // The rule's lines, or constant bounds (slope 0, nothing passed on) where it has none. A lower
  // slope may move within [lo_min, lo_max] where the lines give a range; a tangent of a curve
  // stays fixed.
  Result<TLines> lines(int node, const std::vector<TBox>& b) const override {
    if (!rule_.has_lines()) {
      const at::Tensor zero = at::zeros_like(b[node].lo);
      return TLines{zero, b[node].lo, zero, b[node].hi, zero, zero, -1};
    }
    const at::Tensor l = host(b[in_].lo), u = host(b[in_].hi);
    const at::Tensor lo = host(b[node].lo), hi = host(b[node].hi);
    at::Tensor out[6];
    double* o[6];
    for (int j = 0; j < 6; ++j) out[j] = host_empty(l), o[j] = out[j].data_ptr<double>();
    const double *lp = l.data_ptr<double>(), *up = u.data_ptr<double>();
    const double *lop = lo.data_ptr<double>(), *hip = hi.data_ptr<double>();
    for (int64_t i = 0, n = l.numel(); i < n; ++i) {
      const Lines x = rule_.lines(lp[i], up[i], lop[i], hip[i]);
      o[0][i] = x.lo_slope, o[1][i] = x.lo_bias, o[2][i] = x.up_slope, o[3][i] = x.up_bias;
      const bool range = x.curve == nullptr;
      o[4][i] = range ? x.lo_min : x.lo_slope;
      o[5][i] = range ? x.lo_max : x.lo_slope;
    }
    return TLines{out[0].to(opts_),
                  out[1].to(opts_),
                  out[2].to(opts_),
                  out[3].to(opts_),
                  out[4].to(opts_),
                  out[5].to(opts_),
                  in_};
  }

 private:
  const ScalarRule& rule_;
  int in_;
  at::TensorOptions opts_;
};

// out_i in planes of x = input 0's element x_index[i] and y = input 1's y_index[i].
class PairKernel : public Kernel {
 public:
  PairKernel(const PairRule& rule, std::vector<int> inputs, at::TensorOptions opts)
      : rule_(rule), inputs_(std::move(inputs)), opts_(opts) {
    for (int s : {0, 1}) {
      const std::vector<int64_t>& idx = s ? rule_.y_index() : rule_.x_index();
      index_[s] = at::empty({static_cast<int64_t>(idx.size())}, at::TensorOptions(at::kLong));
      std::copy(idx.begin(), idx.end(), index_[s].data_ptr<int64_t>());
      index_[s] = index_[s].to(opts.device());
      sequential_[s] = true;
      for (size_t i = 0; sequential_[s] && i < idx.size(); ++i)
        sequential_[s] = idx[i] == static_cast<int64_t>(i);
    }
  }
  bool steps_by_lines() const override { return false; }
  void kinds(std::vector<std::string>& kinds) const override { kinds.emplace_back("product"); }

  Result<TBox> interval(const std::vector<const TBox*>& in) const override {
    const int64_t n = static_cast<int64_t>(rule_.y_index().size());
    const Bounds x = bounds_of(in[0]), y = bounds_of(in[1]);
    const int64_t k = y.k;
    at::Tensor lo = at::empty({k, n}, at::TensorOptions().dtype(at::kDouble)),
               hi = at::empty_like(lo);
    double *op = lo.data_ptr<double>(), *hp = hi.data_ptr<double>();
    const std::vector<int64_t>&xi = rule_.x_index(), &yi = rule_.y_index();
    for (int64_t b = 0; b < k; ++b)
      for (int64_t i = 0; i < n; ++i) {
        const double lx = x.lo ? x.lo[b * x.n + xi[i]] : 0, ux = x.lo ? x.hi[b * x.n + xi[i]] : 0;
        std::tie(op[b * n + i], hp[b * n + i]) =
            rule_.range(i, lx, ux, y.lo[b * y.n + yi[i]], y.hi[b * y.n + yi[i]]);
      }
    return TBox{lo.to(opts_), hi.to(opts_)};
  }

  // Constant bounds: the planes are not lines of one input (a pass that needs lines skips
  // products: steps_by_lines, Kernel::planes).
  Result<TLines> lines(int node, const std::vector<TBox>& b) const override {
    const at::Tensor zero = at::zeros_like(b[node].lo);
    return TLines{zero, b[node].lo, zero, b[node].hi, zero, zero, -1};
  }

  Result<bool> planes(int node, const std::vector<TBox>& b, TPlanes& out,
                      bool second) const override {
    ASSIGN_OR_RETURN(out, planar(node, b, second));
    return true;
  }

  // crown.cc's step through each box's planes (its output bounds where it has none): the
  // coefficient on out_i times the lower or the upper plane by its sign, added onto the elements
  // of x and y that output i reads.
  common::Status step(int node, const std::vector<TBox>& b, TBackward& w) const override {
    ASSIGN_OR_RETURN(TPlanes p, planar(node, b));
    const at::Tensor &lam = w.lam[node], &om = w.om[node];
    const at::Tensor lp = lam.clamp_min(0), ln = lam.clamp_max(0);
    const at::Tensor op = om.clamp_min(0), on = om.clamp_max(0);
    auto row = [](const at::Tensor& t) { return t.unsqueeze(1); };
    w.lb.add_((lp * row(p.lo_bias) + ln * row(p.up_bias)).sum(-1));
    w.ub.add_((op * row(p.up_bias) + on * row(p.lo_bias)).sum(-1));
    for (int s : {0, 1}) {
      const int in = p.input[s];
      if (in < 0) continue;
      const at::Tensor &lo = p.lo[s], &up = p.up[s];
      const int64_t size = b[in].lo.size(1);
      add_coef(w, in, planes_onto(p, s, lp * row(lo) + ln * row(up), size),
               planes_onto(p, s, op * row(up) + on * row(lo), size));
    }
    return {};
  }

 private:
  struct Bounds {
    at::Tensor lo_t, hi_t;
    const double *lo = nullptr, *hi = nullptr;
    int64_t k = 0, n = 0;
  };
  static Bounds bounds_of(const TBox* t) {
    Bounds b;
    if (t == nullptr) return b;
    b.lo_t = host(t->lo), b.hi_t = host(t->hi);
    b.lo = b.lo_t.data_ptr<double>(), b.hi = b.hi_t.data_ptr<double>();
    b.k = b.lo_t.size(0), b.n = b.lo_t.size(1);
    return b;
  }

  // The planes of K boxes; with `second`, the second planes too.
  Result<TPlanes> planar(int node, const std::vector<TBox>& b, bool second = false) const {
    const int64_t n = static_cast<int64_t>(rule_.y_index().size());
    const TBox* in[2] = {nullptr, nullptr};
    for (int s : {0, 1})
      if (s < static_cast<int>(inputs_.size()) && inputs_[s] >= 0) in[s] = &b[inputs_[s]];
    const Bounds x = bounds_of(in[0]), y = bounds_of(in[1]);
    const at::Tensor out_lo = host(b[node].lo), out_hi = host(b[node].hi);
    const int64_t k = out_lo.size(0);
    // The first planes in t[0..5], the second in t[6..11].
    at::Tensor t[12];
    double* o[12];
    const int sets = second ? 2 : 1;
    for (int j = 0; j < 6 * sets; ++j)
      t[j] = at::empty({k, n}, at::TensorOptions().dtype(at::kDouble)),
      o[j] = t[j].data_ptr<double>();
    std::vector<Planes> planes(static_cast<size_t>(n)), other(static_cast<size_t>(n));
    bool any_other = false;
    Interval row[2];
    for (int64_t i = 0; i < k; ++i) {
      std::vector<const Interval*> ptr(inputs_.size(), nullptr);
      for (int s : {0, 1}) {
        const Bounds& v = s ? y : x;
        if (v.lo == nullptr || s >= static_cast<int>(ptr.size())) continue;
        row[s].lo = Eigen::Map<const Vec>(v.lo + i * v.n, v.n);
        row[s].hi = Eigen::Map<const Vec>(v.hi + i * v.n, v.n);
        ptr[static_cast<size_t>(s)] = &row[s];
      }
      const bool has = rule_.planes(ptr, planes);
      const bool two = second && has && rule_.other_planes(ptr, other);
      any_other = any_other || two;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t at = i * n + j;
        if (!has) {  // the output interval
          for (int h = 0; h < 6 * sets; h += 6) {
            o[h][at] = o[h + 1][at] = o[h + 3][at] = o[h + 4][at] = 0;
            o[h + 2][at] = out_lo.data_ptr<double>()[at];
            o[h + 5][at] = out_hi.data_ptr<double>()[at];
          }
          continue;
        }
        for (int h = 0; h < 6 * sets; h += 6) {
          const Planes& p = (h && two ? other : planes)[static_cast<size_t>(j)];
          o[h][at] = p.lo_x, o[h + 1][at] = p.lo_y, o[h + 2][at] = p.lo_bias;
          o[h + 3][at] = p.up_x, o[h + 4][at] = p.up_y, o[h + 5][at] = p.up_bias;
        }
      }
    }
    TPlanes p;
    p.lo[0] = t[0].to(opts_), p.lo[1] = t[1].to(opts_), p.lo_bias = t[2].to(opts_);
    p.up[0] = t[3].to(opts_), p.up[1] = t[4].to(opts_), p.up_bias = t[5].to(opts_);
    if (any_other) {
      p.lo2[0] = t[6].to(opts_), p.lo2[1] = t[7].to(opts_), p.lo_bias2 = t[8].to(opts_);
      p.up2[0] = t[9].to(opts_), p.up2[1] = t[10].to(opts_), p.up_bias2 = t[11].to(opts_);
    }
    const bool use[2] = {rule_.uses_x(), rule_.uses_y()};
    for (int s : {0, 1}) {
      if (!use[s] || in[s] == nullptr) continue;
      p.input[s] = inputs_[static_cast<size_t>(s)];
      if (!sequential_[s] || in[s]->lo.size(1) != n) p.index[s] = index_[s];
    }
    return p;
  }

  const PairRule& rule_;
  std::vector<int> inputs_;
  at::TensorOptions opts_;
  at::Tensor index_[2];
  bool sequential_[2] = {false, false};  // index i reads element i
};

}  // namespace

at::Tensor planes_onto(const TPlanes& p, int s, const at::Tensor& c, int64_t size) {
  if (!p.index[s].defined()) return c;
  return at::zeros({c.size(0), c.size(1), size}, c.options()).index_add_(2, p.index[s], c);
}

at::Tensor planes_take(const TPlanes& p, int s, const at::Tensor& g) {
  return p.index[s].defined() ? g.index_select(2, p.index[s]) : g;
}

std::unique_ptr<Kernel> elementwise_kernel(const BoundOp& op, const std::vector<int>& inputs,
                                           const at::TensorOptions& opts) {
  if (const ScalarRule* s = op.scalar_rule())
    return std::unique_ptr<Kernel>(new ScalarKernel(*s, inputs[0], opts));
  if (const PairRule* p = op.pair_rule())
    return std::unique_ptr<Kernel>(new PairKernel(*p, inputs, opts));
  return nullptr;
}

}  // namespace propdag::torch_engine::internal

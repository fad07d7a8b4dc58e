#include "propdag/torch/torch_ops.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/clamp_max.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/conv_transpose2d.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/nan_to_num.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/sparse_coo_tensor.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace propdag::torch_engine::internal {

void accumulate(at::Tensor& into, at::Tensor add) {
  if (!into.defined())
    into = std::move(add);
  else
    into = into + add;  // not in place: coefficient tensors may share storage
}

at::Tensor LinearMap::adjoint_rows(const at::Tensor& rows, int64_t out,
                                   const at::TensorOptions& opts, const Window& in,
                                   Window* win) const {
  at::Tensor id = at::zeros({rows.size(0), out}, opts);
  return adjoint_window(id.scatter_(1, rows.unsqueeze(1), 1.0), in, win);
}

at::Tensor LinearMap::adjoint_window(const at::Tensor& y, const Window&, Window* out) const {
  if (out != nullptr) *out = Window{};
  return adjoint(y);
}

Window unite(const Window& a, const Window& b) {
  if (!a.known() || !b.on(a.c, a.h, a.w)) return {};
  if (a.empty()) return b;
  if (b.empty()) return a;
  return {a.c,
          a.h,
          a.w,
          std::min(a.r0, b.r0),
          std::max(a.r1, b.r1),
          std::min(a.c0, b.c0),
          std::max(a.c1, b.c1)};
}

void add_coef(TBackward& w, int node, at::Tensor lam, at::Tensor om, const Window& win) {
  const auto i = static_cast<size_t>(node);
  const bool first = !w.lam[i].defined();
  accumulate(w.lam[i], std::move(lam));
  accumulate(w.om[i], std::move(om));
  if (!w.win.empty()) w.win[i] = first ? win : unite(w.win[i], win);
}

common::Status LinesKernel::step(int node, const std::vector<TBox>& b, TBackward& w) const {
  TLines* cached = w.lines != nullptr ? &(*w.lines)[node] : nullptr;
  if (cached == nullptr || !cached->lo_slope.defined()) {
    ASSIGN_OR_RETURN(TLines l, lines(node, b));
    if (cached == nullptr) {
      elementwise_step(l.lo_slope, l.lo_bias, l.up_slope, l.up_bias, l.input, w.lam[node],
                       w.om[node], w);
      return {};
    }
    *cached = std::move(l);
  }
  const TLines& l = *cached;
  elementwise_step(l.lo_slope, l.lo_bias, l.up_slope, l.up_bias, l.input, w.lam[node], w.om[node],
                   w, window_of(w, node));
  return {};
}

namespace {

using common::Result;

// ---- Kernels ----

// out = sum_k W_k in[slot_k] + bias.
class AffineKernel : public Kernel {
 public:
  struct Term {
    int slot;
    std::unique_ptr<LinearMap> map;
  };
  AffineKernel(std::vector<int> inputs, std::vector<Term> terms, at::Tensor bias)
      : inputs_(std::move(inputs)), terms_(std::move(terms)), bias_(std::move(bias)) {
    parts_.bias = bias_;
    for (const Term& t : terms_) parts_.terms.emplace_back(inputs_[t.slot], t.map.get());
  }
  const TAffine* affine() const override { return &parts_; }
  Result<TLines> lines(int, const std::vector<TBox>&) const override {
    return common::Error{"", "", "", "an affine node has no lines"};
  }
  void kinds(std::vector<std::string>& kinds) const override {
    for (const Term& t : terms_) kinds.emplace_back(t.map->kind());
  }
  Result<TBox> interval(const std::vector<const TBox*>& in) const override {
    at::Tensor lo, hi;
    for (const Term& t : terms_) {
      TBox part = t.map->ends(in[t.slot]->lo, in[t.slot]->hi);
      accumulate(lo, part.lo);
      accumulate(hi, part.hi);
    }
    if (!lo.defined()) {  // no variable term left (cannot happen for a Dag node, kept safe)
      const int64_t k = in.empty() || in[0] == nullptr ? 1 : in[0]->lo.size(0);
      return TBox{bias_.expand({k, -1}).clone(), bias_.expand({k, -1}).clone()};
    }
    return TBox{lo + bias_, hi + bias_};
  }
  common::Status step(int node, const std::vector<TBox>&, TBackward& w) const override {
    const at::Tensor &lam = w.lam[node], &om = w.om[node];
    const int64_t k = lam.size(0), rows = lam.size(1);
    // Until a nonlinear step the two sides are one tensor (a pass's start): map it once.
    const bool same = lam.is_same(om);
    const Window win = window_of(w, node);
    for (const Term& t : terms_) {
      Window wl, wo;
      at::Tensor l = t.map->adjoint_window(lam.reshape({k * rows, lam.size(2)}), win, &wl)
                         .reshape({k, rows, -1});
      at::Tensor o = same ? l
                          : t.map->adjoint_window(om.reshape({k * rows, om.size(2)}), win, &wo)
                                .reshape({k, rows, -1});
      add_coef(w, inputs_[t.slot], l, o, same ? wl : unite(wl, wo));
    }
    const at::Tensor lb = bias_product(lam, win);
    w.lb.add_(lb);
    w.ub.add_(same ? lb : bias_product(om, win));
    return {};
  }

 private:
  // c bias ([K, rows]) for coefficients c [K, rows, n], over their window alone where it is small.
  at::Tensor bias_product(const at::Tensor& c, const Window& win) const {
    if (!win.small() || win.c * win.h * win.w != c.size(2)) return at::matmul(c, bias_);
    if (win.empty()) return at::zeros({c.size(0), c.size(1)}, c.options());
    auto crop = [&win](const at::Tensor& t) {
      return t.narrow(-2, win.r0, win.r1 - win.r0).narrow(-1, win.c0, win.c1 - win.c0);
    };
    const at::Tensor part = crop(c.view({c.size(0), c.size(1), win.c, win.h, win.w}));
    return (part * crop(bias_.view({win.c, win.h, win.w}))).sum({2, 3, 4});
  }

  std::vector<int> inputs_;
  std::vector<Term> terms_;
  at::Tensor bias_;
  TAffine parts_;
};

// ReLU / LeakyReLU max(x, a x), with relax.cc's leaky_relu_lines elementwise on tensors.
class LeakyReluKernel : public LinesKernel {
 public:
  LeakyReluKernel(int in, double a) : in_(in), a_(a) {}
  void kinds(std::vector<std::string>& kinds) const override { kinds.emplace_back("relu"); }
  Result<TBox> interval(const std::vector<const TBox*>& in) const override {
    return TBox{f(in[0]->lo), f(in[0]->hi)};
  }
  // Unstable elements may take any lower slope in [a, 1]; stable ones keep theirs.
  Result<TLines> lines(int, const std::vector<TBox>& b) const override {
    const at::Tensor &l = b[in_].lo, &u = b[in_].hi;
    at::Tensor pos = l >= 0, neg = u <= 0, fixed = pos.logical_or(neg);
    at::Tensor one = at::ones_like(l), a = one * a_;
    at::Tensor k = (u - l * a_) / (u - l);
    at::Tensor lower = at::where(u + l > (u - l) * 1e-9, one, a);  // as leaky_relu_lines
    at::Tensor lo_slope = at::where(pos, one, at::where(neg, a, lower));
    at::Tensor up_slope = at::where(pos, one, at::where(neg, a, k));
    at::Tensor up_bias =  // from both ends, the larger, as leaky_relu_lines
        at::where(fixed, at::zeros_like(l), at::maximum(u - k * u, (a - k) * l));
    return TLines{lo_slope,
                  at::zeros_like(l),
                  up_slope,
                  up_bias,
                  at::where(fixed, lo_slope, a),
                  at::where(fixed, lo_slope, one),
                  in_};
  }

 private:
  // Relu (a = 0) gives 0 below 0, also at -inf (where a x would be NaN).
  at::Tensor f(const at::Tensor& x) const {
    return a_ == 0 ? at::where(x >= 0, x, at::zeros_like(x)) : at::where(x >= 0, x, x * a_);
  }
  int in_;
  double a_;
};

// Any other op: its Eigen rule, called once per box on the CPU.
class PerBoxKernel : public LinesKernel {
 public:
  PerBoxKernel(const BoundOp* op, std::vector<int> inputs, at::TensorOptions opts)
      : op_(op), inputs_(std::move(inputs)), opts_(opts) {}
  bool per_box() const override { return true; }
  bool steps_by_lines() const override { return false; }
  void kinds(std::vector<std::string>& kinds) const override { kinds.emplace_back("per_box"); }
  Result<TBox> interval(const std::vector<const TBox*>& in) const override {
    std::vector<Mat> lo, hi;
    const int64_t k = boxes(in, lo, hi);
    Mat out_lo, out_hi;
    for (int64_t i = 0; i < k; ++i) {
      std::vector<Interval> row = rows(lo, hi, i);
      Interval y = op_->interval(pointers(in, row));
      if (i == 0) out_lo.resize(k, y.size()), out_hi.resize(k, y.size());
      out_lo.row(i) = y.lo.transpose(), out_hi.row(i) = y.hi.transpose();
    }
    return TBox{to_tensor(out_lo, opts_), to_tensor(out_hi, opts_)};
  }
  // The rule's lines per box; constant bounds (slope 0) where it has none. Tunable lower slopes
  // (Relaxation::lo_min, lo_max) where the rule gives a range; tangent points stay fixed.
  Result<TLines> lines(int node, const std::vector<TBox>& b) const override {
    ASSIGN_OR_RETURN(PerBox r, relax(node, b));
    return lines_of(r);
  }
  // crown.cc's step: through the lines of every box, or where some box's relaxation is a pair of
  // linear maps (a product of two variables), per box through its own relaxation.
  common::Status step(int node, const std::vector<TBox>& b, TBackward& w) const override {
    ASSIGN_OR_RETURN(PerBox r, relax(node, b));
    if (std::none_of(r.rx.begin(), r.rx.end(),
                     [](const Relaxation& x) { return x.kind == Relaxation::Kind::kLinear; })) {
      TLines l = lines_of(r);
      elementwise_step(l.lo_slope, l.lo_bias, l.up_slope, l.up_bias, l.input, w.lam[node],
                       w.om[node], w);
      return {};
    }
    // Coefficients shared by every box (batch 1: the identity a pass starts from) are expanded:
    // each box takes them through its own relaxation (box 0's for all was unsound).
    const int64_t boxes = b[node].lo.size(0);
    auto per_box = [&](const at::Tensor& t) {
      return to_mats(t.size(0) == boxes ? t : t.expand({boxes, t.size(1), t.size(2)}));
    };
    const std::vector<Mat> lams = per_box(w.lam[node]), oms = per_box(w.om[node]);
    const auto k = static_cast<Eigen::Index>(lams.size());
    const Eigen::Index rows = k ? lams[0].rows() : 0;
    Mat lb(k, rows), ub(k, rows);
    std::vector<std::vector<Mat>> lam_in(2, std::vector<Mat>(lams.size())), om_in = lam_in;
    for (Eigen::Index i = 0; i < k; ++i) {
      const Relaxation& x = r.rx[i];
      const Mat &lam = lams[i], &om = oms[i];
      Mat lp = lam.cwiseMax(0.0), ln = lam.cwiseMin(0.0), op = om.cwiseMax(0.0),
          on = om.cwiseMin(0.0);
      const bool has_lines =
          x.kind == Relaxation::Kind::kElementwise || x.kind == Relaxation::Kind::kLinear;
      const Vec lo_b = has_lines ? x.lo_bias : Vec(r.out_lo.row(i).transpose());
      const Vec up_b = has_lines ? x.up_bias : Vec(r.out_hi.row(i).transpose());
      lb.row(i) = (lp * lo_b + ln * up_b).transpose();
      ub.row(i) = (op * up_b + on * lo_b).transpose();
      if (x.kind == Relaxation::Kind::kElementwise) {
        lam_in[0][i] = lp * x.lo_slope.asDiagonal() + ln * x.up_slope.asDiagonal();
        om_in[0][i] = op * x.up_slope.asDiagonal() + on * x.lo_slope.asDiagonal();
      } else if (x.kind == Relaxation::Kind::kLinear) {
        for (int slot : {0, 1}) {
          const SpMat &lo = slot ? x.lo_map1() : x.lo_map(), &up = slot ? x.up_map1() : x.up_map();
          if (lo.rows() == 0) continue;
          lam_in[slot][i] = Mat(lp * lo) + Mat(ln * up);
          om_in[slot][i] = Mat(op * up) + Mat(on * lo);
        }
      }
    }
    w.lb.add_(to_tensor(lb, opts_));
    w.ub.add_(to_tensor(ub, opts_));
    for (int slot : {0, 1}) {
      if (slot >= static_cast<int>(inputs_.size()) || inputs_[slot] < 0) continue;
      const int64_t n = b[inputs_[slot]].lo.size(1);
      add_coef(w, inputs_[slot], stack_rows(lam_in[slot], rows, n, opts_),
               stack_rows(om_in[slot], rows, n, opts_));
    }
    return {};
  }

 private:
  // Each box's relaxation, with the node's output bounds (K x n).
  struct PerBox {
    std::vector<Relaxation> rx;
    Mat out_lo, out_hi;
  };
  Result<PerBox> relax(int node, const std::vector<TBox>& b) const {
    std::vector<const TBox*> in;
    for (int p : inputs_) in.push_back(p >= 0 ? &b[p] : nullptr);
    std::vector<Mat> lo, hi;
    const int64_t k = boxes(in, lo, hi);
    PerBox r{{}, to_mat(b[node].lo), to_mat(b[node].hi)};
    for (int64_t i = 0; i < k; ++i) {
      std::vector<Interval> row = rows(lo, hi, i);
      Interval out{r.out_lo.row(i).transpose(), r.out_hi.row(i).transpose()};
      r.rx.push_back(op_->relax(pointers(in, row), out));
      if (r.rx.back().kind == Relaxation::Kind::kAffine)
        return common::Error{"", "", "",
                             "an op relaxed to a bound-dependent affine map has no "
                             "rule in the torch engine"};
    }
    return r;
  }
  TLines lines_of(const PerBox& r) const {
    const auto k = static_cast<Eigen::Index>(r.rx.size());
    const Eigen::Index n = r.out_lo.cols();
    Mat ls = Mat::Zero(k, n), lb = r.out_lo, us = Mat::Zero(k, n), ub = r.out_hi;
    Mat lmin = ls, lmax = ls;
    bool any_lines = false;
    for (Eigen::Index i = 0; i < k; ++i) {
      const Relaxation& x = r.rx[i];
      if (x.kind != Relaxation::Kind::kElementwise) continue;  // constant: [lo, hi] of the output
      any_lines = true;
      ls.row(i) = x.lo_slope.transpose(), lb.row(i) = x.lo_bias.transpose();
      us.row(i) = x.up_slope.transpose(), ub.row(i) = x.up_bias.transpose();
      const bool range = x.curve == nullptr && x.lo_min.size() == n;
      lmin.row(i) = (range ? x.lo_min : x.lo_slope).transpose();
      lmax.row(i) = (range ? x.lo_max : x.lo_slope).transpose();
    }
    return TLines{to_tensor(ls, opts_),       to_tensor(lb, opts_),   to_tensor(us, opts_),
                  to_tensor(ub, opts_),       to_tensor(lmin, opts_), to_tensor(lmax, opts_),
                  any_lines ? inputs_[0] : -1};
  }
  static int64_t boxes(const std::vector<const TBox*>& in, std::vector<Mat>& lo,
                       std::vector<Mat>& hi) {
    int64_t k = 0;
    lo.resize(in.size()), hi.resize(in.size());
    for (size_t s = 0; s < in.size(); ++s) {
      if (in[s] == nullptr) continue;
      lo[s] = to_mat(in[s]->lo), hi[s] = to_mat(in[s]->hi);
      k = lo[s].rows();
    }
    return k;
  }
  static std::vector<Interval> rows(const std::vector<Mat>& lo, const std::vector<Mat>& hi,
                                    int64_t i) {
    std::vector<Interval> out(lo.size());
    for (size_t s = 0; s < lo.size(); ++s)
      if (lo[s].size() != 0) out[s] = {lo[s].row(i).transpose(), hi[s].row(i).transpose()};
    return out;
  }
  static std::vector<const Interval*> pointers(const std::vector<const TBox*>& in,
                                               const std::vector<Interval>& row) {
    std::vector<const Interval*> out;
    for (size_t s = 0; s < in.size(); ++s) out.push_back(in[s] ? &row[s] : nullptr);
    return out;
  }
  const BoundOp* op_;
  std::vector<int> inputs_;
  at::TensorOptions opts_;
};

}  // namespace

Result<std::unique_ptr<Kernel>> make_kernel(const Model& model, int node,
                                            const at::TensorOptions& opts) {
  const BoundOp* op = model.op(node);
  const DagNode& d = model.dag().node(node);
  if (const auto* affine = dynamic_cast<const AffineOp*>(op)) {
    std::vector<AffineKernel::Term> terms;
    for (const LinearTerm& t : affine->terms())
      terms.push_back({t.slot, term_map(model, node, t, affine->terms().size() == 1, opts)});
    return std::unique_ptr<Kernel>(
        new AffineKernel(d.inputs, std::move(terms), to_tensor(affine->bias(), opts)));
  }
  const common::Node& gn = model.graph().nodes[d.graph_node];
  if (op->linear_on_each_side_of_zero() && (gn.op_type == "Relu" || gn.op_type == "LeakyRelu")) {
    double a = gn.op_type == "Relu" ? 0.0 : gn.attr_float("alpha", 0.01f);
    return std::unique_ptr<Kernel>(new LeakyReluKernel(d.inputs[0], a));
  }
  if (std::unique_ptr<Kernel> k = elementwise_kernel(*op, d.inputs, opts)) return k;
  return std::unique_ptr<Kernel>(new PerBoxKernel(op, d.inputs, opts));
}

void nan_as_unbounded(TBox& b) {
  const double inf = std::numeric_limits<double>::infinity();
  b.lo = at::nan_to_num(b.lo, -inf, inf, -inf);
  b.hi = at::nan_to_num(b.hi, inf, inf, -inf);
}

void intersect(TBox& a, const at::Tensor& lo, const at::Tensor& hi) {
  at::Tensor l = at::maximum(a.lo, lo), h = at::minimum(a.hi, hi);
  a.lo = at::minimum(l, h);
  a.hi = at::maximum(l, h);
}

TBox box_of(const at::Tensor& c, const TBox& y) {
  const at::Tensor pos = c.clamp_min(0.0).t(), neg = c.clamp_max(0.0).t();
  return {at::matmul(y.lo, pos) + at::matmul(y.hi, neg),
          at::matmul(y.hi, pos) + at::matmul(y.lo, neg)};
}

}  // namespace propdag::torch_engine::internal

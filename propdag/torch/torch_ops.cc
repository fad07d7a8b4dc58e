#include "propdag/torch/torch_ops.h"

#include <ATen/Dispatch.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/conv_transpose2d.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/sparse_coo_tensor.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace propdag::torch_engine::internal {

void accumulate(at::Tensor& into, at::Tensor add) {
  if (!into.defined())
    into = std::move(add);
  else
    into = into + add;  // not in place: coefficient tensors may share storage
}

at::Tensor to_tensor(const Vec& v, const at::TensorOptions& opts) {
  return at::from_blob(const_cast<double*>(v.data()), {v.size()}, at::kDouble)
      .to(opts, false, true);
}

at::Tensor to_tensor(const Mat& m, const at::TensorOptions& opts) {
  // Column-major data of m is the row-major data of m^T.
  at::Tensor t = at::from_blob(const_cast<double*>(m.data()), {m.cols(), m.rows()}, at::kDouble);
  return t.t().to(opts, false, true).contiguous();
}

Mat to_mat(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).to(at::kDouble).contiguous();
  Mat m(c.size(0), c.size(1));
  // Row-major [K, n] data is the column-major data of the n x K transpose.
  m = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
      c.data_ptr<double>(), c.size(0), c.size(1));
  return m;
}

namespace {

using common::Result;

// ---- Linear maps ----

class DenseMap : public LinearMap {
 public:
  DenseMap(const Mat& w, const at::TensorOptions& opts)
      : w_(to_tensor(w, opts)), wt_(w_.t().contiguous()), abs_wt_(wt_.abs()) {}
  at::Tensor apply(const at::Tensor& x, bool abs) const override {
    return at::matmul(x, abs ? abs_wt_ : wt_);
  }
  at::Tensor adjoint(const at::Tensor& y) const override { return at::matmul(y, w_); }
  const char* kind() const override { return "dense"; }

 private:
  at::Tensor w_, wt_, abs_wt_;
};

// Each output element copies at most one input element times a scale (Reshape, Flatten,
// Transpose, Slice, Concat parts, elementwise Mul by a constant, BatchNorm, ...).
class GatherMap : public LinearMap {
 public:
  GatherMap(std::vector<int64_t> src, std::vector<double> scale, int64_t in,
            const at::TensorOptions& opts)
      : in_(in) {
    const auto out = static_cast<int64_t>(src.size());
    identity_ = out == in;
    ones_ = true;
    for (int64_t i = 0; i < out; ++i) {
      identity_ = identity_ && src[i] == i && scale[i] == 1.0;
      ones_ = ones_ && scale[i] == 1.0;
    }
    src_ = at::from_blob(src.data(), {out}, at::kLong).to(opts.device(), false, true).clone();
    scale_ = at::from_blob(scale.data(), {out}, at::kDouble).to(opts, false, true).clone();
    abs_scale_ = scale_.abs();
  }
  at::Tensor apply(const at::Tensor& x, bool abs) const override {
    if (identity_) return x;
    at::Tensor padded = at::cat({x, at::zeros({x.size(0), 1}, x.options())}, 1);
    at::Tensor y = padded.index_select(1, src_);
    return ones_ ? y : y * (abs ? abs_scale_ : scale_);
  }
  at::Tensor adjoint(const at::Tensor& y) const override {
    if (identity_) return y;
    at::Tensor out = at::zeros({y.size(0), in_ + 1}, y.options());
    out.index_add_(1, src_, ones_ ? y : y * scale_);
    return out.narrow(1, 0, in_);
  }
  const char* kind() const override { return identity_ ? "identity" : "gather"; }

 private:
  int64_t in_;
  bool identity_ = false, ones_ = false;
  at::Tensor src_, scale_, abs_scale_;
};

// Any other sparse matrix (AveragePool, Pad, ConvTranspose, ReduceSum, ...).
class SparseMap : public LinearMap {
 public:
  SparseMap(const SpMat& s, const at::TensorOptions& opts) {
    std::vector<int64_t> rows, cols;
    std::vector<double> vals;
    for (Eigen::Index r = 0; r < s.outerSize(); ++r)
      for (SpMat::InnerIterator it(s, r); it; ++it) {
        rows.push_back(r), cols.push_back(it.col()), vals.push_back(it.value());
      }
    const auto nnz = static_cast<int64_t>(vals.size());
    std::vector<int64_t> idx(rows);
    idx.insert(idx.end(), cols.begin(), cols.end());
    at::Tensor i = at::from_blob(idx.data(), {2, nnz}, at::kLong).clone();
    at::Tensor v = at::from_blob(vals.data(), {nnz}, at::kDouble).clone();
    at::Tensor w = at::sparse_coo_tensor(i, v, {s.rows(), s.cols()}).coalesce();
    w_ = w.to(opts);
    abs_w_ = at::sparse_coo_tensor(i, v.abs(), {s.rows(), s.cols()}).coalesce().to(opts);
    wt_ = w.t().coalesce().to(opts);
  }
  at::Tensor apply(const at::Tensor& x, bool abs) const override {
    return at::mm(abs ? abs_w_ : w_, x.t()).t();
  }
  at::Tensor adjoint(const at::Tensor& y) const override { return at::mm(wt_, y.t()).t(); }
  const char* kind() const override { return "sparse"; }

 private:
  at::Tensor w_, abs_w_, wt_;
};

// A Conv layer as a 2-D convolution (1-D ones with a height of 1); the adjoint is the
// transposed convolution. Asymmetric pads are applied by padding explicitly.
struct ConvGeometry {
  int64_t c = 1, h = 1, w = 1, oc = 1, oh = 1, ow = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0, ph_end = 0, pw_end = 0, group = 1;
};

// A ConvTranspose layer (symmetric pads): conv_transpose2d forward, conv2d as its adjoint.
class ConvTransposeMap : public LinearMap {
 public:
  ConvTransposeMap(at::Tensor weight, const ConvGeometry& g) : w_(std::move(weight)), g_(g) {
    abs_w_ = w_.abs();
    const int64_t kh = w_.size(2), kw = w_.size(3);
    oph_ = g.oh - ((g.h - 1) * g.sh - 2 * g.ph + g.dh * (kh - 1) + 1);
    opw_ = g.ow - ((g.w - 1) * g.sw - 2 * g.pw + g.dw * (kw - 1) + 1);
  }
  bool valid() const {
    return oph_ >= 0 && opw_ >= 0 && oph_ < std::max(g_.sh, g_.dh) &&
           opw_ < std::max(g_.sw, g_.dw) && g_.ph == g_.ph_end && g_.pw == g_.pw_end;
  }
  at::Tensor apply(const at::Tensor& x, bool abs) const override {
    at::Tensor in = x.reshape({x.size(0), g_.c, g_.h, g_.w});
    return at::conv_transpose2d(in, abs ? abs_w_ : w_, {}, {g_.sh, g_.sw}, {g_.ph, g_.pw},
                                {oph_, opw_}, g_.group, {g_.dh, g_.dw})
        .reshape({x.size(0), -1});
  }
  at::Tensor adjoint(const at::Tensor& y) const override {
    at::Tensor out = y.reshape({y.size(0), g_.oc, g_.oh, g_.ow});
    return at::conv2d(out, w_, {}, {g_.sh, g_.sw}, {g_.ph, g_.pw}, {g_.dh, g_.dw}, g_.group)
        .reshape({y.size(0), -1});
  }
  const char* kind() const override { return "conv_transpose"; }

 private:
  at::Tensor w_, abs_w_;
  ConvGeometry g_;
  int64_t oph_ = 0, opw_ = 0;
};

class ConvMap : public LinearMap {
 public:
  ConvMap(at::Tensor weight, const ConvGeometry& g) : w_(std::move(weight)), g_(g) {
    abs_w_ = w_.abs();
    symmetric_ = g.ph == g.ph_end && g.pw == g.pw_end;
  }
  at::Tensor apply(const at::Tensor& x, bool abs) const override {
    at::Tensor in = x.reshape({x.size(0), g_.c, g_.h, g_.w});
    std::vector<int64_t> pad{g_.ph, g_.pw};
    if (!symmetric_) {
      in = at::constant_pad_nd(in, {g_.pw, g_.pw_end, g_.ph, g_.ph_end}, 0);
      pad = {0, 0};
    }
    at::Tensor y =
        at::conv2d(in, abs ? abs_w_ : w_, {}, {g_.sh, g_.sw}, pad, {g_.dh, g_.dw}, g_.group);
    return y.reshape({x.size(0), -1});
  }
  at::Tensor adjoint(const at::Tensor& y) const override {
    at::Tensor out = y.reshape({y.size(0), g_.oc, g_.oh, g_.ow});
    const int64_t ph = symmetric_ ? g_.ph : 0, pw = symmetric_ ? g_.pw : 0;
    const int64_t th = symmetric_ ? g_.h : g_.h + g_.ph + g_.ph_end;
    const int64_t tw = symmetric_ ? g_.w : g_.w + g_.pw + g_.pw_end;
    const int64_t kh = w_.size(2), kw = w_.size(3);
    const int64_t oph = th - ((g_.oh - 1) * g_.sh - 2 * ph + g_.dh * (kh - 1) + 1);
    const int64_t opw = tw - ((g_.ow - 1) * g_.sw - 2 * pw + g_.dw * (kw - 1) + 1);
    at::Tensor x = at::conv_transpose2d(out, w_, {}, {g_.sh, g_.sw}, {ph, pw}, {oph, opw}, g_.group,
                                        {g_.dh, g_.dw});
    if (!symmetric_) x = x.narrow(2, g_.ph, g_.h).narrow(3, g_.pw, g_.w);
    return x.reshape({y.size(0), -1});
  }
  const char* kind() const override { return "conv"; }

 private:
  at::Tensor w_, abs_w_;
  ConvGeometry g_;
  bool symmetric_ = true;
};

std::pair<int64_t, int64_t> pair_of(const std::vector<int64_t>& v, bool one_d, int64_t fill) {
  if (v.empty()) return {fill, fill};
  return one_d ? std::pair{fill, v[0]} : std::pair{v[0], v[1]};
}

// The Conv / ConvTranspose of Dag node `node` as a convolution, when its weight is a constant
// and its batch is 1.
std::unique_ptr<LinearMap> conv_map(const Model& model, int node, const at::TensorOptions& opts) {
  const DagNode& d = model.dag().node(node);
  const common::Node& gn = model.graph().nodes[d.graph_node];
  const bool transposed = gn.op_type == "ConvTranspose";
  if ((gn.op_type != "Conv" && !transposed) || gn.inputs.size() < 2 || d.inputs.empty() ||
      d.inputs[0] < 0 || (transposed && !gn.attr_ints("output_shape").empty()))
    return nullptr;
  const common::Tensor* wt = model.graph().constant(gn.inputs[1]);
  const common::Dims& x = model.shape(d.inputs[0]);
  const common::Dims& y = model.shape(node);
  if (wt == nullptr || (x.size() != 3 && x.size() != 4) || x[0] != 1 || y.size() != x.size() ||
      wt->dims.size() != x.size())
    return nullptr;
  const bool one_d = x.size() == 3;
  const std::string autopad = gn.attr_string("auto_pad", "NOTSET");
  if (autopad != "NOTSET" && autopad != "VALID") return nullptr;  // the sparse form covers them
  ConvGeometry g;
  g.c = x[1], g.h = one_d ? 1 : x[2], g.w = x.back();
  g.oc = y[1], g.oh = one_d ? 1 : y[2], g.ow = y.back();
  std::tie(g.sh, g.sw) = pair_of(gn.attr_ints("strides"), one_d, 1);
  std::tie(g.dh, g.dw) = pair_of(gn.attr_ints("dilations"), one_d, 1);
  std::vector<int64_t> pads = gn.attr_ints("pads");
  if (pads.size() == 2 && one_d) g.pw = pads[0], g.pw_end = pads[1];
  if (pads.size() == 4 && !one_d)
    g.ph = pads[0], g.pw = pads[1], g.ph_end = pads[2], g.pw_end = pads[3];
  g.group = gn.attr_int("group", 1);
  std::vector<double> w(wt->numel());
  for (int64_t i = 0; i < wt->numel(); ++i) w[i] = wt->double_at(i);
  std::vector<int64_t> wd(wt->dims.begin(), wt->dims.end());
  if (one_d) wd.insert(wd.begin() + 2, 1);
  at::Tensor weight = at::from_blob(w.data(), wd, at::kDouble).to(opts, false, true).clone();
  if (transposed) {
    auto t = std::make_unique<ConvTransposeMap>(std::move(weight), g);
    return t->valid() ? std::move(t) : nullptr;
  }
  return std::make_unique<ConvMap>(std::move(weight), g);
}

// Whether `map` computes the same as the sparse matrix `s` (and its transpose) on a random
// probe: the geometry read from the node's attributes matches the one the op rule used.
bool same_map(const LinearMap& map, const SpMat& s, const at::TensorOptions& opts) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  Vec x(s.cols()), y(s.rows());
  for (auto& v : x) v = u(rng);
  for (auto& v : y) v = u(rng);
  Vec fx = s * x, fy = s.transpose() * y;
  Mat mx = to_mat(map.apply(to_tensor(x, opts).unsqueeze(0), false));
  Mat my = to_mat(map.adjoint(to_tensor(y, opts).unsqueeze(0)));
  if (mx.cols() != fx.size() || my.cols() != fy.size()) return false;
  const double eps = opts.dtype() == at::kFloat ? 1e-4 : 1e-9;
  const double tol = eps * (1 + fx.cwiseAbs().maxCoeff() + fy.cwiseAbs().maxCoeff());
  return (mx.row(0).transpose() - fx).cwiseAbs().maxCoeff() <= tol &&
         (my.row(0).transpose() - fy).cwiseAbs().maxCoeff() <= tol;
}

std::unique_ptr<LinearMap> gather_map(const SpMat& s, const at::TensorOptions& opts) {
  std::vector<int64_t> src(s.rows(), s.cols());
  std::vector<double> scale(s.rows(), 0.0);
  for (Eigen::Index r = 0; r < s.outerSize(); ++r) {
    int count = 0;
    for (SpMat::InnerIterator it(s, r); it; ++it) {
      if (++count > 1) return nullptr;
      src[r] = it.col(), scale[r] = it.value();
    }
  }
  return std::make_unique<GatherMap>(std::move(src), std::move(scale), s.cols(), opts);
}

// ---- Kernels ----

// Adds the bounds of an elementwise relaxation lo_slope x + lo_bias <= y <= up_slope x + up_bias
// ([K, n] each) and, when `in` >= 0, the coefficients it passes to node `in` (crown.cc's step).
// One side of the step on the CPU, fused into one pass over the coefficients (the tensor form
// below makes about ten passes over [K, rows, n] temporaries, which made it several times
// slower per box than the Eigen engine): out = coef * (coef >= 0 ? s_pos : s_neg) and
// bound += sum_j coef * (coef >= 0 ? b_pos : b_neg), per box and row.
template <class T>
void fused_side(const at::Tensor& coef, const at::Tensor& s_pos, const at::Tensor& s_neg,
                const at::Tensor& b_pos, const at::Tensor& b_neg, at::Tensor& out,
                at::Tensor& bound, bool want_out) {
  const int64_t k = s_pos.size(0), rows = coef.size(1), n = coef.size(2);
  const bool shared = coef.size(0) == 1;
  const T* c = coef.data_ptr<T>();
  const T *sp = s_pos.data_ptr<T>(), *sn = s_neg.data_ptr<T>();
  const T *bp = b_pos.data_ptr<T>(), *bn = b_neg.data_ptr<T>();
  T* o = want_out ? out.data_ptr<T>() : nullptr;
  T* acc = bound.data_ptr<T>();
  for (int64_t b = 0; b < k; ++b) {
    const T* cb = c + (shared ? 0 : b * rows * n);
    for (int64_t r = 0; r < rows; ++r) {
      const T* cr = cb + r * n;
      T sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        const T v = cr[j];
        const bool pos = v >= 0;
        sum += v * (pos ? bp[b * n + j] : bn[b * n + j]);
        if (o != nullptr) o[(b * rows + r) * n + j] = v * (pos ? sp[b * n + j] : sn[b * n + j]);
      }
      acc[b * rows + r] += sum;
    }
  }
}

void elementwise_step(const at::Tensor& lo_slope, const at::Tensor& lo_bias,
                      const at::Tensor& up_slope, const at::Tensor& up_bias, int in,
                      const at::Tensor& lam, const at::Tensor& om, TBackward& w) {
  // crown.cc splits each coefficient into its positive and negative parts and takes the lower
  // line for one and the upper for the other; one of the two is exactly 0, so selecting the
  // line by the sign gives the same products.
  if (lam.device().is_cpu()) {
    const int64_t k = lo_slope.size(0);
    at::Tensor l = lam.contiguous(), o = om.contiguous();
    at::Tensor ls = lo_slope.contiguous(), us = up_slope.contiguous();
    at::Tensor lb = lo_bias.contiguous(), ub = up_bias.contiguous();
    at::Tensor new_lam, new_om;
    if (in >= 0) {
      new_lam = at::empty({k, l.size(1), l.size(2)}, l.options());
      new_om = at::empty({k, o.size(1), o.size(2)}, o.options());
    }
    at::Tensor wlb = w.lb.contiguous(), wub = w.ub.contiguous();
    AT_DISPATCH_FLOATING_TYPES(l.scalar_type(), "elementwise_step", [&] {
      fused_side<scalar_t>(l, ls, us, lb, ub, new_lam, wlb, in >= 0);
      fused_side<scalar_t>(o, us, ls, ub, lb, new_om, wub, in >= 0);
    });
    w.lb = wlb, w.ub = wub;
    if (in < 0) return;
    accumulate(w.lam[in], std::move(new_lam));
    accumulate(w.om[in], std::move(new_om));
    return;
  }
  at::Tensor lam_pos = lam >= 0, om_pos = om >= 0;
  at::Tensor ls = lo_slope.unsqueeze(1), us = up_slope.unsqueeze(1);
  at::Tensor lb = lo_bias.unsqueeze(1), ub = up_bias.unsqueeze(1);
  w.lb.add_((lam * at::where(lam_pos, lb, ub)).sum(-1));
  w.ub.add_((om * at::where(om_pos, ub, lb)).sum(-1));
  if (in < 0) return;
  accumulate(w.lam[in], lam * at::where(lam_pos, ls, us));
  accumulate(w.om[in], om * at::where(om_pos, us, ls));
}

// out = sum_k W_k in[slot_k] + bias.
class AffineKernel : public Kernel {
 public:
  struct Term {
    int slot;
    std::unique_ptr<LinearMap> map;
  };
  AffineKernel(std::vector<int> inputs, std::vector<Term> terms, at::Tensor bias)
      : inputs_(std::move(inputs)), terms_(std::move(terms)), bias_(std::move(bias)) {}
  void kinds(std::vector<std::string>& kinds) const override {
    for (const Term& t : terms_) kinds.emplace_back(t.map->kind());
  }
  Result<TBox> interval(const std::vector<const TBox*>& in) const override {
    at::Tensor lo, hi;
    for (const Term& t : terms_) {
      const TBox& x = *in[t.slot];
      at::Tensor c = (x.lo + x.hi) * 0.5, r = (x.hi - x.lo) * 0.5;
      at::Tensor yc = t.map->apply(c, false), yr = t.map->apply(r, true);
      accumulate(lo, yc - yr);
      accumulate(hi, yc + yr);
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
    for (const Term& t : terms_) {
      at::Tensor l = t.map->adjoint(lam.reshape({k * rows, lam.size(2)}));
      at::Tensor o = t.map->adjoint(om.reshape({k * rows, om.size(2)}));
      accumulate(w.lam[inputs_[t.slot]], l.reshape({k, rows, -1}));
      accumulate(w.om[inputs_[t.slot]], o.reshape({k, rows, -1}));
    }
    w.lb.add_(at::matmul(lam, bias_));
    w.ub.add_(at::matmul(om, bias_));
    return {};
  }

 private:
  std::vector<int> inputs_;
  std::vector<Term> terms_;
  at::Tensor bias_;
};

// ReLU / LeakyReLU max(x, a x), with relax.cc's leaky_relu_lines elementwise on tensors.
class LeakyReluKernel : public Kernel {
 public:
  LeakyReluKernel(int in, double a) : in_(in), a_(a) {}
  void kinds(std::vector<std::string>& kinds) const override { kinds.emplace_back("relu"); }
  Result<TBox> interval(const std::vector<const TBox*>& in) const override {
    return TBox{f(in[0]->lo), f(in[0]->hi)};
  }
  common::Status step(int node, const std::vector<TBox>& b, TBackward& w) const override {
    const at::Tensor &l = b[in_].lo, &u = b[in_].hi;
    at::Tensor pos = l >= 0, neg = u <= 0;
    at::Tensor one = at::ones_like(l), a = one * a_;
    at::Tensor k = (u - l * a_) / (u - l);
    at::Tensor lower = at::where(u > -l, one, a);
    at::Tensor lo_slope = at::where(pos, one, at::where(neg, a, lower));
    at::Tensor up_slope = at::where(pos, one, at::where(neg, a, k));
    at::Tensor up_bias = at::where(pos.logical_or(neg), at::zeros_like(l), u - k * u);
    elementwise_step(lo_slope, at::zeros_like(l), up_slope, up_bias, in_, w.lam[node], w.om[node],
                     w);
    return {};
  }

 private:
  at::Tensor f(const at::Tensor& x) const { return at::where(x >= 0, x, x * a_); }
  int in_;
  double a_;
};

// Any other op: its Eigen rule, called once per box on the CPU.
class PerBoxKernel : public Kernel {
 public:
  PerBoxKernel(const BoundOp* op, std::vector<int> inputs, at::TensorOptions opts)
      : op_(op), inputs_(std::move(inputs)), opts_(opts) {}
  bool per_box() const override { return true; }
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
  common::Status step(int node, const std::vector<TBox>& b, TBackward& w) const override {
    std::vector<const TBox*> in;
    for (int p : inputs_) in.push_back(p >= 0 ? &b[p] : nullptr);
    std::vector<Mat> lo, hi;
    const int64_t k = boxes(in, lo, hi);
    Mat out_lo = to_mat(b[node].lo), out_hi = to_mat(b[node].hi);
    const Eigen::Index n = out_lo.cols();
    Mat ls = Mat::Zero(k, n), lb = out_lo, us = Mat::Zero(k, n), ub = out_hi;
    bool any_lines = false;
    for (int64_t i = 0; i < k; ++i) {
      std::vector<Interval> row = rows(lo, hi, i);
      Interval out{out_lo.row(i).transpose(), out_hi.row(i).transpose()};
      Relaxation r = op_->relax(pointers(in, row), out);
      if (r.kind == Relaxation::Kind::kAffine)
        return common::Error{"", "", "",
                             "an op relaxed to a bound-dependent affine map has no "
                             "rule in the torch engine"};
      if (r.kind != Relaxation::Kind::kElementwise) continue;  // constant: [lo, hi] of the output
      any_lines = true;
      ls.row(i) = r.lo_slope.transpose(), lb.row(i) = r.lo_bias.transpose();
      us.row(i) = r.up_slope.transpose(), ub.row(i) = r.up_bias.transpose();
    }
    elementwise_step(to_tensor(ls, opts_), to_tensor(lb, opts_), to_tensor(us, opts_),
                     to_tensor(ub, opts_), any_lines ? inputs_[0] : -1, w.lam[node], w.om[node], w);
    return {};
  }

 private:
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

std::unique_ptr<LinearMap> term_map(const Model& model, int node, const LinearTerm& t, bool single,
                                    const at::TensorOptions& opts) {
  if (t.dense) return std::make_unique<DenseMap>(t.w, opts);
  if (single) {
    std::unique_ptr<LinearMap> conv = conv_map(model, node, opts);
    if (conv && same_map(*conv, t.s, opts)) return conv;
  }
  if (std::unique_ptr<LinearMap> g = gather_map(t.s, opts)) return g;
  return std::make_unique<SparseMap>(t.s, opts);
}

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
  return std::unique_ptr<Kernel>(new PerBoxKernel(op, d.inputs, opts));
}

}  // namespace propdag::torch_engine::internal

#include <ATen/Dispatch.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/clamp_max.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/conv_transpose2d.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/nonzero.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/sparse_coo_tensor.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "propdag/torch/torch_ops.h"

namespace propdag::torch_engine::internal {

namespace {

// ---- Linear maps ----

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
  }
  at::Tensor apply(const at::Tensor& x) const override {
    if (identity_) return x;
    at::Tensor padded = at::cat({x, at::zeros({x.size(0), 1}, x.options())}, 1);
    at::Tensor y = padded.index_select(1, src_);
    return ones_ ? y : y * scale_;
  }
  at::Tensor adjoint_window(const at::Tensor& y, const Window& in, Window* out) const override {
    if (out != nullptr) *out = identity_ ? in : Window{};
    return adjoint(y);
  }
  at::Tensor adjoint(const at::Tensor& y) const override {
    if (identity_) return y;
    at::Tensor out = at::zeros({y.size(0), in_ + 1}, y.options());
    out.index_add_(1, src_, ones_ ? y : y * scale_);
    return out.narrow(1, 0, in_);
  }
  const char* kind() const override { return identity_ ? "identity" : "gather"; }
  TBox ends(const at::Tensor& lo, const at::Tensor& hi) const override {
    if (identity_) return {lo, hi};
    at::Tensor l = at::cat({lo, at::zeros({lo.size(0), 1}, lo.options())}, 1).index_select(1, src_);
    at::Tensor h = at::cat({hi, at::zeros({hi.size(0), 1}, hi.options())}, 1).index_select(1, src_);
    if (ones_) return {l, h};
    const at::Tensor pos = scale_ >= 0;
    return {at::where(pos, l * scale_, h * scale_), at::where(pos, h * scale_, l * scale_)};
  }

 private:
  int64_t in_;
  bool identity_ = false, ones_ = false;
  at::Tensor src_, scale_;
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
    wt_ = w.t().coalesce().to(opts);
    // The positive and the negative entries, each matrix without the other's.
    const auto part = [&](const at::Tensor& keep) {
      const at::Tensor idx = keep.nonzero().squeeze(1);
      return at::sparse_coo_tensor(i.index_select(1, idx), v.index_select(0, idx),
                                   {s.rows(), s.cols()})
          .coalesce()
          .to(opts);
    };
    pos_ = part(v > 0);
    neg_ = part(v < 0);
  }
  at::Tensor apply(const at::Tensor& x) const override { return at::mm(w_, x.t()).t(); }
  TBox ends(const at::Tensor& lo, const at::Tensor& hi) const override {
    const at::Tensor l = lo.t(), h = hi.t();
    return {(at::mm(pos_, l) + at::mm(neg_, h)).t(), (at::mm(pos_, h) + at::mm(neg_, l)).t()};
  }
  at::Tensor adjoint(const at::Tensor& y) const override { return at::mm(wt_, y.t()).t(); }
  const char* kind() const override { return "sparse"; }

 private:
  at::Tensor w_, wt_, pos_, neg_;
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
    pos_ = w_.clamp_min(0.0), neg_ = w_.clamp_max(0.0);
    const int64_t kh = w_.size(2), kw = w_.size(3);
    oph_ = g.oh - ((g.h - 1) * g.sh - 2 * g.ph + g.dh * (kh - 1) + 1);
    opw_ = g.ow - ((g.w - 1) * g.sw - 2 * g.pw + g.dw * (kw - 1) + 1);
  }
  bool valid() const {
    return oph_ >= 0 && opw_ >= 0 && oph_ < std::max(g_.sh, g_.dh) &&
           opw_ < std::max(g_.sw, g_.dw) && g_.ph == g_.ph_end && g_.pw == g_.pw_end;
  }
  at::Tensor apply(const at::Tensor& x) const override { return run(x, w_); }
  TBox ends(const at::Tensor& lo, const at::Tensor& hi) const override {
    return {run(lo, pos_) + run(hi, neg_), run(hi, pos_) + run(lo, neg_)};
  }
  at::Tensor adjoint(const at::Tensor& y) const override {
    at::Tensor out = y.reshape({y.size(0), g_.oc, g_.oh, g_.ow});
    return at::conv2d(out, w_, {}, {g_.sh, g_.sw}, {g_.ph, g_.pw}, {g_.dh, g_.dw}, g_.group)
        .reshape({y.size(0), -1});
  }
  const char* kind() const override { return "conv_transpose"; }

 private:
  at::Tensor run(const at::Tensor& x, const at::Tensor& w) const {
    at::Tensor in = x.reshape({x.size(0), g_.c, g_.h, g_.w});
    return at::conv_transpose2d(in, w, {}, {g_.sh, g_.sw}, {g_.ph, g_.pw}, {oph_, opw_}, g_.group,
                                {g_.dh, g_.dw})
        .reshape({x.size(0), -1});
  }

  at::Tensor w_, pos_, neg_;
  ConvGeometry g_;
  int64_t oph_ = 0, opw_ = 0;
};

class ConvMap : public LinearMap {
 public:
  ConvMap(at::Tensor weight, const ConvGeometry& g) : w_(std::move(weight)), g_(g) {
    pos_ = w_.clamp_min(0.0), neg_ = w_.clamp_max(0.0);
    symmetric_ = g.ph == g.ph_end && g.pw == g.pw_end;
  }
  at::Tensor apply(const at::Tensor& x) const override { return run(x, w_); }
  TBox ends(const at::Tensor& lo, const at::Tensor& hi) const override {
    return {run(lo, pos_) + run(hi, neg_), run(hi, pos_) + run(lo, neg_)};
  }
  at::Tensor adjoint(const at::Tensor& y) const override { return adjoint_window(y, {}, nullptr); }
  at::Tensor adjoint_window(const at::Tensor& y, const Window& in, Window* win) const override {
    at::Tensor out = y.reshape({y.size(0), g_.oc, g_.oh, g_.ow});
    Window place;
    const at::Tensor part = cropped_adjoint(out, in, place);
    if (win != nullptr) *win = place;
    if (part.defined()) return part;
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
  // The adjoint where the coefficients' nonzero positions fill at most half of the output's
  // height x width (rows of a backward pass from a few neighbouring elements): the transposed
  // convolution of that window alone, placed into zeros (its rows and columns on the padding
  // dropped). The terms left out are products with 0. The window is `in` when known on the
  // output's maps, else found by one search of the coefficients. Undefined where the window is
  // larger; `place` gets the window of the result (the whole input then).
  at::Tensor cropped_adjoint(const at::Tensor& out, const Window& in, Window& place) const {
    int64_t r0 = 0, r1 = g_.oh, c0 = 0, c1 = g_.ow;
    if (in.on(g_.oc, g_.oh, g_.ow)) {
      r0 = in.r0, r1 = in.r1, c0 = in.c0, c1 = in.c1;
      if (r0 >= r1 || c0 >= c1) r1 = r0;
    } else {
      const at::Tensor at_pos = out.reshape({-1, g_.oh, g_.ow}).any(0).to(at::kCPU);  // [oh, ow]
      const at::Tensor in_row = at_pos.any(1), in_col = at_pos.any(0);
      const bool* r = in_row.data_ptr<bool>();
      const bool* c = in_col.data_ptr<bool>();
      while (r0 < r1 && !r[r0]) ++r0;
      while (r1 > r0 && !r[r1 - 1]) --r1;
      while (c0 < c1 && !c[c0]) ++c0;
      while (c1 > c0 && !c[c1 - 1]) --c1;
    }
    const int64_t m = out.size(0);
    place = {g_.c, g_.h, g_.w, 0, g_.h, 0, g_.w};
    if (r0 == r1) {
      place.r1 = 0;
      return at::zeros({m, g_.c * g_.h * g_.w}, out.options());
    }
    if (2 * (r1 - r0) * (c1 - c0) > g_.oh * g_.ow) return {};
    const at::Tensor part =
        at::conv_transpose2d(out.narrow(2, r0, r1 - r0).narrow(3, c0, c1 - c0), w_, {},
                             {g_.sh, g_.sw}, {0, 0}, {0, 0}, g_.group, {g_.dh, g_.dw});
    // The part covers padded rows [r0 sh, r0 sh + part rows), input rows from r0 sh - ph on.
    const int64_t y0 = r0 * g_.sh - g_.ph, x0 = c0 * g_.sw - g_.pw;
    const int64_t top = std::max<int64_t>(0, -y0), left = std::max<int64_t>(0, -x0);
    const int64_t rows = std::min(part.size(2), g_.h - y0) - top;
    const int64_t cols = std::min(part.size(3), g_.w - x0) - left;
    at::Tensor x = at::zeros({m, g_.c, g_.h, g_.w}, out.options());
    place.r0 = y0 + top, place.r1 = place.r0 + std::max<int64_t>(rows, 0);
    place.c0 = x0 + left, place.c1 = place.c0 + std::max<int64_t>(cols, 0);
    if (rows > 0 && cols > 0)
      x.narrow(2, y0 + top, rows)
          .narrow(3, x0 + left, cols)
          .copy_(part.narrow(2, top, rows).narrow(3, left, cols));
    return x.reshape({m, -1});
  }

  at::Tensor run(const at::Tensor& x, const at::Tensor& w) const {
    at::Tensor in = x.reshape({x.size(0), g_.c, g_.h, g_.w});
    std::vector<int64_t> pad{g_.ph, g_.pw};
    if (!symmetric_) {
      in = at::constant_pad_nd(in, {g_.pw, g_.pw_end, g_.ph, g_.ph_end}, 0);
      pad = {0, 0};
    }
    at::Tensor y = at::conv2d(in, w, {}, {g_.sh, g_.sw}, pad, {g_.dh, g_.dw}, g_.group);
    return y.reshape({x.size(0), -1});
  }

  at::Tensor w_, pos_, neg_;
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
  Mat mx = to_mat(map.apply(to_tensor(x, opts).unsqueeze(0)));
  Mat my = to_mat(map.adjoint(to_tensor(y, opts).unsqueeze(0)));
  if (mx.cols() != fx.size() || my.cols() != fy.size()) return false;
  const double eps = opts.dtype() == at::kFloat ? 1e-4 : 1e-9;
  const double tol = eps * (1 + fx.cwiseAbs().maxCoeff() + fy.cwiseAbs().maxCoeff());
  return (mx.row(0).transpose() - fx).cwiseAbs().maxCoeff() <= tol &&
         (my.row(0).transpose() - fy).cwiseAbs().maxCoeff() <= tol;
}

// The same check for a lazy term without building its matrix: `map` against the term's rows on
// a sample of them (every row of small maps; the first and last output rows and random ones),
// and its adjoint against `map` by <map x, y> = <x, map^T y>.
bool same_rows(const LinearMap& map, const LinearTerm& t, const at::TensorOptions& opts) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  Vec x(t.cols), y(t.rows);
  for (auto& v : x) v = u(rng);
  for (auto& v : y) v = u(rng);
  Mat mx = to_mat(map.apply(to_tensor(x, opts).unsqueeze(0)));
  Mat my = to_mat(map.adjoint(to_tensor(y, opts).unsqueeze(0)));
  if (mx.cols() != t.rows || my.cols() != t.cols) return false;
  const double eps = opts.dtype() == at::kFloat ? 1e-4 : 1e-9;
  const int64_t kSample = 4096;
  std::vector<int64_t> rows;
  if (t.rows <= 2 * kSample) {
    for (int64_t r = 0; r < t.rows; ++r) rows.push_back(r);
  } else {
    std::uniform_int_distribution<int64_t> pick(0, t.rows - 1);
    for (int64_t r = 0; r < kSample / 2; ++r) rows.push_back(r), rows.push_back(t.rows - 1 - r);
    for (int64_t i = 0; i < kSample; ++i) rows.push_back(pick(rng));
  }
  LinearTerm::Entries entries;
  for (int64_t r : rows) {
    entries.clear();
    t.row_entries(r, entries);
    double sum = 0, scale = 1;
    for (const auto& [col, value] : entries) sum += value * x[col], scale += std::abs(value);
    if (std::abs(sum - mx(0, r)) > eps * scale) return false;
  }
  const double a = mx.row(0).dot(y), b = my.row(0).dot(x);
  return std::abs(a - b) <= eps * (1 + mx.cwiseAbs().sum() + my.cwiseAbs().sum());
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

// A gather term's rows as index_select's indices (cols: an empty row, read from the zero padding)
// and scales.
std::unique_ptr<LinearMap> gather_map(const Gather& g, const at::TensorOptions& opts) {
  std::vector<int64_t> src(g.rows, g.cols);
  std::vector<double> scale(g.rows, 0.0);
  g.for_each([&](int64_t i, int64_t j, double v) { src[i] = j, scale[i] = v; });
  return std::make_unique<GatherMap>(std::move(src), std::move(scale), g.cols, opts);
}

}  // namespace

std::unique_ptr<LinearMap> term_map(const Model& model, int node, const LinearTerm& t, bool single,
                                    const at::TensorOptions& opts) {
  if (t.dense) return dense_map(t, opts);
  if (t.gather) return gather_map(*t.gather, opts);
  if (single) {
    std::unique_ptr<LinearMap> conv = conv_map(model, node, opts);
    if (conv && (t.row_entries ? same_rows(*conv, t, opts) : same_map(*conv, t.sparse(), opts)))
      return conv;
  }
  if (std::unique_ptr<LinearMap> g = gather_map(t.sparse(), opts)) return g;
  return std::make_unique<SparseMap>(t.sparse(), opts);
}

}  // namespace propdag::torch_engine::internal

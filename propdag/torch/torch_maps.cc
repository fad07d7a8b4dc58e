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
    in_place_ = out == in;
    ones_ = true;
    for (int64_t i = 0; i < out; ++i) {
      in_place_ = in_place_ && src[i] == i;
      ones_ = ones_ && scale[i] == 1.0;
    }
    identity_ = in_place_ && ones_;
    src_ = at::from_blob(src.data(), {out}, at::kLong).to(opts.device(), false, true).clone();
    scale_ = at::from_blob(scale.data(), {out}, at::kDouble).to(opts, false, true).clone();
  }
  at::Tensor apply(const at::Tensor& x) const override {
    if (identity_) return x;
    at::Tensor padded = at::cat({x, at::zeros({x.size(0), 1}, x.options())}, 1);
    at::Tensor y = padded.index_select(1, src_);
    return ones_ ? y : y * scale_;
  }
  // Element i from element i (an identity, or a scale per element as BatchNorm's): the window
  // stays, and the adjoint is the product by the scales.
  at::Tensor adjoint_window(const at::Tensor& y, const Window& in, Window* out) const override {
    if (out != nullptr) *out = in_place_ ? in : Window{};
    return adjoint(y);
  }
  at::Tensor adjoint(const at::Tensor& y) const override {
    if (identity_) return y;
    if (in_place_) return y * scale_;
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
  bool in_place_ = false, identity_ = false, ones_ = false;
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

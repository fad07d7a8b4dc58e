// The torch engine's dense maps (Gemm, MatMul by a constant). A weight is copied to the device
// once, with W+ and W- for its interval images; except on the CPU a large one, which the engine
// reads from the model's own storage (float data stays float), converting a block of it at a
// time inside each product: on tllverifybench N=M=64, 257 MiB of float weights, `bounds --engine
// torch` peaked at 2.5 GB with three float64 copies of each, 0.6 GB so.
#include <ATen/TensorOperators.h>
#include <ATen/ops/clamp_max.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/matmul.h>

#include <algorithm>

#include "propdag/torch/torch_ops.h"

namespace propdag::torch_engine::internal {
namespace {

// Weights of this many entries or more are read from the model's storage on the CPU.
constexpr int64_t kStoredFrom = int64_t{1} << 22;
// Entries of W per block of a product over a large weight.
constexpr int64_t kBlock = int64_t{1} << 20;

// W^T [in, out] as a view of the term's column-major storage (float or double): no copy.
at::Tensor stored_transpose(const LinearTerm& t) {
  if (t.wf.size() != 0)
    return at::from_blob(const_cast<float*>(t.wf.data()), {t.wf.cols(), t.wf.rows()}, at::kFloat);
  return at::from_blob(const_cast<double*>(t.w.data()), {t.w.cols(), t.w.rows()}, at::kDouble);
}

// W [out, in] on `opts` from W^T [in, out], in one copy.
at::Tensor copied(const at::Tensor& wt, const at::TensorOptions& opts) {
  return at::empty({wt.size(1), wt.size(0)}, opts).copy_(wt.t());
}

// Splits [0, n) into blocks of `per` (at least 1) and calls f(start, length) for each.
template <class F>
void blocks(int64_t n, int64_t per, F f) {
  per = std::max<int64_t>(1, per);
  for (int64_t j = 0; j < n; j += per) f(j, std::min(per, n - j));
}

// The interval image of [lo, hi] under a block of columns of W^T ([in, n]): each end from the
// products of the entries with the ends their signs select.
TBox block_ends(const at::Tensor& wt, const at::Tensor& lo, const at::Tensor& hi) {
  const at::Tensor p = wt.clamp_min(0.0), q = wt.clamp_max(0.0);
  return {at::matmul(lo, p) + at::matmul(hi, q), at::matmul(hi, p) + at::matmul(lo, q)};
}

// W copied once to the device in the engine's dtype, with W+ and W- (transposed) for its ends.
class DenseMap : public LinearMap {
 public:
  // Not clamped in place: the transpose of a weight with one row or column is w_'s own storage.
  DenseMap(const LinearTerm& t, const at::TensorOptions& opts)
      : w_(copied(stored_transpose(t), opts)),
        pos_t_(w_.t().clamp_min(0.0).contiguous()),
        neg_t_(w_.t().clamp_max(0.0).contiguous()) {}
  at::Tensor apply(const at::Tensor& x) const override { return at::matmul(x, w_.t()); }
  TBox ends(const at::Tensor& lo, const at::Tensor& hi) const override {
    return {at::matmul(lo, pos_t_) + at::matmul(hi, neg_t_),
            at::matmul(hi, pos_t_) + at::matmul(lo, neg_t_)};
  }
  at::Tensor adjoint(const at::Tensor& y) const override { return at::matmul(y, w_); }
  at::Tensor adjoint_rows(const at::Tensor& rows, int64_t, const at::TensorOptions&, const Window&,
                          Window* win) const override {
    if (win != nullptr) *win = Window{};
    return w_.index_select(0, rows);
  }
  const char* kind() const override { return "dense"; }

 private:
  at::Tensor w_, pos_t_, neg_t_;
};

// A large weight read on the CPU from the model's storage (W^T [in, out], float or double), a
// block of it converted to the engine's dtype inside each product. Each output of a product is
// one full-length dot product, as with a single matmul.
class StoredDenseMap : public LinearMap {
 public:
  StoredDenseMap(const LinearTerm& t, const at::TensorOptions& opts)
      : wt_(stored_transpose(t)), dtype_(opts.dtype().toScalarType()) {}
  at::Tensor apply(const at::Tensor& x) const override {
    at::Tensor out = at::empty({x.size(0), wt_.size(1)}, x.options());
    blocks(wt_.size(1), kBlock / wt_.size(0), [&](int64_t j, int64_t n) {
      out.narrow(1, j, n).copy_(at::matmul(x, wt_.narrow(1, j, n).to(dtype_)));
    });
    return out;
  }
  TBox ends(const at::Tensor& lo, const at::Tensor& hi) const override {
    at::Tensor l = at::empty({lo.size(0), wt_.size(1)}, lo.options()), h = at::empty_like(l);
    blocks(wt_.size(1), kBlock / wt_.size(0), [&](int64_t j, int64_t n) {
      TBox e = block_ends(wt_.narrow(1, j, n).to(dtype_), lo, hi);
      l.narrow(1, j, n).copy_(e.lo);
      h.narrow(1, j, n).copy_(e.hi);
    });
    return {l, h};
  }
  at::Tensor adjoint(const at::Tensor& y) const override {  // y W: blocks of W's columns
    at::Tensor out = at::empty({y.size(0), wt_.size(0)}, y.options());
    blocks(wt_.size(0), kBlock / wt_.size(1), [&](int64_t i, int64_t n) {
      out.narrow(1, i, n).copy_(at::matmul(y, wt_.narrow(0, i, n).to(dtype_).t()));
    });
    return out;
  }
  at::Tensor adjoint_rows(const at::Tensor& rows, int64_t, const at::TensorOptions&, const Window&,
                          Window* win) const override {
    if (win != nullptr) *win = Window{};
    return wt_.index_select(1, rows).to(dtype_).t().contiguous();
  }
  const char* kind() const override { return "dense"; }

 private:
  at::Tensor wt_;  // a view of the model's storage
  at::ScalarType dtype_;
};

}  // namespace

std::unique_ptr<LinearMap> dense_map(const LinearTerm& t, const at::TensorOptions& opts) {
  if (cpu_paths(opts.device()) && t.stored() >= kStoredFrom)
    return std::make_unique<StoredDenseMap>(t, opts);
  return std::make_unique<DenseMap>(t, opts);
}

}  // namespace propdag::torch_engine::internal

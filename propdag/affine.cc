#include <algorithm>
#include <cmath>

#include "propdag/op.h"

namespace propdag {
namespace {

// A float weight is widened to double about 2^22 entries (32 MiB) at a time: this many rows or
// columns of `len` entries each.
Eigen::Index block(Eigen::Index len) {
  return std::max<Eigen::Index>(1, (Eigen::Index{1} << 22) / std::max<Eigen::Index>(1, len));
}

// out += the image of x under the gather, element by element, without affine_interval's four
// vectors of the output's size. A row without an entry adds 0 (a -0 bias turns +0, as adding
// affine_interval's 0 does).
void add_gather_interval(const Gather& g, const Interval& x, Interval& out) {
  if (g.entries() < g.rows) {
    out.lo.array() += 0.0;
    out.hi.array() += 0.0;
  }
  // Each end from the input's end the entry's sign selects: the centre and radius form can round
  // an end inward (an index cast to an integer just below the next one would be taken for it) or
  // lose a small end next to a huge one ([-2.3, 7e21] gave a lower bound of 0).
  g.for_each([&](int64_t i, int64_t j, double v) {
    if (v == 1.0) {  // a copy (Gather, Slice, Reshape, Concat)
      out.lo[i] += x.lo[j];
      out.hi[i] += x.hi[j];
      return;
    }
    // Both products, then the smaller below: a product added straight to an end may be fused
    // into one multiply-add on one side and not on the other (a point's ends then differ).
    const double a = v * x.lo[j], b = v * x.hi[j];
    out.lo[i] += std::min(a, b);
    out.hi[i] += std::max(a, b);
  });
}

// out += the image of x under a dense weight (double or float), each end from the input ends
// the entry's sign selects, as for gathers: from the centre and radius, a small end next to a
// huge one rounds away. One pass over the weight, column by column.
template <typename M>
void add_dense_interval(const M& w, const Interval& x, Interval& out) {
  const Eigen::Index rows = w.rows();
  double* lo = out.lo.data();
  double* hi = out.hi.data();
  for (Eigen::Index j = 0; j < w.cols(); ++j) {
    const auto* col = w.col(j).data();
    const double l = x.lo[j], u = x.hi[j];
    for (Eigen::Index i = 0; i < rows; ++i) {
      const double v = col[i];
      const double a = v * l, b = v * u;
      lo[i] += std::min(a, b);
      hi[i] += std::max(a, b);
    }
  }
}

// The same for a sparse weight (row-major), row by row.
void add_sparse_interval(const SpMat& s, const Interval& x, Interval& out) {
  for (Eigen::Index i = 0; i < s.outerSize(); ++i) {
    double lo = 0.0, hi = 0.0;
    for (SpMat::InnerIterator it(s, i); it; ++it) {
      const double a = it.value() * x.lo[it.col()], b = it.value() * x.hi[it.col()];
      lo += std::min(a, b);
      hi += std::max(a, b);
    }
    out.lo[i] += lo;
    out.hi[i] += hi;
  }
}

}  // namespace

Mat dense_left(const Mat& a, const LinearTerm& t) {
  if (t.wf.size() == 0) return a * t.w;
  Mat y(a.rows(), t.wf.cols());
  const Eigen::Index b = block(t.wf.rows());  // column blocks: each product has its full depth
  for (Eigen::Index c = 0; c < t.wf.cols(); c += b) {
    const Eigen::Index n = std::min(b, t.wf.cols() - c);
    y.middleCols(c, n).noalias() = a * t.wf.middleCols(c, n).cast<double>();
  }
  return y;
}

Mat dense_left_transposed(const Mat& a, const LinearTerm& t) {
  if (t.wf.size() == 0) return a * t.w.transpose();
  Mat y(a.rows(), t.wf.rows());
  const Eigen::Index b = block(t.wf.cols());
  for (Eigen::Index r = 0; r < t.wf.rows(); r += b) {
    const Eigen::Index n = std::min(b, t.wf.rows() - r);
    y.middleCols(r, n).noalias() = a * t.wf.middleRows(r, n).cast<double>().transpose();
  }
  return y;
}

Mat dense_matrix(const LinearTerm& t) { return t.wf.size() == 0 ? t.w : Mat(t.wf.cast<double>()); }

Interval AffineOp::interval(const std::vector<const Interval*>& in) const {
  Interval out{bias_, bias_};
  for (const LinearTerm& t : terms_) {
    if (t.gather) {
      add_gather_interval(*t.gather, *in[t.slot], out);
    } else if (!t.dense) {
      add_sparse_interval(t.sparse(), *in[t.slot], out);
    } else if (t.wf.size() == 0) {
      add_dense_interval(t.w, *in[t.slot], out);
    } else {
      add_dense_interval(t.wf, *in[t.slot], out);
    }
  }
  return out;
}

int64_t AffineOp::weight_entries() const {
  int64_t n = 0;
  for (const LinearTerm& t : terms_) n += t.stored();
  return n;
}

int64_t AffineOp::dense_weight_entries() const {
  int64_t n = 0;
  for (const LinearTerm& t : terms_)
    if (t.dense) n += t.stored();
  return n;
}

AffineOp::AffineOp(std::vector<LinearTerm> terms, Vec bias)
    : terms_(std::move(terms)), bias_(std::move(bias)) {
  fixed_ = std::make_unique<const Relaxation>(relax({}, {}));
}

Relaxation AffineOp::relax(const std::vector<const Interval*>&, const Interval&) const {
  Relaxation r;
  r.kind = Relaxation::Kind::kAffine;
  r.terms = &terms_;
  r.bias = &bias_;
  return r;
}

}  // namespace propdag

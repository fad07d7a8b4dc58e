#include "propdag/op.h"

namespace propdag {

Interval affine_interval(const LinearTerm& term, const Interval& x) {
  Vec c = (x.lo + x.hi) * 0.5;
  Vec r = (x.hi - x.lo) * 0.5;
  Vec yc, yr;
  if (term.dense) {
    yc = term.w * c;
    yr = term.w.cwiseAbs() * r;
  } else {
    const SpMat& s = term.sparse();
    yc = s * c;
    yr = s.cwiseAbs() * r;
  }
  return {yc - yr, yc + yr};
}

Interval AffineOp::interval(const std::vector<const Interval*>& in) const {
  Interval out{bias_, bias_};
  for (const LinearTerm& t : terms_) {
    Interval part = affine_interval(t, *in[t.slot]);
    out.lo += part.lo;
    out.hi += part.hi;
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

Relaxation AffineOp::relax(const std::vector<const Interval*>&, const Interval&) const {
  Relaxation r;
  r.kind = Relaxation::Kind::kAffine;
  r.terms = &terms_;
  r.bias = &bias_;
  return r;
}

}  // namespace propdag

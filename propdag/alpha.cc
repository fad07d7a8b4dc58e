// alpha-CROWN: the lower bound of an objective with the lower-line slopes of ReLU-like
// relaxations tuned per row by projected gradient ascent. The gradient is reverse mode through
// the lower-bound half of CROWN's backward pass, whose relaxations are fixed for the box.
#include <cmath>

#include "propdag/crown.h"

namespace propdag::internal {

Crown::LowerPass Crown::lower_pass(const std::vector<int>& order,
                                   const std::vector<Relaxation>& rel,
                                   const std::vector<Mat>& alpha, int target, const Mat& c) const {
  LowerPass p{std::vector<Mat>(m_.dag().size()), Vec::Zero(c.rows())};
  p.lam[target] = c;
  for (int n : order) {
    const Mat& lam = p.lam[n];
    if (lam.size() == 0) continue;
    const BoundOp* op = m_.op(n);
    if (op == nullptr) {
      Vec lo = input_.lo.segment(offset_[n], m_.numel(n));
      Vec hi = input_.hi.segment(offset_[n], m_.numel(n));
      p.lb += lam * ((lo + hi) * 0.5) - lam.cwiseAbs() * ((hi - lo) * 0.5);
      continue;
    }
    const DagNode& d = m_.dag().node(n);
    const Relaxation& r = rel[n];
    if (r.kind == Relaxation::Kind::kAffine) {
      for (const LinearTerm& t : *r.terms) accumulate(p.lam[d.inputs[t.slot]], times(lam, t));
      p.lb += lam * *r.bias;
    } else if (r.kind == Relaxation::Kind::kElementwise) {
      Mat lp = lam.cwiseMax(0.0), ln = lam.cwiseMin(0.0);
      p.lb += lp * r.lo_bias + ln * r.up_bias;
      Mat next = alpha[n].size() ? Mat(lp.cwiseProduct(alpha[n])) : scale_cols(lp, r.lo_slope);
      next += scale_cols(ln, r.up_slope);
      accumulate(p.lam[d.inputs[0]], std::move(next));
    } else {
      p.lb += lam.cwiseMax(0.0) * b_[n].lo + lam.cwiseMin(0.0) * b_[n].hi;
    }
  }
  return p;
}

// Reverse mode through lower_pass: g[n] = d lb / d lam[n], visiting a node's inputs before it
// (the pass visits it first); returns d lb / d alpha for the tuned nodes. Row r of lb depends
// on row r of everything only, so the rows' gradients are independent.
std::vector<Mat> Crown::alpha_gradient(const std::vector<int>& order,
                                       const std::vector<Relaxation>& rel,
                                       const std::vector<Mat>& alpha, const LowerPass& pass) const {
  const size_t size = m_.dag().size();
  std::vector<Mat> g(size), grad(size);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int n = *it;
    const Mat& lam = pass.lam[n];
    if (lam.size() == 0) continue;
    const BoundOp* op = m_.op(n);
    Mat& gn = g[n];
    gn.resize(lam.rows(), lam.cols());
    if (op == nullptr || rel[n].kind == Relaxation::Kind::kConstant) {
      // lb gains lam_i * lo_i where lam_i >= 0, lam_i * hi_i otherwise.
      Vec lo = op ? b_[n].lo : Vec(input_.lo.segment(offset_[n], m_.numel(n)));
      Vec hi = op ? b_[n].hi : Vec(input_.hi.segment(offset_[n], m_.numel(n)));
      for (Eigen::Index j = 0; j < lam.cols(); ++j)
        for (Eigen::Index r = 0; r < lam.rows(); ++r) gn(r, j) = lam(r, j) >= 0 ? lo[j] : hi[j];
      continue;
    }
    const DagNode& d = m_.dag().node(n);
    const Relaxation& rx = rel[n];
    if (rx.kind == Relaxation::Kind::kAffine) {
      gn = rx.bias->transpose().replicate(lam.rows(), 1);
      for (const LinearTerm& t : *rx.terms) {
        const Mat& gi = g[d.inputs[t.slot]];
        if (t.dense)
          gn.noalias() += gi * t.w.transpose();
        else
          gn += Mat(gi * t.s.transpose());
      }
      continue;
    }
    const Mat& gi = g[d.inputs[0]];
    const bool tuned = alpha[n].size() != 0;
    if (tuned) grad[n] = Mat::Zero(lam.rows(), lam.cols());
    for (Eigen::Index j = 0; j < lam.cols(); ++j) {
      for (Eigen::Index r = 0; r < lam.rows(); ++r) {
        if (lam(r, j) >= 0) {
          gn(r, j) = gi(r, j) * (tuned ? alpha[n](r, j) : rx.lo_slope[j]) + rx.lo_bias[j];
          if (tuned) grad[n](r, j) = gi(r, j) * lam(r, j);
        } else {
          gn(r, j) = gi(r, j) * rx.up_slope[j] + rx.up_bias[j];
        }
      }
    }
  }
  return grad;
}

Vec Crown::optimized_lower(int target, const Mat& c, Mat* lower_coef, const Vec* goal,
                           std::vector<Mat>* warm) {
  const Dag& dag = m_.dag();
  const std::vector<int> order = dag.backward_order(target);
  const Eigen::Index k = c.rows();
  std::vector<Relaxation> rel(dag.size());
  std::vector<Mat> alpha(dag.size());
  double entries = 0;
  bool tunable = false;
  for (int n : order) {
    entries += static_cast<double>(m_.numel(n)) * static_cast<double>(k);
    if (m_.op(n) == nullptr) continue;
    rel[n] = relax_at(n);
    const Relaxation& r = rel[n];
    if (r.kind != Relaxation::Kind::kElementwise || r.lo_min.size() == 0 ||
        !((r.lo_max - r.lo_min).maxCoeff() > 0))
      continue;
    alpha[n] = r.lo_slope.transpose().replicate(k, 1);
    tunable = true;
  }
  // Nothing to tune, or every coefficient kept at once would not fit: CROWN's bound.
  if (!tunable || opt_.alpha_steps <= 0 || entries > opt_.chunk_entries)
    return backward(target, c, lower_coef).lo;
  constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;
  std::vector<Mat> m1(dag.size()), m2(dag.size());
  LowerPass pass = lower_pass(order, rel, alpha, target, c);
  bool carried_over = false;
  if (warm != nullptr && static_cast<int>(warm->size()) == dag.size()) {
    // Slopes carried over (from the box this one was split from), within this box's ranges.
    std::vector<Mat> carried = alpha;
    for (int n : order) {
      const Mat& w = (*warm)[n];
      if (alpha[n].size() == 0 || w.rows() != k || w.cols() != alpha[n].cols()) continue;
      for (Eigen::Index j = 0; j < w.cols(); ++j)
        carried[n].col(j) = w.col(j).cwiseMax(rel[n].lo_min[j]).cwiseMin(rel[n].lo_max[j]);
      carried_over = true;
    }
    if (carried_over) {
      LowerPass from = lower_pass(order, rel, carried, target, c);
      bool changed = false;
      for (Eigen::Index r = 0; r < k; ++r) {
        if (!(from.lb[r] > pass.lb[r])) continue;
        changed = true;
        for (int n : order)
          if (alpha[n].size()) alpha[n].row(r) = carried[n].row(r);
      }
      if (changed) pass = lower_pass(order, rel, alpha, target, c);
    }
  }
  std::vector<Mat> best_alpha = alpha;
  Vec best = pass.lb;
  const int steps = carried_over ? opt_.alpha_warm_steps : opt_.alpha_steps;
  auto reached = [&] { return goal != nullptr && (best - *goal).maxCoeff() > 0; };
  for (int s = 1; s <= steps && !reached(); ++s) {
    std::vector<Mat> grad = alpha_gradient(order, rel, alpha, pass);
    const double fix1 = 1 - std::pow(kBeta1, s), fix2 = 1 - std::pow(kBeta2, s);
    for (int n : order) {
      // Skipped: untuned nodes, and tuned ones no coefficient reaches (behind interval-only ops).
      if (alpha[n].size() == 0 || grad[n].size() == 0) continue;
      if (m1[n].size() == 0) m1[n] = m2[n] = Mat::Zero(k, alpha[n].cols());
      m1[n] = kBeta1 * m1[n] + (1 - kBeta1) * grad[n];
      m2[n] = kBeta2 * m2[n] + (1 - kBeta2) * grad[n].cwiseAbs2();
      alpha[n].array() +=
          opt_.alpha_rate * (m1[n].array() / fix1) / ((m2[n].array() / fix2).sqrt() + kEps);
      const Relaxation& r = rel[n];
      for (Eigen::Index j = 0; j < alpha[n].cols(); ++j)
        alpha[n].col(j) = alpha[n].col(j).cwiseMax(r.lo_min[j]).cwiseMin(r.lo_max[j]);
    }
    pass = lower_pass(order, rel, alpha, target, c);
    for (Eigen::Index r = 0; r < k; ++r) {
      if (!(pass.lb[r] > best[r])) continue;
      best[r] = pass.lb[r];
      for (int n : order)
        if (alpha[n].size()) best_alpha[n].row(r) = alpha[n].row(r);
    }
  }
  if (warm != nullptr) *warm = best_alpha;
  if (lower_coef != nullptr) {
    // Rows are independent, so one pass with every row's best slopes gives every best bound.
    pass = lower_pass(order, rel, best_alpha, target, c);
    for (int n : order)
      if (m_.op(n) == nullptr && pass.lam[n].size())
        lower_coef->block(0, offset_[n], k, pass.lam[n].cols()) += pass.lam[n];
    best = pass.lb;
  }
  return best;
}

}  // namespace propdag::internal

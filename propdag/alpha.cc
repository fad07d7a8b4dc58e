// alpha-CROWN: the lower bound of an objective with the lower-line slopes of ReLU-like
// relaxations, the tangent points of the lines of curves (sigmoid, tanh) and the weights between
// the two McCormick planes of products (Relaxation::second), tuned per row by projected gradient
// ascent. The gradient is reverse mode through
// the lower-bound half of CROWN's backward pass, whose relaxations are fixed for the box.
// With neuron splits (z_j >= 0 or z_j <= 0 on the part of the box bounded), each split adds
// -beta z_j or +beta z_j (beta >= 0, per row) to the objective: nonpositive on that part, so
// the lower bound of the sum is one of the objective there (beta-CROWN). The betas are tuned
// with the slopes.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "propdag/crown.h"
#include "propdag/relax.h"

namespace propdag::internal {

namespace {

// The sign with which a split's element enters the objective: -1 for z >= 0, +1 for z <= 0.
double side(const NeuronSplit& s) { return s.active ? -1.0 : 1.0; }

// The line of element j of a relaxation with tangent families, in row `row` of its tuned points
// `t` (rows x 2n: lower lines' points, then upper lines'): the tangent where the range is open,
// the fixed line elsewhere.
Line tuned_line(const Relaxation& r, const Mat& t, Eigen::Index row, Eigen::Index j, bool lower) {
  const Eigen::Index i = lower ? j : r.lo_slope.size() + j;
  if (!(r.t_max[i] > r.t_min[i]))
    return lower ? Line{r.lo_slope[j], r.lo_bias[j]} : Line{r.up_slope[j], r.up_bias[j]};
  return tangent_line(*r.curve, t(row, i), r.reach[j], lower);
}

// lower_pass's step through an elementwise node whose tangent points `t` are tuned: adds the
// lines' constants to `lb` and returns the coefficients passed to the input.
Mat tangent_step(const Relaxation& r, const Mat& t, const Mat& lam, Vec& lb) {
  Mat next(lam.rows(), lam.cols());
  for (Eigen::Index j = 0; j < lam.cols(); ++j) {
    for (Eigen::Index row = 0; row < lam.rows(); ++row) {
      const Line line = tuned_line(r, t, row, j, lam(row, j) >= 0);
      lb[row] += lam(row, j) * line.bias;
      next(row, j) = lam(row, j) * line.slope;
    }
  }
  return next;
}

// lower_pass's step through planes (a kLinear relaxation): the coefficients `a` >= 0 are taken
// through the lower planes, those <= 0 through the upper ones.
void planes_step(const Relaxation& r, const Mat& a, const DagNode& node, std::vector<Mat>& lam,
                 Vec& lb) {
  add_by_sign(a, r.lo_bias, r.up_bias, lb);
  if (r.lo_map().rows() != 0) add_mapped_by_sign(a, r.lo_map(), r.up_map(), lam[node.inputs[0]]);
  if (r.lo_map1().rows() != 0) add_mapped_by_sign(a, r.lo_map1(), r.up_map1(), lam[node.inputs[1]]);
}

// The planes' values at what follows them in the pass: lo(r, j) = lower plane j of `r` applied to
// row r of the gradients of its inputs (`lam_grad`), plus its bias; up likewise.
void plane_values(const Relaxation& r, const std::vector<Mat>& lam_grad, const DagNode& node,
                  Eigen::Index rows, Mat& lo, Mat& up) {
  lo = r.lo_bias.transpose().replicate(rows, 1);
  up = r.up_bias.transpose().replicate(rows, 1);
  // Column j gains input_grad's column c times each entry (j, c) of a map (short columns).
  auto add = [rows](const SpMat& map, const Mat& input_grad, Mat& out) {
    for (Eigen::Index j = 0; j < map.outerSize(); ++j)
      for (SpMat::InnerIterator it(map, j); it; ++it)
        for (Eigen::Index i = 0; i < rows; ++i) out(i, j) += input_grad(i, it.col()) * it.value();
  };
  for (int slot : {0, 1}) {
    const SpMat &lo_map = slot ? r.lo_map1() : r.lo_map(),
                &up_map = slot ? r.up_map1() : r.up_map();
    if (lo_map.rows() == 0) continue;
    const Mat& input_grad = lam_grad[node.inputs[slot]];
    add(lo_map, input_grad, lo);
    add(up_map, input_grad, up);
  }
}

// The ranges tuning keeps a relaxation's parameters in (the lower slopes of ReLU-like ops, the
// tangent points of curves, the weights of the first planes of products where they have second
// ones: lower planes' then upper planes') and their starting point; empty when fixed.
struct Tunable {
  Vec lo, hi, start;
};

Tunable tunable_range(const Relaxation& r) {
  Tunable t;
  if (r.kind == Relaxation::Kind::kLinear && r.second != nullptr) {
    const Eigen::Index n = 2 * r.lo_bias.size();
    return {Vec::Zero(n), Vec::Ones(n), Vec::Ones(n)};
  }
  if (r.kind != Relaxation::Kind::kElementwise) return t;
  if (r.curve != nullptr)
    t = {r.t_min, r.t_max, r.t0};
  else if (r.lo_min.size() != 0)
    t = {r.lo_min, r.lo_max, r.lo_slope};
  if (t.lo.size() == 0 || !((t.hi - t.lo).maxCoeff() > 0)) return {};
  return t;
}

void clamp_cols(Mat& a, const Tunable& range) {
  for (Eigen::Index j = 0; j < a.cols(); ++j)
    a.col(j) = a.col(j).cwiseMax(range.lo[j]).cwiseMin(range.hi[j]);
}

}  // namespace

Crown::LowerPass Crown::lower_pass(const std::vector<int>& order,
                                   const std::vector<const Relaxation*>& rel,
                                   const std::vector<Mat>& alpha, const Mat& beta, int target,
                                   const Mat& c) const {
  LowerPass pass{std::vector<Mat>(model_.dag().size()), Vec::Zero(c.rows())};
  pass.lam[target] = c;
  for (int n : order) {
    if (pass.lam[n].size() == 0) continue;
    if (beta.size() != 0)
      for (int k : splits_at_[n])
        pass.lam[n].col(splits_[k].index) += side(splits_[k]) * beta.col(k);
    const Mat& lam = pass.lam[n];
    const BoundOp* op = model_.op(n);
    if (op == nullptr) {
      Vec lo = input_box_.lo.segment(input_offset_[n], model_.numel(n));
      Vec hi = input_box_.hi.segment(input_offset_[n], model_.numel(n));
      pass.lb += lam.cwiseMax(0.0) * lo + lam.cwiseMin(0.0) * hi;  // as Crown::concretize
      continue;
    }
    const DagNode& dag_node = model_.dag().node(n);
    const Relaxation& relax = *rel[n];
    if (relax.kind == Relaxation::Kind::kAffine) {
      for (const LinearTerm& t : *relax.terms)
        accumulate(pass.lam[dag_node.inputs[t.slot]], times(lam, t));
      pass.lb += lam * *relax.bias;
    } else if (relax.kind == Relaxation::Kind::kLinear) {
      if (alpha[n].size() == 0) {
        planes_step(relax, lam, dag_node, pass.lam, pass.lb);
        continue;
      }
      // Weight w of the first planes, 1 - w of the second (per row, element and side): w in
      // [0, 1] keeps each coefficient's sign.
      const Eigen::Index m = lam.cols();
      const auto w_lo = alpha[n].leftCols(m).array(), w_up = alpha[n].rightCols(m).array();
      const auto nonneg = lam.array() >= 0;
      planes_step(relax, nonneg.select(lam.array() * w_lo, lam.array() * w_up).matrix(), dag_node,
                  pass.lam, pass.lb);
      planes_step(*relax.second,
                  nonneg.select(lam.array() * (1 - w_lo), lam.array() * (1 - w_up)).matrix(),
                  dag_node, pass.lam, pass.lb);
    } else if (relax.kind == Relaxation::Kind::kElementwise) {
      if (relax.curve != nullptr && alpha[n].size() != 0) {
        accumulate(pass.lam[dag_node.inputs[0]], tangent_step(relax, alpha[n], lam, pass.lb));
        continue;
      }
      add_by_sign(lam, relax.lo_bias, relax.up_bias, pass.lb);
      Mat& into = pass.lam[dag_node.inputs[0]];
      if (alpha[n].size() == 0) {
        add_scaled_by_sign(lam, relax.lo_slope, relax.up_slope, into);
        continue;
      }
      accumulate(into, Mat(lam.cwiseMax(0.0).cwiseProduct(alpha[n]) +
                           scale_cols(lam.cwiseMin(0.0), relax.up_slope)));
    } else {
      pass.lb += lam.cwiseMax(0.0) * node_bounds_[n].lo + lam.cwiseMin(0.0) * node_bounds_[n].hi;
    }
  }
  return pass;
}

// Reverse mode through lower_pass: lam_grad[n] = d lb / d lam[n] (`lam` as in Backward),
// visiting a node's inputs before it (the pass visits it first); returns d lb / d alpha for the
// tuned nodes. Row r of lb depends on row r of everything only, so the rows' gradients are
// independent.
std::vector<Mat> Crown::alpha_gradient(const std::vector<int>& order,
                                       const std::vector<const Relaxation*>& rel,
                                       const std::vector<Mat>& alpha, const LowerPass& pass,
                                       Mat* beta_grad) const {
  const size_t size = model_.dag().size();
  std::vector<Mat> lam_grad(size), grad(size);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int n = *it;
    const Mat& lam = pass.lam[n];
    if (lam.size() == 0) continue;
    const BoundOp* op = model_.op(n);
    Mat& node_grad = lam_grad[n];
    node_grad.resize(lam.rows(), lam.cols());
    if (op == nullptr || rel[n]->kind == Relaxation::Kind::kConstant) {
      // lb gains lam_i * lo_i where lam_i >= 0, lam_i * hi_i otherwise.
      Vec lo =
          op ? node_bounds_[n].lo : Vec(input_box_.lo.segment(input_offset_[n], model_.numel(n)));
      Vec hi =
          op ? node_bounds_[n].hi : Vec(input_box_.hi.segment(input_offset_[n], model_.numel(n)));
      for (Eigen::Index j = 0; j < lam.cols(); ++j)
        for (Eigen::Index r = 0; r < lam.rows(); ++r)
          node_grad(r, j) = lam(r, j) >= 0 ? lo[j] : hi[j];
      continue;
    }
    const DagNode& dag_node = model_.dag().node(n);
    const Relaxation& relax = *rel[n];
    if (relax.kind == Relaxation::Kind::kAffine) {
      node_grad = relax.bias->transpose().replicate(lam.rows(), 1);
      for (const LinearTerm& t : *relax.terms) {
        const Mat& input_grad = lam_grad[dag_node.inputs[t.slot]];
        if (t.dense)
          node_grad += dense_left_transposed(input_grad, t);
        else if (t.gather)
          node_grad += gather_left_transposed(input_grad, *t.gather);
        else
          node_grad += Mat(input_grad * t.sparse().transpose());
      }
      continue;
    }
    if (relax.kind == Relaxation::Kind::kLinear) {
      // lb gains lam_o (map row o . what follows + bias_o), the lower map where lam_o >= 0; tuned,
      // w times that of the first planes and 1 - w times that of the second: d / dw = lam_o
      // (first's value - second's).
      Mat lo, up;
      plane_values(relax, lam_grad, dag_node, lam.rows(), lo, up);
      if (alpha[n].size() == 0) {
        node_grad = (lam.array() >= 0).select(lo, up);
        continue;
      }
      Mat lo2, up2;
      plane_values(*relax.second, lam_grad, dag_node, lam.rows(), lo2, up2);
      const Eigen::Index m = lam.cols();
      const Mat w_lo = alpha[n].leftCols(m), w_up = alpha[n].rightCols(m);
      grad[n] = Mat::Zero(lam.rows(), 2 * m);
      for (Eigen::Index j = 0; j < m; ++j) {
        for (Eigen::Index r = 0; r < lam.rows(); ++r) {
          if (lam(r, j) >= 0) {
            node_grad(r, j) = w_lo(r, j) * lo(r, j) + (1 - w_lo(r, j)) * lo2(r, j);
            grad[n](r, j) = lam(r, j) * (lo(r, j) - lo2(r, j));
          } else {
            node_grad(r, j) = w_up(r, j) * up(r, j) + (1 - w_up(r, j)) * up2(r, j);
            grad[n](r, m + j) = lam(r, j) * (up(r, j) - up2(r, j));
          }
        }
      }
      continue;
    }
    const Mat& input_grad = lam_grad[dag_node.inputs[0]];
    const bool tuned = alpha[n].size() != 0;
    if (tuned) grad[n] = Mat::Zero(alpha[n].rows(), alpha[n].cols());
    for (Eigen::Index j = 0; j < lam.cols(); ++j) {
      for (Eigen::Index r = 0; r < lam.rows(); ++r) {
        if (tuned && relax.curve != nullptr) {
          // lb gains lam (f(t) - f'(t) t) + (lam f'(t)) . (what follows): d / dt = lam f''(t)
          // (input_grad - t).
          const bool lower = lam(r, j) >= 0;
          const Line line = tuned_line(relax, alpha[n], r, j, lower);
          node_grad(r, j) = input_grad(r, j) * line.slope + line.bias;
          const Eigen::Index i = lower ? j : lam.cols() + j;
          const double t = alpha[n](r, i);
          if (relax.t_max[i] > relax.t_min[i])
            grad[n](r, i) = lam(r, j) * relax.curve->ddf(t) * (input_grad(r, j) - t);
        } else if (lam(r, j) >= 0) {
          node_grad(r, j) =
              input_grad(r, j) * (tuned ? alpha[n](r, j) : relax.lo_slope[j]) + relax.lo_bias[j];
          if (tuned) grad[n](r, j) = input_grad(r, j) * lam(r, j);
        } else {
          node_grad(r, j) = input_grad(r, j) * relax.up_slope[j] + relax.up_bias[j];
        }
      }
    }
  }
  // A split's beta enters lb only through lam of its node: d lb / d beta = side * lam_grad there.
  if (beta_grad != nullptr) {
    beta_grad->setZero(pass.lb.size(), static_cast<Eigen::Index>(splits_.size()));
    for (size_t k = 0; k < splits_.size(); ++k) {
      const Mat& node_grad = lam_grad[splits_[k].node];
      if (node_grad.size() != 0)
        beta_grad->col(static_cast<Eigen::Index>(k)) =
            side(splits_[k]) * node_grad.col(splits_[k].index);
    }
  }
  return grad;
}

Vec Crown::optimized_lower(int target, const Mat& c, Mat* lower_coef, const Vec* goal,
                           std::vector<Mat>* warm, Mat* warm_beta) {
  const Dag& dag = model_.dag();
  std::vector<int> scratch;
  const std::vector<int>& order = dag.backward_schedule(target, scratch);
  const Eigen::Index k = c.rows();
  std::vector<const Relaxation*> rel(dag.size(), nullptr);
  std::vector<Mat> alpha(dag.size());
  std::vector<Tunable> range(dag.size());
  double entries = 0;
  bool tunable = false;
  std::vector<char> reached(dag.size(), 0);
  for (int n : order) {
    reached[n] = 1;
    entries += static_cast<double>(model_.numel(n)) * static_cast<double>(k);
    if (model_.op(n) == nullptr) continue;
    rel[n] = options_.alpha_planes ? &relax_with_second(n) : &relax_at(n);
    range[n] = tunable_range(*rel[n]);
    if (range[n].lo.size() == 0) continue;
    alpha[n] = range[n].start.transpose().replicate(k, 1);
    tunable = true;
  }
  // The splits' multipliers, from 0 (CROWN's bound) where the objective depends on their node.
  Mat beta;
  for (const NeuronSplit& s : splits_)
    if (reached[s.node]) beta.setZero(k, static_cast<Eigen::Index>(splits_.size()));
  bool carried_over = false;  // a starting point from the part this one was split from
  if (beta.size() != 0 && warm_beta != nullptr && warm_beta->rows() == k && warm_beta->cols() > 0) {
    const Eigen::Index given = std::min(warm_beta->cols(), beta.cols());
    beta.leftCols(given) = warm_beta->leftCols(given).cwiseMax(0.0);
    carried_over = true;
  }
  tunable = tunable || beta.size() != 0;
  // Nothing to tune, or every coefficient kept at once would not fit: CROWN's bound.
  if (!tunable || options_.alpha_steps <= 0 || entries > options_.chunk_entries)
    return backward(target, c, lower_coef).lo;
  constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;
  std::vector<Mat> m1(dag.size()), m2(dag.size());  // Adam's first and second moments
  Mat beta_m1, beta_m2, beta_grad;
  if (beta.size() != 0) beta_m1 = beta_m2 = Mat::Zero(beta.rows(), beta.cols());
  LowerPass pass = lower_pass(order, rel, alpha, beta, target, c);
  if (warm != nullptr && static_cast<int>(warm->size()) == dag.size()) {
    // Slopes carried over (from the box this one was split from), within this box's ranges.
    std::vector<Mat> carried = alpha;
    for (int n : order) {
      const Mat& w = (*warm)[n];
      if (alpha[n].size() == 0 || w.rows() != k || w.cols() != alpha[n].cols()) continue;
      carried[n] = w;
      clamp_cols(carried[n], range[n]);
      carried_over = true;
    }
    if (carried_over) {
      LowerPass from = lower_pass(order, rel, carried, beta, target, c);
      Eigen::Index changed = 0;
      for (Eigen::Index r = 0; r < k; ++r) {
        if (!(from.lb[r] > pass.lb[r])) continue;
        ++changed;
        for (int n : order)
          if (alpha[n].size()) alpha[n].row(r) = carried[n].row(r);
      }
      // Rows are independent: where every row took the carried slopes, `from` is their pass.
      if (changed == k)
        pass = std::move(from);
      else if (changed > 0)
        pass = lower_pass(order, rel, alpha, beta, target, c);
    }
  }
  std::vector<Mat> best_alpha = alpha;
  Mat best_beta = beta;
  Vec best = pass.lb;
  bool pass_is_best = true;  // every row of `pass` is the pass of its best slopes
  const int steps = carried_over ? options_.alpha_warm_steps : options_.alpha_steps;
  auto done = [&] { return goal != nullptr && (best - *goal).maxCoeff() > 0; };
  auto adam = [&](Mat& x, Mat& v1, Mat& v2, const Mat& grad, double fix1, double fix2) {
    v1 = kBeta1 * v1 + (1 - kBeta1) * grad;
    v2 = kBeta2 * v2 + (1 - kBeta2) * grad.cwiseAbs2();
    x.array() += options_.alpha_rate * (v1.array() / fix1) / ((v2.array() / fix2).sqrt() + kEps);
  };
  for (int s = 1; s <= steps && !done() && !options_.past_deadline(); ++s) {
    std::vector<Mat> grad =
        alpha_gradient(order, rel, alpha, pass, beta.size() ? &beta_grad : nullptr);
    const double fix1 = 1 - std::pow(kBeta1, s), fix2 = 1 - std::pow(kBeta2, s);
    for (int n : order) {
      // Skipped: untuned nodes, and tuned ones no coefficient reaches (behind interval-only ops).
      if (alpha[n].size() == 0 || grad[n].size() == 0) continue;
      if (m1[n].size() == 0) m1[n] = m2[n] = Mat::Zero(k, alpha[n].cols());
      adam(alpha[n], m1[n], m2[n], grad[n], fix1, fix2);
      clamp_cols(alpha[n], range[n]);
    }
    if (beta.size() != 0) {
      adam(beta, beta_m1, beta_m2, beta_grad, fix1, fix2);
      beta = beta.cwiseMax(0.0);
    }
    pass = lower_pass(order, rel, alpha, beta, target, c);
    pass_is_best = true;
    for (Eigen::Index r = 0; r < k; ++r) {
      if (!(pass.lb[r] > best[r])) {
        pass_is_best = false;
        continue;
      }
      best[r] = pass.lb[r];
      for (int n : order)
        if (alpha[n].size()) best_alpha[n].row(r) = alpha[n].row(r);
      if (beta.size() != 0) best_beta.row(r) = beta.row(r);
    }
  }
  if (warm != nullptr) *warm = best_alpha;
  if (warm_beta != nullptr) *warm_beta = best_beta;
  if (lower_coef != nullptr) {
    // Rows are independent, so one pass with every row's best slopes gives every best bound
    // (the last pass, where each row's slopes were its best).
    if (!pass_is_best) pass = lower_pass(order, rel, best_alpha, best_beta, target, c);
    for (int n : order)
      if (model_.op(n) == nullptr && pass.lam[n].size())
        lower_coef->block(0, input_offset_[n], k, pass.lam[n].cols()) += pass.lam[n];
    best = pass.lb;
  }
  return best;
}

}  // namespace propdag::internal

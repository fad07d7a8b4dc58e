// CROWN: bounds of a node as linear functions of the inputs, found by walking the reverse
// topological order from the node and replacing each op's output by its linear relaxation.
// Shared values and residual connections need no special case: coefficients reaching a node
// from several successors are summed before the node is processed.
#include <algorithm>
#include <cmath>
#include <optional>

#include "propdag/engine.h"

namespace propdag {
namespace {

// A final backward pass may cost this many times Options::refine_budget before the output keeps
// its forward bounds instead (large outputs over large convolutions, e.g. TinyYOLO).
constexpr double kOutputBudget = 50;

// Coefficients of the lower (lam) and upper (om) bound on one node, and the constant parts.
struct Backward {
  std::vector<Mat> lam, om;
  Vec lb, ub;
};

void accumulate(Mat& into, Mat&& add) {
  if (into.size() == 0)
    into = std::move(add);
  else
    into += add;
}

// Intersects two sound bounds of the same values. Where rounding makes them cross (both are exact
// up to rounding, e.g. on a one-point box), the crossed pair is swapped so the result still spans
// both.
void intersect(Interval& a, const Vec& lo, const Vec& hi) {
  Vec l = a.lo.cwiseMax(lo), h = a.hi.cwiseMin(hi);
  a.lo = l.cwiseMin(h);
  a.hi = l.cwiseMax(h);
}

Mat times(const Mat& a, const LinearTerm& t) { return t.dense ? Mat(a * t.w) : Mat(a * t.s); }

Mat scale_cols(const Mat& a, const Vec& s) { return a * s.asDiagonal(); }

class Crown {
 public:
  Crown(const Model& model, const Options& options) : m_(model), opt_(options) {}

  common::Status forward(const Interval& input);
  /// Bounds of c * target; adds the lower bound's input coefficients to `lower_coef` if given.
  Interval backward(int target, const Mat& c, Mat* lower_coef = nullptr);
  const Interval& bounds(int node) const { return b_[node]; }
  /// Lower bounds of c * target as backward() finds them, but with the tunable lower slopes of
  /// the relaxations (Relaxation::lo_min/lo_max) chosen per row by Options::alpha_steps steps of
  /// projected gradient ascent (Adam) from CROWN's; the best bound per row is kept. Adds that
  /// bound's input coefficients to `lower_coef` if given. With `goal`, tuning stops as soon as
  /// some row's bound exceeds goal[row].
  /// With `warm` (one entry per Dag node): rows whose bound is better from those slopes (clamped
  /// to this box's ranges) than from CROWN's start there; on return it holds the best slopes.
  Vec optimized_lower(int target, const Mat& c, Mat* lower_coef = nullptr,
                      const Vec* goal = nullptr, std::vector<Mat>* warm = nullptr);
  /// Multiply-adds of one backward row from `node` to the inputs.
  double row_cost(int node) const;

 private:
  // One lower-bound pass with fixed relaxations: the coefficients that reached every node (kept
  // for the gradient) and the bound.
  struct LowerPass {
    std::vector<Mat> lam;
    Vec lb;
  };
  Relaxation relax_at(int node) const;
  LowerPass lower_pass(const std::vector<int>& order, const std::vector<Relaxation>& rel,
                       const std::vector<Mat>& alpha, int target, const Mat& c) const;
  std::vector<Mat> alpha_gradient(const std::vector<int>& order, const std::vector<Relaxation>& rel,
                                  const std::vector<Mat>& alpha, const LowerPass& pass) const;
  void refine(int node);
  double cost(int node) const;
  void step(int node, Backward& w);
  void concretize(int node, Backward& w);

  const Model& m_;
  Options opt_;
  std::vector<Interval> b_;
  Interval input_;
  std::vector<Eigen::Index> offset_;
  Mat* lower_coef_ = nullptr;  // during backward: where input coefficients go, rows from row0_
  Eigen::Index row0_ = 0;
};

common::Status Crown::forward(const Interval& input) {
  const Dag& dag = m_.dag();
  input_ = input;
  offset_.assign(dag.size(), 0);
  Eigen::Index at = 0;
  for (int i : dag.inputs()) offset_[i] = at, at += m_.numel(i);
  std::vector<char> feeds_nonlinear(dag.size(), 0);
  for (int n = 0; n < dag.size(); ++n)
    if (m_.op(n) && m_.op(n)->nonlinear())
      for (int p : dag.node(n).preds) feeds_nonlinear[p] = 1;
  b_.resize(dag.size());
  for (int n = 0; n < dag.size(); ++n) {  // Dag nodes are stored topologically
    if (m_.op(n) == nullptr) {
      b_[n] = {input.lo.segment(offset_[n], m_.numel(n)),
               input.hi.segment(offset_[n], m_.numel(n))};
      continue;
    }
    std::vector<const Interval*> in;
    for (int p : dag.node(n).inputs) in.push_back(p >= 0 ? &b_[p] : nullptr);
    b_[n] = m_.op(n)->interval(in);
    if (feeds_nonlinear[n] && cost(n) <= opt_.refine_budget) refine(n);
  }
  return {};
}

double Crown::row_cost(int node) const {
  double elements = 0;
  for (int n : m_.dag().backward_order(node))
    elements += m_.numel(n) + (m_.op(n) ? m_.op(n)->weight_entries() : 0);
  return elements;
}

double Crown::cost(int node) const { return row_cost(node) * m_.numel(node); }

void Crown::refine(int node) {
  Eigen::Index n = m_.numel(node);
  Interval c = backward(node, Mat::Identity(n, n));
  intersect(b_[node], c.lo, c.hi);
}

Interval Crown::backward(int target, const Mat& c, Mat* lower_coef) {
  const Dag& dag = m_.dag();
  std::vector<int> order = dag.backward_order(target);
  double widest = 0;
  for (int n : order) widest = std::max<double>(widest, m_.numel(n));
  Eigen::Index rows = c.rows();
  Eigen::Index chunk =
      std::max<Eigen::Index>(1, static_cast<Eigen::Index>(opt_.chunk_entries / widest));
  Interval out{Vec(rows), Vec(rows)};
  for (Eigen::Index r0 = 0; r0 < rows; r0 += chunk) {
    Eigen::Index k = std::min(chunk, rows - r0);
    Backward w{std::vector<Mat>(dag.size()), std::vector<Mat>(dag.size()), Vec::Zero(k),
               Vec::Zero(k)};
    w.lam[target] = c.middleRows(r0, k);
    w.om[target] = w.lam[target];
    lower_coef_ = lower_coef;
    row0_ = r0;
    for (int n : order) step(n, w);
    lower_coef_ = nullptr;
    out.lo.segment(r0, k) = w.lb;
    out.hi.segment(r0, k) = w.ub;
  }
  return out;
}

void Crown::concretize(int node, Backward& w) {
  Vec lo = input_.lo.segment(offset_[node], m_.numel(node));
  Vec hi = input_.hi.segment(offset_[node], m_.numel(node));
  Vec center = (lo + hi) * 0.5, radius = (hi - lo) * 0.5;
  w.lb += w.lam[node] * center - w.lam[node].cwiseAbs() * radius;
  if (lower_coef_ != nullptr)
    lower_coef_->block(row0_, offset_[node], w.lam[node].rows(), w.lam[node].cols()) += w.lam[node];
  w.ub += w.om[node] * center + w.om[node].cwiseAbs() * radius;
}

Relaxation Crown::relax_at(int node) const {
  std::vector<const Interval*> in;
  for (int p : m_.dag().node(node).inputs) in.push_back(p >= 0 ? &b_[p] : nullptr);
  return m_.op(node)->relax(in, b_[node]);
}

// Replaces the coefficients on `node` by coefficients on its inputs.
void Crown::step(int node, Backward& w) {
  if (w.lam[node].size() == 0) return;
  const BoundOp* op = m_.op(node);
  if (op == nullptr) {
    concretize(node, w);
  } else {
    const DagNode& d = m_.dag().node(node);
    Relaxation r = relax_at(node);
    const Mat &lam = w.lam[node], &om = w.om[node];
    if (r.kind == Relaxation::Kind::kAffine) {
      for (const LinearTerm& t : *r.terms) {
        accumulate(w.lam[d.inputs[t.slot]], times(lam, t));
        accumulate(w.om[d.inputs[t.slot]], times(om, t));
      }
      w.lb += lam * *r.bias;
      w.ub += om * *r.bias;
    } else if (r.kind == Relaxation::Kind::kElementwise) {
      Mat lp = lam.cwiseMax(0.0), ln = lam.cwiseMin(0.0), op_ = om.cwiseMax(0.0),
          on = om.cwiseMin(0.0);
      w.lb += lp * r.lo_bias + ln * r.up_bias;
      w.ub += op_ * r.up_bias + on * r.lo_bias;
      accumulate(w.lam[d.inputs[0]], scale_cols(lp, r.lo_slope) + scale_cols(ln, r.up_slope));
      accumulate(w.om[d.inputs[0]], scale_cols(op_, r.up_slope) + scale_cols(on, r.lo_slope));
    } else {
      const Interval& o = b_[node];
      w.lb += lam.cwiseMax(0.0) * o.lo + lam.cwiseMin(0.0) * o.hi;
      w.ub += om.cwiseMax(0.0) * o.hi + om.cwiseMin(0.0) * o.lo;
    }
  }
  w.lam[node] = Mat();
  w.om[node] = Mat();
}

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
  if (warm != nullptr && warm->size() == dag.size()) {
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

Interval box_of(const Mat& c, const Interval& y) {
  Vec center = (y.lo + y.hi) * 0.5, radius = (y.hi - y.lo) * 0.5;
  Vec mid = c * center, rad = c.cwiseAbs() * radius;
  return {mid - rad, mid + rad};
}

}  // namespace

common::Status check_input(const Model& model, const Interval& input) {
  if (input.size() == model.input_size()) return {};
  return model.graph().error("input box has " + std::to_string(input.size()) +
                             " elements, the model takes " + std::to_string(model.input_size()));
}

common::Result<Interval> linear_bounds(const Model& model, const Interval& input,
                                       const std::vector<Mat>& c, const Options& options,
                                       Mat* lower_coef, const Vec* goal, Slopes* slopes) {
  const Dag& dag = model.dag();
  if (c.size() != dag.outputs().size())
    return model.graph().error("one objective matrix per graph output is needed");
  RETURN_IF_ERROR(check_input(model, input));
  Eigen::Index rows = 0;
  for (const Mat& m : c) rows = std::max(rows, m.rows());
  Interval total{Vec::Zero(rows), Vec::Zero(rows)};
  if (lower_coef != nullptr) *lower_coef = Mat::Zero(rows, input.size());
  int parts = 0;
  for (const Mat& m : c) parts += m.size() != 0;
  if (parts > 1) goal = nullptr;  // the goal is for the sum of the parts
  std::optional<std::vector<std::optional<Interval>>> ibp;
  std::optional<Crown> crown;
  if (options.method == Method::kIbp) {
    ASSIGN_OR_RETURN(ibp, ibp_run(model, input, false));
  } else {
    crown.emplace(model, options);
    RETURN_IF_ERROR(crown->forward(input));
  }
  for (size_t o = 0; o < c.size(); ++o) {
    if (c[o].size() == 0) continue;
    int node = dag.outputs()[o];
    if (c[o].cols() != model.numel(node) || c[o].rows() != rows)
      return model.graph().error("objective matrix for output " + std::to_string(o) +
                                 " has the wrong size");
    bool affordable = ibp || crown->row_cost(node) * rows <= kOutputBudget * options.refine_budget;
    Interval part;
    if (affordable && !ibp && options.method == Method::kAlpha) {
      part.hi = crown->backward(node, c[o]).hi;
      if (slopes != nullptr) slopes->resize(c.size());
      part.lo = crown->optimized_lower(node, c[o], lower_coef, goal,
                                       slopes != nullptr ? &(*slopes)[o] : nullptr);
    } else if (affordable && !ibp) {
      part = crown->backward(node, c[o], lower_coef);
    } else {
      part = box_of(c[o], ibp ? *(*ibp)[node] : crown->bounds(node));
    }
    if (crown && options.intersect_ibp) {
      Interval loose = box_of(c[o], crown->bounds(node));
      intersect(part, loose.lo, loose.hi);
    }
    total.lo += part.lo;
    total.hi += part.hi;
  }
  return total;
}

common::Result<std::vector<Interval>> output_bounds(const Model& model, const Interval& input,
                                                    const Options& options) {
  const Dag& dag = model.dag();
  std::vector<Interval> out;
  if (options.method == Method::kIbp) {
    ASSIGN_OR_RETURN(auto values, ibp_run(model, input, false));
    for (int o : dag.outputs()) out.push_back(*values[o]);
    return out;
  }
  RETURN_IF_ERROR(check_input(model, input));
  Crown crown(model, options);
  RETURN_IF_ERROR(crown.forward(input));
  for (int o : dag.outputs()) {
    Eigen::Index n = model.numel(o);
    if (crown.row_cost(o) * n > kOutputBudget * options.refine_budget) {
      out.push_back(crown.bounds(o));  // too costly: the (refined) IBP bounds
      continue;
    }
    Interval b;
    if (options.method == Method::kAlpha) {
      // Both sides tuned: the upper bound of y is minus the lower bound of -y.
      Mat both(2 * n, n);
      both << Mat::Identity(n, n), -Mat::Identity(n, n);
      Vec lower = crown.optimized_lower(o, both);
      b = {lower.head(n), -lower.tail(n)};
    } else {
      b = crown.backward(o, Mat::Identity(n, n));
    }
    if (options.intersect_ibp) {
      intersect(b, crown.bounds(o).lo, crown.bounds(o).hi);
    }
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace propdag

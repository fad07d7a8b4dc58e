// CROWN: bounds of a node as linear functions of the inputs, found by walking the reverse
// topological order from the node and replacing each op's output by its linear relaxation.
// Shared values and residual connections need no special case: coefficients reaching a node
// from several successors are summed before the node is processed.
#include "propdag/crown.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace propdag {

namespace {

// Intersects two sound bounds of the same values. Where rounding makes them cross (both are exact
// up to rounding, e.g. on a one-point box), the crossed pair is swapped so the result still spans
// both.
void intersect(Interval& a, const Vec& lo, const Vec& hi) {
  Vec l = a.lo.cwiseMax(lo), h = a.hi.cwiseMin(hi);
  a.lo = l.cwiseMin(h);
  a.hi = l.cwiseMax(h);
}

}  // namespace

namespace internal {

common::Status Crown::forward(const Interval& input, const std::vector<Interval>* prior,
                              const std::vector<NeuronSplit>* splits) {
  const Dag& dag = m_.dag();
  input_ = input;
  empty_ = false;
  splits_.clear();
  splits_at_.assign(dag.size(), {});
  if (splits != nullptr) {
    for (const NeuronSplit& s : *splits) {
      if (s.node < 0 || s.node >= dag.size() || s.index < 0 || s.index >= m_.numel(s.node))
        return m_.graph().error("a neuron split names no element of the network");
      splits_at_[s.node].push_back(static_cast<int>(splits_.size()));
      splits_.push_back(s);
    }
  }
  offset_.assign(dag.size(), 0);
  Eigen::Index at = 0;
  for (int i : dag.inputs()) offset_[i] = at, at += m_.numel(i);
  if (opt_.report != nullptr) ++opt_.report->boxes;
  const std::vector<RefineRows> kinds = refine_rows(m_);
  const std::vector<double> cost = row_costs(kinds);
  std::vector<double> out_rows = output_rows_;
  if (out_rows.size() != dag.outputs().size()) {
    out_rows.clear();
    for (int o : dag.outputs()) out_rows.push_back(static_cast<double>(m_.numel(o)));
  }
  const bool binding = budget_binding(m_, opt_, kinds, cost, out_rows);
  b_.resize(dag.size());
  for (int n = 0; n < dag.size(); ++n) {  // Dag nodes are stored topologically
    if (m_.op(n) == nullptr) {            // a graph input (a ReLU on it may be split too)
      b_[n] = {input.lo.segment(offset_[n], m_.numel(n)),
               input.hi.segment(offset_[n], m_.numel(n))};
      if (!narrow_by_splits(n, b_[n])) {
        empty_ = true;
        return {};
      }
      continue;
    }
    std::vector<const Interval*> in;
    for (int p : dag.node(n).inputs) in.push_back(p >= 0 ? &b_[p] : nullptr);
    b_[n] = m_.op(n)->interval(in);
    if (prior != nullptr && static_cast<int>(prior->size()) == dag.size() &&
        (*prior)[n].size() == b_[n].size())
      intersect(b_[n], (*prior)[n].lo, (*prior)[n].hi);
    if (!narrow_by_splits(n, b_[n])) {
      empty_ = true;
      return {};
    }
    if (kinds[n] == RefineRows::kNone) continue;
    const std::vector<Eigen::Index> rows =
        refined_rows(n, refine_kind(m_, opt_, n, kinds[n], binding, cost[n]));
    if (refine_rows_choice(opt_, cost[n], static_cast<int64_t>(rows.size())) && !refine(n, rows)) {
      empty_ = true;
      return {};
    }
  }
  return {};
}

bool Crown::narrow_by_splits(int node, Interval& b) const {
  for (int k : splits_at_[node]) {
    const NeuronSplit& s = splits_[k];
    double& lo = b.lo[s.index];
    double& hi = b.hi[s.index];
    // Rounding may put a bound a little on the wrong side of 0 where the element reaches 0.
    const double slack = 1e-9 * (1 + std::max(std::abs(lo), std::abs(hi)));
    if (s.active) {
      if (hi < -slack) return false;
      lo = std::max(lo, 0.0), hi = std::max(hi, 0.0);
    } else {
      if (lo > slack) return false;
      lo = std::min(lo, 0.0), hi = std::min(hi, 0.0);
    }
  }
  return true;
}

double Crown::row_cost(int node) const {
  double elements = 0;
  for (int n : m_.dag().backward_order(node))
    elements += m_.numel(n) + (m_.op(n) ? m_.op(n)->weight_entries() : 0);
  return elements;
}

double Crown::row_time_cost(int node) const {
  double elements = 0;
  for (int n : m_.dag().backward_order(node)) {
    elements += m_.numel(n);
    if (m_.op(n) == nullptr) continue;
    const auto dense = static_cast<double>(m_.op(n)->dense_weight_entries());
    elements += static_cast<double>(m_.op(n)->weight_entries()) - dense + kDenseEntryCost * dense;
  }
  return elements;
}

std::vector<double> Crown::row_costs(const std::vector<RefineRows>& kinds) const {
  std::vector<double> cost(kinds.size(), 0);
  for (size_t n = 0; n < kinds.size(); ++n)
    if (kinds[n] != RefineRows::kNone) cost[n] = row_cost(static_cast<int>(n));
  if (std::isinf(opt_.refine_budget)) return cost;
  for (int o : m_.dag().outputs())
    if (cost[o] == 0) cost[o] = row_cost(o);
  return cost;
}

std::vector<Eigen::Index> Crown::refined_rows(int node, RefineRows kind) const {
  std::vector<Eigen::Index> rows = rows_to_refine(kind, b_[node]);
  if (splits_at_[node].empty()) return rows;
  for (int k : splits_at_[node]) rows.push_back(splits_[k].index);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

bool Crown::refine(int node, const std::vector<Eigen::Index>& rows) {
  const auto r = static_cast<Eigen::Index>(rows.size());
  Mat id = Mat::Zero(r, m_.numel(node));  // the rows of the identity
  for (Eigen::Index i = 0; i < r; ++i) id(i, rows[i]) = 1;
  const Interval got = backward(node, id);
  Interval c = b_[node];  // rows left out keep their bounds
  for (Eigen::Index i = 0; i < r; ++i) c.lo[rows[i]] = got.lo[i], c.hi[rows[i]] = got.hi[i];
  if (!narrow_by_splits(node, c)) return false;
  intersect(b_[node], c.lo, c.hi);
  return true;
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
    } else if (r.kind == Relaxation::Kind::kLinear) {
      Mat lp = lam.cwiseMax(0.0), ln = lam.cwiseMin(0.0), op_ = om.cwiseMax(0.0),
          on = om.cwiseMin(0.0);
      w.lb += lp * r.lo_bias + ln * r.up_bias;
      w.ub += op_ * r.up_bias + on * r.lo_bias;
      for (int slot : {0, 1}) {
        const SpMat &lo = slot ? r.lo_map1 : r.lo_map, &up = slot ? r.up_map1 : r.up_map;
        if (lo.rows() == 0) continue;
        accumulate(w.lam[d.inputs[slot]], Mat(lp * lo) + Mat(ln * up));
        accumulate(w.om[d.inputs[slot]], Mat(op_ * up) + Mat(on * lo));
      }
    } else {
      const Interval& o = b_[node];
      w.lb += lam.cwiseMax(0.0) * o.lo + lam.cwiseMin(0.0) * o.hi;
      w.ub += om.cwiseMax(0.0) * o.hi + om.cwiseMin(0.0) * o.lo;
    }
  }
  w.lam[node] = Mat();
  w.om[node] = Mat();
}

}  // namespace internal

namespace {

using internal::Crown;

Interval box_of(const Mat& c, const Interval& y) {
  Vec center = (y.lo + y.hi) * 0.5, radius = (y.hi - y.lo) * 0.5;
  Vec mid = c * center, rad = c.cwiseAbs() * radius;
  return {mid - rad, mid + rad};
}

// The rows of a final pass that the budget judges (BoundsIO::budget_rows).
Eigen::Index judged_rows(Eigen::Index rows, const BoundsIO& io) {
  return io.budget_rows > 0 ? std::min(rows, io.budget_rows) : rows;
}

}  // namespace

common::Status check_input(const Model& model, const Interval& input) {
  if (input.size() == model.input_size()) return {};
  return model.graph().error("input box has " + std::to_string(input.size()) +
                             " elements, the model takes " + std::to_string(model.input_size()));
}

common::Result<Interval> linear_bounds(const Model& model, const Interval& input,
                                       const std::vector<Mat>& c, const Options& options,
                                       const BoundsIO& io) {
  const Dag& dag = model.dag();
  if (c.size() != dag.outputs().size())
    return model.graph().error("one objective matrix per graph output is needed");
  RETURN_IF_ERROR(check_input(model, input));
  Eigen::Index rows = 0;
  for (const Mat& m : c) rows = std::max(rows, m.rows());
  Interval total{Vec::Zero(rows), Vec::Zero(rows)};
  if (io.lower_coef != nullptr) *io.lower_coef = Mat::Zero(rows, input.size());
  if (io.empty != nullptr) *io.empty = false;
  if (io.split_scores != nullptr) io.split_scores->assign(dag.size(), Vec());
  int parts = 0;
  for (const Mat& m : c) parts += m.size() != 0;
  const Vec* goal = parts > 1 ? nullptr : io.goal;  // the goal is for the sum of the parts
  std::optional<std::vector<std::optional<Interval>>> ibp;
  std::optional<Crown> crown;
  if (options.method == Method::kIbp) {
    ASSIGN_OR_RETURN(ibp, ibp_run(model, input, false));
    if (io.node_bounds != nullptr) io.node_bounds->clear();
  } else {
    crown.emplace(model, options);
    std::vector<double> out_rows;
    out_rows.reserve(c.size());
    for (const Mat& m : c)
      out_rows.push_back(m.size() == 0 ? 0 : static_cast<double>(judged_rows(rows, io)));
    crown->set_output_rows(std::move(out_rows));
    RETURN_IF_ERROR(crown->forward(input, io.node_bounds, io.splits));
    if (io.node_bounds != nullptr) *io.node_bounds = crown->all_bounds();
    if (crown->empty()) {  // no input meets the splits: every bound holds
      if (io.empty != nullptr) *io.empty = true;
      total.lo.setConstant(std::numeric_limits<double>::infinity());
      total.hi.setConstant(-std::numeric_limits<double>::infinity());
      return total;
    }
  }
  for (size_t o = 0; o < c.size(); ++o) {
    if (c[o].size() == 0) continue;
    int node = dag.outputs()[o];
    if (c[o].cols() != model.numel(node) || c[o].rows() != rows)
      return model.graph().error("objective matrix for output " + std::to_string(o) +
                                 " has the wrong size");
    bool affordable =
        ibp || internal::output_affordable(
                   options, crown->row_cost(node) * static_cast<double>(judged_rows(rows, io)), 1);
    Interval part;
    if (affordable && !ibp && options.method == Method::kAlpha) {
      part.hi = crown->backward(node, c[o]).hi;
      if (io.slopes != nullptr) io.slopes->resize(c.size());
      part.lo = crown->optimized_lower(node, c[o], io.lower_coef, goal,
                                       io.slopes != nullptr ? &(*io.slopes)[o] : nullptr,
                                       parts == 1 ? io.split_multipliers : nullptr);
    } else if (affordable && !ibp) {
      part = crown->backward(node, c[o], io.lower_coef);
    } else {
      part = box_of(c[o], ibp ? *(*ibp)[node] : crown->bounds(node));
    }
    if (crown && options.intersect_ibp) {
      Interval loose = box_of(c[o], crown->bounds(node));
      intersect(part, loose.lo, loose.hi);
    }
    if (crown && affordable && io.split_scores != nullptr) {
      Eigen::Index row = 0;
      if (goal != nullptr && goal->size() == rows) (part.lo - *goal).maxCoeff(&row);
      crown->add_split_scores(node, c[o].row(row), *io.split_scores);
    }
    total.lo += part.lo;
    total.hi += part.hi;
  }
  return total;
}

common::Result<Interval> linear_bounds(const Model& model, const Interval& input,
                                       const std::vector<Mat>& c, const Options& options,
                                       Mat* lower_coef, const Vec* goal, Slopes* slopes,
                                       std::vector<Interval>* node_bounds) {
  BoundsIO io;
  io.lower_coef = lower_coef;
  io.goal = goal;
  io.slopes = slopes;
  io.node_bounds = node_bounds;
  return linear_bounds(model, input, c, options, io);
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
    if (!internal::output_affordable(options, crown.row_cost(o) * static_cast<double>(n), 1)) {
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

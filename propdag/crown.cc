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
  const Dag& dag = model_.dag();
  input_box_ = input;
  empty_ = false;
  splits_.clear();
  splits_at_.assign(dag.size(), {});
  if (splits != nullptr) {
    for (const NeuronSplit& s : *splits) {
      if (s.node < 0 || s.node >= dag.size() || s.index < 0 || s.index >= model_.numel(s.node))
        return model_.graph().error("a neuron split names no element of the network");
      splits_at_[s.node].push_back(static_cast<int>(splits_.size()));
      splits_.push_back(s);
    }
  }
  input_offset_.assign(dag.size(), 0);
  Eigen::Index at = 0;
  for (int i : dag.inputs()) input_offset_[i] = at, at += model_.numel(i);
  if (options_.report != nullptr) ++options_.report->boxes;
  const std::vector<RefineRows> kinds = refine_rows(model_);
  const std::vector<double> cost = row_costs(kinds);
  std::vector<double> out_rows = output_rows_;
  if (out_rows.size() != dag.outputs().size()) {
    out_rows.clear();
    for (int o : dag.outputs()) out_rows.push_back(static_cast<double>(model_.numel(o)));
  }
  const bool binding = budget_binding(model_, options_, kinds, cost, out_rows);
  node_bounds_.resize(dag.size());
  for (int n = 0; n < dag.size(); ++n) {  // Dag nodes are stored topologically
    if (model_.op(n) == nullptr) {        // a graph input (a ReLU on it may be split too)
      node_bounds_[n] = {input.lo.segment(input_offset_[n], model_.numel(n)),
                         input.hi.segment(input_offset_[n], model_.numel(n))};
      if (!narrow_by_splits(n, node_bounds_[n])) {
        empty_ = true;
        return {};
      }
      continue;
    }
    std::vector<const Interval*> in;
    for (int p : dag.node(n).inputs) in.push_back(p >= 0 ? &node_bounds_[p] : nullptr);
    node_bounds_[n] = model_.op(n)->interval(in);
    if (prior != nullptr && static_cast<int>(prior->size()) == dag.size() &&
        (*prior)[n].size() == node_bounds_[n].size())
      intersect(node_bounds_[n], (*prior)[n].lo, (*prior)[n].hi);
    if (!narrow_by_splits(n, node_bounds_[n])) {
      empty_ = true;
      return {};
    }
    if (kinds[n] == RefineRows::kNone) continue;
    const std::vector<Eigen::Index> rows =
        refined_rows(n, refine_kind(model_, options_, n, kinds[n], binding, cost[n]));
    if (refine_rows_choice(options_, cost[n], static_cast<int64_t>(rows.size())) &&
        !refine(n, rows)) {
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
  for (int n : model_.dag().backward_order(node))
    elements += model_.numel(n) + (model_.op(n) ? model_.op(n)->weight_entries() : 0);
  return elements;
}

double Crown::row_time_cost(int node) const {
  double elements = 0;
  for (int n : model_.dag().backward_order(node)) {
    elements += model_.numel(n);
    if (model_.op(n) == nullptr) continue;
    const auto dense = static_cast<double>(model_.op(n)->dense_weight_entries());
    elements +=
        static_cast<double>(model_.op(n)->weight_entries()) - dense + kDenseEntryCost * dense;
  }
  return elements;
}

std::vector<double> Crown::row_costs(const std::vector<RefineRows>& kinds) const {
  std::vector<double> cost(kinds.size(), 0);
  for (size_t n = 0; n < kinds.size(); ++n)
    if (kinds[n] != RefineRows::kNone) cost[n] = row_cost(static_cast<int>(n));
  if (std::isinf(options_.refine_budget)) return cost;
  for (int o : model_.dag().outputs())
    if (cost[o] == 0) cost[o] = row_cost(o);
  return cost;
}

std::vector<Eigen::Index> Crown::refined_rows(int node, RefineRows kind) const {
  std::vector<Eigen::Index> rows = rows_to_refine(kind, node_bounds_[node]);
  if (splits_at_[node].empty()) return rows;
  for (int k : splits_at_[node]) rows.push_back(splits_[k].index);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

bool Crown::refine(int node, const std::vector<Eigen::Index>& rows) {
  const auto count = static_cast<Eigen::Index>(rows.size());
  Mat unit_rows = Mat::Zero(count, model_.numel(node));  // the rows of the identity
  for (Eigen::Index i = 0; i < count; ++i) unit_rows(i, rows[i]) = 1;
  const Interval crown = backward(node, unit_rows);
  Interval refined = node_bounds_[node];  // rows left out keep their bounds
  for (Eigen::Index i = 0; i < count; ++i)
    refined.lo[rows[i]] = crown.lo[i], refined.hi[rows[i]] = crown.hi[i];
  if (!narrow_by_splits(node, refined)) return false;
  intersect(node_bounds_[node], refined.lo, refined.hi);
  return true;
}

Interval Crown::backward(int target, const Mat& c, Mat* lower_coef) {
  const Dag& dag = model_.dag();
  std::vector<int> order = dag.backward_order(target);
  double widest = 0;
  for (int n : order) widest = std::max<double>(widest, model_.numel(n));
  Eigen::Index rows = c.rows();
  Eigen::Index chunk =
      std::max<Eigen::Index>(1, static_cast<Eigen::Index>(options_.chunk_entries / widest));
  Interval out{Vec(rows), Vec(rows)};
  for (Eigen::Index first_row = 0; first_row < rows; first_row += chunk) {
    Eigen::Index chunk_rows = std::min(chunk, rows - first_row);
    Backward pass{std::vector<Mat>(dag.size()), std::vector<Mat>(dag.size()), Vec::Zero(chunk_rows),
                  Vec::Zero(chunk_rows)};
    pass.lam[target] = c.middleRows(first_row, chunk_rows);
    pass.om[target] = pass.lam[target];
    lower_coef_ = lower_coef;
    coef_row0_ = first_row;
    for (int n : order) step(n, pass);
    lower_coef_ = nullptr;
    out.lo.segment(first_row, chunk_rows) = pass.lb;
    out.hi.segment(first_row, chunk_rows) = pass.ub;
  }
  return out;
}

void Crown::concretize(int node, Backward& pass) {
  Vec lo = input_box_.lo.segment(input_offset_[node], model_.numel(node));
  Vec hi = input_box_.hi.segment(input_offset_[node], model_.numel(node));
  Vec center = (lo + hi) * 0.5, radius = (hi - lo) * 0.5;
  pass.lb += pass.lam[node] * center - pass.lam[node].cwiseAbs() * radius;
  if (lower_coef_ != nullptr)
    lower_coef_->block(coef_row0_, input_offset_[node], pass.lam[node].rows(),
                       pass.lam[node].cols()) += pass.lam[node];
  pass.ub += pass.om[node] * center + pass.om[node].cwiseAbs() * radius;
}

Relaxation Crown::relax_at(int node) const {
  std::vector<const Interval*> in;
  for (int p : model_.dag().node(node).inputs) in.push_back(p >= 0 ? &node_bounds_[p] : nullptr);
  return model_.op(node)->relax(in, node_bounds_[node]);
}

void Crown::step(int node, Backward& pass) {
  if (pass.lam[node].size() == 0) return;
  const BoundOp* op = model_.op(node);
  if (op == nullptr) {
    concretize(node, pass);
  } else {
    const DagNode& dag_node = model_.dag().node(node);
    Relaxation relax = relax_at(node);
    const Mat &lam = pass.lam[node], &om = pass.om[node];
    if (relax.kind == Relaxation::Kind::kAffine) {
      for (const LinearTerm& t : *relax.terms) {
        accumulate(pass.lam[dag_node.inputs[t.slot]], times(lam, t));
        accumulate(pass.om[dag_node.inputs[t.slot]], times(om, t));
      }
      pass.lb += lam * *relax.bias;
      pass.ub += om * *relax.bias;
    } else if (relax.kind == Relaxation::Kind::kElementwise) {
      Mat lam_pos = lam.cwiseMax(0.0), lam_neg = lam.cwiseMin(0.0), om_pos = om.cwiseMax(0.0),
          om_neg = om.cwiseMin(0.0);
      pass.lb += lam_pos * relax.lo_bias + lam_neg * relax.up_bias;
      pass.ub += om_pos * relax.up_bias + om_neg * relax.lo_bias;
      accumulate(pass.lam[dag_node.inputs[0]],
                 scale_cols(lam_pos, relax.lo_slope) + scale_cols(lam_neg, relax.up_slope));
      accumulate(pass.om[dag_node.inputs[0]],
                 scale_cols(om_pos, relax.up_slope) + scale_cols(om_neg, relax.lo_slope));
    } else if (relax.kind == Relaxation::Kind::kLinear) {
      Mat lam_pos = lam.cwiseMax(0.0), lam_neg = lam.cwiseMin(0.0), om_pos = om.cwiseMax(0.0),
          om_neg = om.cwiseMin(0.0);
      pass.lb += lam_pos * relax.lo_bias + lam_neg * relax.up_bias;
      pass.ub += om_pos * relax.up_bias + om_neg * relax.lo_bias;
      accumulate(pass.lam[dag_node.inputs[0]],
                 Mat(lam_pos * relax.lo_map) + Mat(lam_neg * relax.up_map));
      accumulate(pass.om[dag_node.inputs[0]],
                 Mat(om_pos * relax.up_map) + Mat(om_neg * relax.lo_map));
    } else {
      const Interval& node_bounds = node_bounds_[node];
      pass.lb += lam.cwiseMax(0.0) * node_bounds.lo + lam.cwiseMin(0.0) * node_bounds.hi;
      pass.ub += om.cwiseMax(0.0) * node_bounds.hi + om.cwiseMin(0.0) * node_bounds.lo;
    }
  }
  pass.lam[node] = Mat();
  pass.om[node] = Mat();
}

}  // namespace internal

namespace {

using internal::Crown;

Interval box_of(const Mat& c, const Interval& y) {
  Vec center = (y.lo + y.hi) * 0.5, radius = (y.hi - y.lo) * 0.5;
  Vec mid = c * center, rad = c.cwiseAbs() * radius;
  return {mid - rad, mid + rad};
}

// The rows of a final pass that the budget judges (BoundsIn::budget_rows).
Eigen::Index judged_rows(Eigen::Index rows, const BoundsIn& in) {
  return in.budget_rows > 0 ? std::min(rows, in.budget_rows) : rows;
}

// Where linear_bounds works on an output that may also be given as an input (the tuned slopes,
// the split multipliers): `out_field` when it is wanted, else `scratch`; it starts as a copy of
// `given` (empty without one). Null when it is neither given nor wanted.
template <typename T>
T* working_copy(const T* given, bool wanted, T* out_field, T& scratch) {
  if (given == nullptr && !wanted) return nullptr;
  T* at = wanted ? out_field : &scratch;
  *at = given != nullptr ? *given : T();
  return at;
}

}  // namespace

common::Status check_input(const Model& model, const Interval& input) {
  if (input.size() == model.input_size()) return {};
  return model.graph().error("input box has " + std::to_string(input.size()) +
                             " elements, the model takes " + std::to_string(model.input_size()));
}

common::Result<Interval> linear_bounds(const Model& model, const Interval& input,
                                       const std::vector<Mat>& c, const Options& options,
                                       const BoundsIn& in, BoundsOut* out) {
  const Dag& dag = model.dag();
  if (c.size() != dag.outputs().size())
    return model.graph().error("one objective matrix per graph output is needed");
  RETURN_IF_ERROR(check_input(model, input));
  BoundsOut none;
  BoundsOut& got = out != nullptr ? *out : none;
  const BoundsOut::Want want = got.want;
  Eigen::Index rows = 0;
  for (const Mat& m : c) rows = std::max(rows, m.rows());
  Interval total{Vec::Zero(rows), Vec::Zero(rows)};
  Mat* lower_coef = want.lower_coef ? &got.lower_coef : nullptr;
  if (lower_coef != nullptr) *lower_coef = Mat::Zero(rows, input.size());
  got.empty = false;
  std::vector<Vec>* split_scores = want.split_scores ? &got.split_scores : nullptr;
  if (split_scores != nullptr) split_scores->assign(dag.size(), Vec());
  Slopes slopes_scratch;
  Slopes* slopes = working_copy(in.slopes, want.slopes, &got.slopes, slopes_scratch);
  Mat multipliers_scratch;
  Mat* multipliers = working_copy(in.split_multipliers, want.split_multipliers,
                                  &got.split_multipliers, multipliers_scratch);
  int parts = 0;
  for (const Mat& m : c) parts += m.size() != 0;
  const Vec* goal = parts > 1 ? nullptr : in.goal;  // the goal is for the sum of the parts
  std::optional<std::vector<std::optional<Interval>>> ibp;
  std::optional<Crown> crown;
  if (options.method == Method::kIbp) {
    ASSIGN_OR_RETURN(ibp, ibp_run(model, input, false));
    if (want.node_bounds) got.node_bounds.clear();
  } else {
    crown.emplace(model, options);
    std::vector<double> out_rows;
    out_rows.reserve(c.size());
    for (const Mat& m : c)
      out_rows.push_back(m.size() == 0 ? 0 : static_cast<double>(judged_rows(rows, in)));
    crown->set_output_rows(std::move(out_rows));
    RETURN_IF_ERROR(crown->forward(input, in.node_bounds, in.splits));
    if (want.node_bounds) got.node_bounds = crown->all_bounds();
    if (crown->empty()) {  // no input meets the splits: every bound holds
      got.empty = true;
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
                   options, crown->row_cost(node) * static_cast<double>(judged_rows(rows, in)), 1);
    Interval part;
    if (affordable && !ibp && options.method == Method::kAlpha) {
      part.hi = crown->backward(node, c[o]).hi;
      if (slopes != nullptr) slopes->resize(c.size());
      part.lo = crown->optimized_lower(node, c[o], lower_coef, goal,
                                       slopes != nullptr ? &(*slopes)[o] : nullptr,
                                       parts == 1 ? multipliers : nullptr);
    } else if (affordable && !ibp) {
      part = crown->backward(node, c[o], lower_coef);
    } else {
      part = box_of(c[o], ibp ? *(*ibp)[node] : crown->bounds(node));
    }
    if (crown && options.intersect_ibp) {
      Interval loose = box_of(c[o], crown->bounds(node));
      intersect(part, loose.lo, loose.hi);
    }
    if (crown && affordable && split_scores != nullptr) {
      Eigen::Index row = 0;
      if (goal != nullptr && goal->size() == rows) (part.lo - *goal).maxCoeff(&row);
      crown->add_split_scores(node, c[o].row(row), *split_scores);
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

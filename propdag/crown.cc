// CROWN: bounds of a node as linear functions of the inputs, found by walking the reverse
// topological order from the node and replacing each op's output by its linear relaxation.
// Shared values and residual connections need no special case: coefficients reaching a node
// from several successors are summed before the node is processed.
#include "propdag/crown.h"

#include <algorithm>
#include <cmath>

namespace propdag::internal {

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
  const std::vector<RefineRows>& kinds = model_.crown_plan().kinds;
  const std::vector<double>& cost = model_.crown_plan().row_cost;
  std::vector<double> out_rows = output_rows_;
  if (out_rows.size() != dag.outputs().size()) {
    out_rows.clear();
    for (int o : dag.outputs()) out_rows.push_back(static_cast<double>(model_.numel(o)));
  }
  const bool binding = budget_binding(model_, options_, kinds, cost, out_rows);
  node_bounds_.resize(dag.size());
  relaxations_.assign(dag.size(), std::nullopt);
  kept_.assign(dag.size(), 0);
  for (int n = 0; n < dag.size(); ++n) {  // Dag nodes are stored topologically
    final_nodes_ = n;
    if (model_.op(n) == nullptr) {  // a graph input (a ReLU on it may be split too)
      node_bounds_[n] = {input.lo.segment(input_offset_[n], model_.numel(n)),
                         input.hi.segment(input_offset_[n], model_.numel(n))};
      if (!narrow_by_splits(n, node_bounds_[n])) {
        empty_ = true;
        return {};
      }
      continue;
    }
    std::vector<const Interval*>& in = forward_in_;
    in.clear();
    for (int p : dag.node(n).inputs) in.push_back(p >= 0 ? &node_bounds_[p] : nullptr);
    node_bounds_[n] = model_.op(n)->interval(in);
    nan_as_unbounded(node_bounds_[n]);
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
  final_nodes_ = dag.size();
  return {};
}

// The positive and negative parts as Eigen's cwiseMax(0.0) / cwiseMin(0.0) take them (NaN stays
// NaN), so that 0 * inf is NaN here as in a product of the parts.
inline double pos(double v) { return std::max(v, 0.0); }
inline double neg(double v) { return std::min(v, 0.0); }

void add_by_sign(const Mat& a, const Eigen::Ref<const Vec>& on_pos,
                 const Eigen::Ref<const Vec>& on_neg, Vec& out) {
  double* to = out.data();
  for (Eigen::Index j = 0; j < a.cols(); ++j) {
    const double p = on_pos[j], n = on_neg[j];
    const double* col = a.col(j).data();
    for (Eigen::Index i = 0; i < a.rows(); ++i) to[i] += pos(col[i]) * p + neg(col[i]) * n;
  }
}

void add_scaled_by_sign(const Mat& a, const Vec& on_pos, const Vec& on_neg, Mat& into) {
  if (into.size() == 0) into = Mat::Zero(a.rows(), a.cols());
  for (Eigen::Index j = 0; j < a.cols(); ++j) {
    const double p = on_pos[j], n = on_neg[j];
    const double* col = a.col(j).data();
    double* to = into.col(j).data();
    for (Eigen::Index i = 0; i < a.rows(); ++i) to[i] += pos(col[i]) * p + neg(col[i]) * n;
  }
}

void add_mapped_by_sign(const Mat& a, const SpMat& on_pos, const SpMat& on_neg, Mat& into) {
  if (into.size() == 0) into = Mat::Zero(a.rows(), on_pos.cols());
  const Eigen::Index rows = a.rows();
  // Plain loops: the columns are short (a pass's rows), where Eigen's expressions cost more to
  // set up than to run.
  for (Eigen::Index k = 0; k < on_pos.outerSize(); ++k) {
    const double* from = a.col(k).data();
    for (SpMat::InnerIterator it(on_pos, k); it; ++it) {
      const double v = it.value();
      double* to = into.col(it.col()).data();
      for (Eigen::Index i = 0; i < rows; ++i) to[i] += v * pos(from[i]);
    }
    for (SpMat::InnerIterator it(on_neg, k); it; ++it) {
      const double v = it.value();
      double* to = into.col(it.col()).data();
      for (Eigen::Index i = 0; i < rows; ++i) to[i] += v * neg(from[i]);
    }
  }
}

bool Crown::narrow_by_splits(int node, Interval& bounds) const {
  for (int at : splits_at_[node]) {
    const NeuronSplit& split = splits_[at];
    double& lo = bounds.lo[split.index];
    double& hi = bounds.hi[split.index];
    // Rounding may put a bound a little on the wrong side of 0 where the element reaches 0.
    const double slack = 1e-9 * (1 + std::max(std::abs(lo), std::abs(hi)));
    if (split.active) {
      if (hi < -slack) return false;
      lo = std::max(lo, 0.0), hi = std::max(hi, 0.0);
    } else {
      if (lo > slack) return false;
      lo = std::min(lo, 0.0), hi = std::min(hi, 0.0);
    }
  }
  return true;
}

double Crown::row_cost(int node) const { return model_.crown_plan().row_cost[node]; }

double Crown::row_time_cost(int node) const { return model_.crown_plan().row_time_cost[node]; }

CrownPlan make_crown_plan(const Model& model) {
  const Dag& dag = model.dag();
  CrownPlan plan{refine_rows(model), std::vector<double>(dag.size(), 0),
                 std::vector<double>(dag.size(), 0)};
  // A row's cost sums the elements (and weight entries) of every node its pass crosses.
  std::vector<double> cost(dag.size()), time(dag.size());
  for (int n = 0; n < dag.size(); ++n) {
    cost[n] = time[n] = static_cast<double>(model.numel(n));
    if (model.op(n) == nullptr) continue;
    const auto dense = static_cast<double>(model.op(n)->dense_weight_entries());
    const auto all = static_cast<double>(model.op(n)->weight_entries());
    cost[n] += all;
    time[n] += all - dense + kDenseEntryCost * dense;
  }
  for (int n = 0; n < dag.size(); ++n)
    for (int m : dag.backward_order(n))
      plan.row_cost[n] += cost[m], plan.row_time_cost[n] += time[m];
  return plan;
}

std::vector<Eigen::Index> Crown::refined_rows(int node, RefineRows kind) const {
  std::vector<Eigen::Index> rows = rows_to_refine(kind, node_bounds_[node]);
  if (relevance_ != nullptr && !(*relevance_)[node].empty()) {
    const std::vector<char>& keep = (*relevance_)[node];
    rows.erase(std::remove_if(rows.begin(), rows.end(), [&](Eigen::Index r) { return !keep[r]; }),
               rows.end());
  }
  if (splits_at_[node].empty()) return rows;
  for (int k : splits_at_[node]) rows.push_back(splits_[k].index);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

namespace {

// Rows first_row .. first_row + count of the identity's rows at `unit`, over n columns.
Mat identity_rows(const std::vector<Eigen::Index>& unit, Eigen::Index first_row, Eigen::Index count,
                  Eigen::Index n) {
  Mat id = Mat::Zero(count, n);
  for (Eigen::Index i = 0; i < count; ++i) id(i, unit[first_row + i]) = 1;
  return id;
}

}  // namespace

bool Crown::refine(int node, const std::vector<Eigen::Index>& rows) {
  const auto count = static_cast<Eigen::Index>(rows.size());
  // The identity's rows, made by backward() a chunk at a time where they are needed: all of
  // them at once zeroed count x elements doubles (a 4-layer CNN's 19-case property: 40% of
  // verify's time in memset and page faults).
  const Interval crown = backward(node, Mat(), nullptr, &rows);
  Interval refined = node_bounds_[node];  // rows left out keep their bounds
  for (Eigen::Index i = 0; i < count; ++i)
    refined.lo[rows[i]] = crown.lo[i], refined.hi[rows[i]] = crown.hi[i];
  if (options_.method == Method::kAlpha && options_.alpha_intermediate)
    tune_rows(node, rows, refined);
  if (!narrow_by_splits(node, refined)) return false;
  intersect(node_bounds_[node], refined.lo, refined.hi);
  return true;
}

Interval Crown::backward(int target, const Mat& c, Mat* lower_coef,
                         const std::vector<Eigen::Index>* unit) {
  const Dag& dag = model_.dag();
  std::vector<int> scratch;
  const std::vector<int>& order = dag.backward_schedule(target, scratch);
  double widest = 0;
  for (int n : order) widest = std::max<double>(widest, model_.numel(n));
  const Eigen::Index rows =
      c.size() == 0 && unit != nullptr ? static_cast<Eigen::Index>(unit->size()) : c.rows();
  Eigen::Index chunk =
      std::max<Eigen::Index>(1, static_cast<Eigen::Index>(options_.chunk_entries / widest));
  Interval out{Vec(rows), Vec(rows)};
  for (Eigen::Index first_row = 0; first_row < rows; first_row += chunk) {
    Eigen::Index chunk_rows = std::min(chunk, rows - first_row);
    Backward pass{std::vector<Mat>(dag.size()), std::vector<Mat>(dag.size()), Vec::Zero(chunk_rows),
                  Vec::Zero(chunk_rows)};
    if (unit == nullptr || !first_step(target, *unit, first_row, pass)) {
      if (c.size() == 0 && unit != nullptr) {
        pass.lam[target] = identity_rows(*unit, first_row, chunk_rows, model_.numel(target));
      } else {
        pass.lam[target] = c.middleRows(first_row, chunk_rows);
      }
      pass.om[target] = pass.lam[target];
    }
    lower_coef_ = lower_coef;
    coef_row0_ = first_row;
    for (int n : order) step(n, pass);
    lower_coef_ = nullptr;
    out.lo.segment(first_row, chunk_rows) = pass.lb;
    out.hi.segment(first_row, chunk_rows) = pass.ub;
  }
  nan_as_unbounded(out);
  return out;
}

bool Crown::first_step(int target, const std::vector<Eigen::Index>& unit, Eigen::Index first_row,
                       Backward& pass) const {
  if (model_.op(target) == nullptr) return false;
  const Relaxation& relax = relax_at(target);
  if (relax.kind != Relaxation::Kind::kAffine) return false;
  const Eigen::Index rows = pass.lb.size();
  const DagNode& dag_node = model_.dag().node(target);
  for (const LinearTerm& t : *relax.terms) {
    Mat lam;
    if (t.dense) {  // the weights' rows
      lam.resize(rows, t.wf.size() == 0 ? t.w.cols() : t.wf.cols());
      for (Eigen::Index i = 0; i < rows; ++i)
        if (t.wf.size() == 0)
          lam.row(i) = t.w.row(unit[first_row + i]);
        else
          lam.row(i) = t.wf.row(unit[first_row + i]).cast<double>();
    } else if (!t.gather) {  // the sparse matrix's rows (row-major), not a product by them
      const SpMat& sp = t.sparse();
      lam = Mat::Zero(rows, sp.cols());
      for (Eigen::Index i = 0; i < rows; ++i)
        for (SpMat::InnerIterator it(sp, unit[first_row + i]); it; ++it)
          lam(i, it.col()) = it.value();
    } else {
      lam = times(identity_rows(unit, first_row, rows, model_.numel(target)), t);
    }
    Mat om = lam;
    accumulate(pass.lam[dag_node.inputs[t.slot]], std::move(lam));
    accumulate(pass.om[dag_node.inputs[t.slot]], std::move(om));
  }
  for (Eigen::Index i = 0; i < rows; ++i) pass.lb[i] = (*relax.bias)[unit[first_row + i]];
  pass.ub = pass.lb;
  return true;
}

void Crown::concretize(int node, Backward& pass) {
  const auto lo = input_box_.lo.segment(input_offset_[node], model_.numel(node));
  const auto hi = input_box_.hi.segment(input_offset_[node], model_.numel(node));
  // Each coefficient takes the end its sign selects: from the centre and radius, a small end next
  // to a huge one rounds away (x in [-2, 1e22] gave x >= 0).
  const Mat& lam = pass.lam[node];
  add_by_sign(lam, lo, hi, pass.lb);
  if (lower_coef_ != nullptr)
    lower_coef_->block(coef_row0_, input_offset_[node], lam.rows(), lam.cols()) += lam;
  add_by_sign(pass.om[node], hi, lo, pass.ub);
}

const Relaxation& Crown::relax_at(int node) const {
  if (const Relaxation* fixed = model_.op(node)->fixed_relaxation()) return *fixed;
  std::optional<Relaxation>& slot = relaxations_[node];
  if (kept_[node] != 0) return *slot;
  std::vector<const Interval*>& in = relax_in_;
  in.clear();
  for (int p : model_.dag().node(node).inputs) in.push_back(p >= 0 ? &node_bounds_[p] : nullptr);
  slot = model_.op(node)->relax(in, node_bounds_[node]);
  kept_[node] = node < final_nodes_ ? 1 : 0;
  return *slot;
}

const Relaxation& Crown::relax_with_second(int node) const {
  const Relaxation& relax = relax_at(node);
  std::optional<Relaxation>& slot = relaxations_[node];
  // A fixed relaxation is affine: no planes.
  if (relax.kind != Relaxation::Kind::kLinear || !slot || &*slot != &relax ||
      relax.second != nullptr)
    return relax;
  std::vector<const Interval*>& in = relax_in_;
  in.clear();
  for (int p : model_.dag().node(node).inputs) in.push_back(p >= 0 ? &node_bounds_[p] : nullptr);
  if (std::optional<Relaxation> s = model_.op(node)->second_relax(in))
    slot->second = std::make_shared<const Relaxation>(std::move(*s));
  return *slot;
}

void Crown::step(int node, Backward& pass) {
  if (pass.lam[node].size() == 0) return;
  const BoundOp* op = model_.op(node);
  if (op == nullptr) {
    concretize(node, pass);
  } else {
    const DagNode& dag_node = model_.dag().node(node);
    const Relaxation& relax = relax_at(node);
    const Mat &lam = pass.lam[node], &om = pass.om[node];
    if (relax.kind == Relaxation::Kind::kAffine) {
      for (const LinearTerm& t : *relax.terms) {
        add_times(pass.lam[dag_node.inputs[t.slot]], lam, t);
        add_times(pass.om[dag_node.inputs[t.slot]], om, t);
      }
      pass.lb += lam * *relax.bias;
      pass.ub += om * *relax.bias;
    } else if (relax.kind == Relaxation::Kind::kElementwise) {
      add_by_sign(lam, relax.lo_bias, relax.up_bias, pass.lb);
      add_by_sign(om, relax.up_bias, relax.lo_bias, pass.ub);
      add_scaled_by_sign(lam, relax.lo_slope, relax.up_slope, pass.lam[dag_node.inputs[0]]);
      add_scaled_by_sign(om, relax.up_slope, relax.lo_slope, pass.om[dag_node.inputs[0]]);
    } else if (relax.kind == Relaxation::Kind::kLinear) {
      add_by_sign(lam, relax.lo_bias, relax.up_bias, pass.lb);
      add_by_sign(om, relax.up_bias, relax.lo_bias, pass.ub);
      for (int slot : {0, 1}) {
        const SpMat &lo = slot ? relax.lo_map1() : relax.lo_map(),
                    &up = slot ? relax.up_map1() : relax.up_map();
        if (lo.rows() == 0) continue;
        add_mapped_by_sign(lam, lo, up, pass.lam[dag_node.inputs[slot]]);
        add_mapped_by_sign(om, up, lo, pass.om[dag_node.inputs[slot]]);
      }
    } else {
      const Interval& node_bounds = node_bounds_[node];
      add_by_sign(lam, node_bounds.lo, node_bounds.hi, pass.lb);
      add_by_sign(om, node_bounds.hi, node_bounds.lo, pass.ub);
    }
  }
  pass.lam[node] = Mat();
  pass.om[node] = Mat();
}

void Crown::add_split_scores(int target, const Mat& c, std::vector<Vec>& scores) const {
  const Dag& dag = model_.dag();
  std::vector<int> scratch;
  const std::vector<int>& order = dag.backward_schedule(target, scratch);
  std::vector<const Relaxation*> rel(dag.size(), nullptr);
  for (int n : order)
    if (model_.op(n) != nullptr) rel[n] = &relax_at(n);
  const LowerPass pass = lower_pass(order, rel, std::vector<Mat>(dag.size()), Mat(), target, c);
  for (int n : order) {
    const BoundOp* op = model_.op(n);
    const Mat& lam = pass.lam[n];
    if (op == nullptr || !op->linear_on_each_side_of_zero() || lam.size() == 0) continue;
    const int input = dag.node(n).inputs[0];
    if (input < 0) continue;
    const Interval& input_bounds = node_bounds_[input];
    if (scores[input].size() == 0) scores[input] = Vec::Zero(input_bounds.size());
    for (Eigen::Index j = 0; j < input_bounds.size(); ++j) {
      const double lo = input_bounds.lo[j], hi = input_bounds.hi[j];
      if (lo < 0 && hi > 0) scores[input][j] += std::abs(lam(0, j)) * (-lo * hi / (hi - lo));
    }
  }
}

}  // namespace propdag::internal

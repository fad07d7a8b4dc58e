// linear_bounds and output_bounds (engine.h) on the CROWN engine (crown.cc, alpha.cc) or IBP:
// what a call takes (BoundsIn) and gives (BoundsOut) around the engine's forward and backward
// passes.
#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "propdag/crown.h"
#include "propdag/engine.h"

namespace propdag {
namespace {

using internal::Crown;
using internal::intersect;

// The range of c y over the box y, each end from the ends of y the coefficient's sign selects
// (from the centre and radius, a small end next to a huge one rounds away).
Interval box_of(const Mat& c, const Interval& y) {
  const Mat pos = c.cwiseMax(0.0), neg = c.cwiseMin(0.0);
  return {pos * y.lo + neg * y.hi, pos * y.hi + neg * y.lo};
}

// The rows of a final pass that the budget judges (BoundsIn::budget_rows, else
// Options::budget_rows).
Eigen::Index judged_rows(Eigen::Index rows, const BoundsIn& in, const Options& options) {
  const Eigen::Index judged = in.budget_rows > 0 ? in.budget_rows : options.budget_rows;
  return judged > 0 ? std::min(rows, judged) : rows;
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

// What linear_bounds bounds each part of the objective (one graph output's) with.
struct Parts {
  const Model& model;
  const Options& options;
  const BoundsIn& in;
  Eigen::Index rows;  // of every objective matrix
  const Vec* goal;    // BoundsIn::goal where the objective has one part, else null
  int parts;          // non-empty objective matrices
  Mat* lower_coef;    // the outputs asked for, or null
  Vec* raw_lo;        // with lower_coef: the parts' lower bounds before any intersection
  Slopes* slopes;
  Mat* multipliers;
  std::vector<Vec>* split_scores;
  const std::vector<std::optional<Interval>>* ibp;  // IBP: every node's bounds
  Crown* crown;                                     // CROWN and alpha, after forward()
};

// Bounds of c * graph output o, and what `call` asks for of them.
common::Result<Interval> bound_part(const Parts& call, size_t o, const Mat& c) {
  const int node = call.model.dag().outputs()[o];
  if (c.cols() != call.model.numel(node) || c.rows() != call.rows)
    return call.model.graph().error("objective matrix for output " + std::to_string(o) +
                                    " has the wrong size");
  Crown* crown = call.crown;
  const bool ibp = call.ibp != nullptr;
  const bool affordable = ibp || internal::output_affordable(
                                     call.options,
                                     crown->row_cost(node) * static_cast<double>(judged_rows(
                                                                 call.rows, call.in, call.options)),
                                     1);
  Interval part;
  if (affordable && !ibp && call.options.method == Method::kAlpha) {
    part.hi = crown->backward(node, c).hi;
    if (call.slopes != nullptr) call.slopes->resize(call.model.dag().outputs().size());
    part.lo = crown->optimized_lower(node, c, call.lower_coef, call.goal,
                                     call.slopes != nullptr ? &(*call.slopes)[o] : nullptr,
                                     call.parts == 1 ? call.multipliers : nullptr);
  } else if (affordable && !ibp) {
    part = crown->backward(node, c, call.lower_coef);
  } else {
    part = box_of(c, ibp ? *(*call.ibp)[node] : crown->bounds(node));
  }
  // Each part's lower bound is the minimum over the box of its linear function (a constant where
  // it fell back to intervals), until it is intersected below.
  if (call.raw_lo != nullptr) *call.raw_lo += part.lo;
  if (crown != nullptr && call.options.intersect_ibp) {
    Interval loose = box_of(c, crown->bounds(node));
    intersect(part, loose.lo, loose.hi);
  }
  if (crown != nullptr && affordable && call.split_scores != nullptr) {
    Eigen::Index row = 0;
    if (call.goal != nullptr && call.goal->size() == call.rows)
      (part.lo - *call.goal).maxCoeff(&row);
    crown->add_split_scores(node, c.row(row), *call.split_scores);
  }
  return part;
}

}  // namespace

namespace internal {

// The sum of the parts' minima is at most the minimum of their sum, so a_r . x + b_r stays below
// the row. Lowered by 1e-12 of the terms' magnitude, for the rounding of the two ways the minimum
// was summed.
Vec lower_bias(const Mat& a, const Vec& raw_lo, const Interval& box) {
  const Vec at_min = a.cwiseMax(0.0) * box.lo + a.cwiseMin(0.0) * box.hi;
  const Vec size = a.cwiseAbs() * box.lo.cwiseAbs().cwiseMax(box.hi.cwiseAbs());
  return raw_lo - at_min - 1e-12 * (raw_lo.cwiseAbs() + size);
}

}  // namespace internal

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
  Vec raw_lo = Vec::Zero(rows);
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
  const Vec* wanted = in.goal != nullptr ? in.goal : options.goal;
  const Vec* goal = parts > 1 ? nullptr : wanted;  // the goal is for the sum of the parts
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
      out_rows.push_back(m.size() == 0 ? 0 : static_cast<double>(judged_rows(rows, in, options)));
    crown->set_output_rows(std::move(out_rows));
    if (options.objective_cone) crown->set_relevance(internal::cached_relevance(model, c));
    RETURN_IF_ERROR(crown->forward(input, in.node_bounds, in.splits));
    if (want.node_bounds) got.node_bounds = crown->all_bounds();
    if (crown->empty()) {  // no input meets the splits: every bound holds
      got.empty = true;
      total.lo.setConstant(std::numeric_limits<double>::infinity());
      total.hi.setConstant(-std::numeric_limits<double>::infinity());
      return total;
    }
  }
  const Parts call{model,
                   options,
                   in,
                   rows,
                   goal,
                   parts,
                   lower_coef,
                   lower_coef != nullptr ? &raw_lo : nullptr,
                   slopes,
                   multipliers,
                   split_scores,
                   ibp ? &*ibp : nullptr,
                   crown ? &*crown : nullptr};
  for (size_t o = 0; o < c.size(); ++o) {
    if (c[o].size() == 0) continue;
    ASSIGN_OR_RETURN(Interval part, bound_part(call, o, c[o]));
    total.lo += part.lo;
    total.hi += part.hi;
  }
  if (lower_coef != nullptr) got.lower_bias = internal::lower_bias(*lower_coef, raw_lo, input);
  internal::nan_as_unbounded(total);
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
      internal::nan_as_unbounded(b);
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

// What CROWN reports it cut short (BoundsReport), the refinement decisions both engines share,
// and the default refinement budget of a model.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "propdag/crown.h"

namespace propdag {

void BoundsReport::add(const BoundsReport& r) {
  boxes += r.boxes;
  refined += r.refined;
  ibp_budget += r.ibp_budget;
  ibp_deadline += r.ibp_deadline;
  ibp_option += r.ibp_option;
  elements_ibp += r.elements_ibp;
  outputs_forward += r.outputs_forward;
  largest_skipped = std::max(largest_skipped, r.largest_skipped);
  cost += r.cost;
}

namespace internal {

Refine refine_choice(const Options& options, double cost) {
  if (!options.refine_intermediate) return Refine::kOption;
  if (cost > options.refine_budget) return Refine::kBudget;
  if (options.past_deadline()) return Refine::kDeadline;
  return Refine::kYes;
}

void count_refine(const Options& options, Refine choice, double cost, int64_t elements,
                  int64_t boxes) {
  BoundsReport* r = options.report;
  if (r == nullptr) return;
  switch (choice) {
    case Refine::kYes:
      r->refined += boxes;
      r->cost += cost * static_cast<double>(boxes);
      break;
    case Refine::kBudget:
      r->ibp_budget += boxes;
      r->elements_ibp += elements * boxes;
      r->largest_skipped = std::max(r->largest_skipped, cost);
      break;
    case Refine::kDeadline:
      r->ibp_deadline += boxes;
      r->elements_ibp += elements * boxes;
      break;
    case Refine::kOption:
      r->ibp_option += boxes;
      break;
  }
}

void count_late(const Options& options, double cost, int64_t elements, int64_t boxes) {
  BoundsReport* r = options.report;
  if (r == nullptr) return;
  r->refined -= boxes;
  r->cost -= cost;
  r->ibp_deadline += boxes;
  r->elements_ibp += elements;
}

bool refine_rows_choice(const Options& options, double row_cost, int64_t rows) {
  if (rows == 0) return false;
  const double cost = row_cost * static_cast<double>(rows);
  const Refine choice = refine_choice(options, cost);
  count_refine(options, choice, cost, rows, 1);
  return choice == Refine::kYes;
}

bool output_affordable(const Options& options, double cost, int64_t boxes) {
  if (cost <= kOutputBudget * options.refine_budget) {
    if (options.report != nullptr) options.report->cost += cost * static_cast<double>(boxes);
    return true;
  }
  if (options.report != nullptr) {
    options.report->outputs_forward += boxes;
    options.report->largest_skipped = std::max(options.report->largest_skipped, cost);
  }
  return false;
}

std::vector<RefineRows> refine_rows(const Model& model) {
  const Dag& dag = model.dag();
  std::vector<RefineRows> kinds(dag.size(), RefineRows::kNone);
  for (int n = 0; n < dag.size(); ++n) {
    const BoundOp* op = model.op(n);
    if (op == nullptr || !op->nonlinear()) continue;
    const RefineRows need =
        op->linear_on_each_side_of_zero() ? RefineRows::kStraddling : RefineRows::kAll;
    for (int p : dag.node(n).preds)
      if (model.op(p) != nullptr && kinds[p] != RefineRows::kAll) kinds[p] = need;
  }
  return kinds;
}

bool budget_binding(const Model& model, const Options& options,
                    const std::vector<RefineRows>& kinds, const std::vector<double>& row_cost,
                    const std::vector<double>& output_rows) {
  if (!options.refine_intermediate || std::isinf(options.refine_budget)) return false;
  const Dag& dag = model.dag();
  for (int n = 0; n < dag.size(); ++n)
    if (kinds[n] != RefineRows::kNone &&
        row_cost[n] * static_cast<double>(model.numel(n)) > options.refine_budget)
      return true;
  for (size_t o = 0; o < output_rows.size(); ++o)
    if (row_cost[dag.outputs()[o]] * output_rows[o] > kOutputBudget * options.refine_budget)
      return true;
  return false;
}

bool budget_may_bind(const Model& model, const Options& options,
                     const std::vector<double>& output_rows) {
  if (!options.refine_intermediate || std::isinf(options.refine_budget)) return false;
  const std::vector<RefineRows>& kinds = model.crown_plan().kinds;
  const Crown crown(model, options);
  std::vector<double> cost(kinds.size(), 0);
  for (size_t n = 0; n < kinds.size(); ++n)
    if (kinds[n] != RefineRows::kNone) cost[n] = crown.row_cost(static_cast<int>(n));
  for (int o : model.dag().outputs()) cost[o] = crown.row_cost(o);
  return budget_binding(model, options, kinds, cost, output_rows);
}

double full_crown_cost(const Model& model, const Options& options,
                       const std::vector<double>& output_rows) {
  const std::vector<RefineRows>& kinds = model.crown_plan().kinds;
  const Crown crown(model, options);
  double total = 0;
  for (size_t n = 0; n < kinds.size(); ++n)
    if (kinds[n] != RefineRows::kNone)
      total += crown.row_cost(static_cast<int>(n)) *
               static_cast<double>(model.numel(static_cast<int>(n)));
  const std::vector<int>& outputs = model.dag().outputs();
  for (size_t o = 0; o < outputs.size() && o < output_rows.size(); ++o)
    total += crown.row_cost(outputs[o]) * output_rows[o];
  return total;
}

RefineRows refine_kind(const Model& model, const Options& options, int node, RefineRows kind,
                       bool binding, double row_cost) {
  if (kind == RefineRows::kNone || !(binding || options.refine_stable_rows)) return kind;
  const double all = row_cost * static_cast<double>(model.numel(node));
  return all <= options.refine_budget ? RefineRows::kAll : kind;
}

std::vector<Eigen::Index> rows_to_refine(RefineRows rows, const Interval& b) {
  std::vector<Eigen::Index> out;
  if (rows == RefineRows::kNone) return out;
  for (Eigen::Index i = 0; i < b.size(); ++i)
    if (refines(rows, b.lo[i], b.hi[i])) out.push_back(i);
  return out;
}

namespace {

// default_refine_budget with `rows[n]` rows refined at node n.
double budget_for(const Model& model, const std::vector<double>& rows, double total) {
  const Dag& dag = model.dag();
  internal::Crown crown(model, Options{});
  // Per pass: (the smallest budget that lets it run, its cost priced by row_time_cost).
  std::vector<std::pair<double, double>> passes;
  for (int n = 0; n < dag.size(); ++n)
    if (rows[n] > 0)
      passes.emplace_back(crown.row_cost(n) * rows[n], crown.row_time_cost(n) * rows[n]);
  for (int o : dag.outputs()) {
    const auto rows_o = static_cast<double>(model.numel(o));
    passes.emplace_back(crown.row_cost(o) * rows_o / internal::kOutputBudget,
                        crown.row_time_cost(o) * rows_o);
  }
  std::sort(passes.begin(), passes.end());
  double spent = 0;
  for (size_t i = 0; i < passes.size(); ++i) {
    spent += passes[i].second;
    if (spent <= total) continue;
    // Passes of the same threshold as the first that does not fit are left out too.
    while (i > 0 && passes[i - 1].first == passes[i].first) --i;
    return i > 0 ? passes[i - 1].first : 0;
  }
  return std::numeric_limits<double>::infinity();
}

}  // namespace

}  // namespace internal

double default_refine_budget(const Model& model, double total) {
  const std::vector<internal::RefineRows>& kinds = model.crown_plan().kinds;
  std::vector<double> rows(kinds.size(), 0);
  for (size_t n = 0; n < kinds.size(); ++n)
    if (kinds[n] != internal::RefineRows::kNone)
      rows[n] = static_cast<double>(model.numel(static_cast<int>(n)));
  return internal::budget_for(model, rows, total);
}

common::Result<double> default_refine_budget(const Model& model, const Interval& box,
                                             double total) {
  ASSIGN_OR_RETURN(std::vector<Interval> ibp, ibp_all(model, box));
  const std::vector<internal::RefineRows>& kinds = model.crown_plan().kinds;
  std::vector<double> rows(kinds.size(), 0);
  for (size_t n = 0; n < kinds.size(); ++n)
    rows[n] = static_cast<double>(internal::rows_to_refine(kinds[n], ibp[n]).size());
  return internal::budget_for(model, rows, total);
}

}  // namespace propdag

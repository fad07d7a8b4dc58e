// What CROWN reports it cut short (BoundsReport), the refinement decisions both engines share,
// and the default refinement budget of a model.
#include <algorithm>
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

}  // namespace internal

double default_refine_budget(const Model& model, double total) {
  const Dag& dag = model.dag();
  internal::Crown crown(model, Options{});
  std::vector<char> feeds_nonlinear(dag.size(), 0);
  for (int n = 0; n < dag.size(); ++n)
    if (model.op(n) && model.op(n)->nonlinear())
      for (int p : dag.node(n).preds) feeds_nonlinear[p] = 1;
  // Per pass: (the smallest budget that lets it run, its cost).
  std::vector<std::pair<double, double>> passes;
  for (int n = 0; n < dag.size(); ++n) {
    const double cost = crown.row_cost(n) * static_cast<double>(model.numel(n));
    if (feeds_nonlinear[n] && model.op(n) != nullptr) passes.emplace_back(cost, cost);
  }
  for (int o : dag.outputs()) {
    const double cost = crown.row_cost(o) * static_cast<double>(model.numel(o));
    passes.emplace_back(cost / internal::kOutputBudget, cost);
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

}  // namespace propdag

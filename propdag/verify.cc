#include "propdag/verify.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "propdag/attack.h"
#include "propdag/case_search.h"
#include "propdag/engine.h"
#include "propdag/point_eval.h"

namespace propdag {

using internal::CaseSearch;
using internal::Clock;
using internal::Verdict;

namespace {

common::Status check_sizes(const Model& model, const Spec& spec) {
  int64_t outputs = 0;
  for (int o : model.dag().outputs()) outputs += model.numel(o);
  if (spec.num_inputs != model.input_size() || spec.num_outputs != outputs)
    return model.graph().error("property declares " + std::to_string(spec.num_inputs) +
                               " inputs and " + std::to_string(spec.num_outputs) +
                               " outputs, the model has " + std::to_string(model.input_size()) +
                               " and " + std::to_string(outputs));
  return {};
}

// Before splitting: PGD on each group of open cases over one box (attack.h: the margin of their
// disjunction), for kAttackSeconds in all or a tenth of --timeout. A point is returned only once
// confirm_counterexample, in float64, finds the property violated there.
constexpr double kAttackSeconds = 2.0;

// verify(): open cases split in turns of this many bound computations. lsnc
// quadrotor2d_state_0's 12 other cases take 0.3 s together; its Lyapunov case, searched first,
// kept them from being looked at until the timeout.
constexpr int64_t kCaseTurnBoxes = 10000;

common::Result<std::optional<Vec>> attack(const Model& model, const Spec& spec,
                                          const std::vector<const SpecCase*>& open,
                                          const SplitOptions& split, Clock::time_point deadline) {
  double seconds = kAttackSeconds;
  if (split.seconds > 0) {
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    seconds = std::min({seconds, 0.1 * split.seconds, left});
  }
  const Clock::time_point stop =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(std::max(0.0, seconds)));
  std::vector<bool> done(open.size(), false);
  for (size_t i = 0; i < open.size(); ++i) {
    if (done[i]) continue;
    std::vector<const SpecCase*> group;
    for (size_t j = i; j < open.size(); ++j) {
      if (done[j] || open[j]->box.lo != open[i]->box.lo || open[j]->box.hi != open[i]->box.hi)
        continue;
      group.push_back(open[j]);
      done[j] = true;
    }
    internal::AttackOptions options;
    options.seconds = std::chrono::duration<double>(stop - Clock::now()).count();
    ASSIGN_OR_RETURN(
        std::optional<Vec> x,
        internal::pgd_attack(model, open[i]->box, internal::target_of(group), options,
                             [&](const Vec& p) { return confirm_counterexample(model, spec, p); }));
    if (x) return x;
  }
  return std::optional<Vec>();
}

}  // namespace

common::Result<bool> confirm_counterexample(const Model& model, const Spec& spec, const Vec& x) {
  RETURN_IF_ERROR(check_sizes(model, spec));
  if (x.size() != spec.num_inputs) return false;
  Interval y{Vec(spec.num_outputs), Vec(spec.num_outputs)};
  if (!model.value_dependent_shape().empty()) {
    // The static-shape bounds are not the run's where a shape varies: evaluate the run.
    internal::PointEvaluator run(model);
    common::Result<Vec> v = run.outputs(x);
    if (!v.ok()) return false;
    y = {*v, *v};
  } else {
    Options exact;
    exact.method = Method::kIbp;
    ASSIGN_OR_RETURN(std::vector<Interval> ys, output_bounds(model, {x, x}, exact));
    Eigen::Index at = 0;
    for (const Interval& part : ys) {
      y.lo.segment(at, part.size()) = part.lo;
      y.hi.segment(at, part.size()) = part.hi;
      at += part.size();
    }
  }
  for (const SpecCase& c : spec.cases) {
    if (((x.array() < c.box.lo.array()) || (x.array() > c.box.hi.array())).any()) continue;
    bool all = true;
    for (const OutputConstraint& u : c.unsafe) {
      // Upper end of coef . y over [y.lo, y.hi].
      double top = u.coef.cwiseMax(0).dot(y.hi) + u.coef.cwiseMin(0).dot(y.lo);
      if (!(top <= u.rhs)) all = false;
    }
    if (all) return true;
  }
  return false;
}

common::Result<std::string> vnncomp_result(const Model& model, const VerifyResult& r,
                                           bool timed_out) {
  if (r.verified) return std::string("unsat\n");
  if (!r.falsified) return std::string(timed_out ? "timeout\n" : "unknown\n");
  const Vec& x = r.counterexample;
  std::vector<Interval> ys;
  if (model.value_dependent_shape().empty()) {
    Options exact;
    exact.method = Method::kIbp;  // a one-point box: the outputs, up to rounding
    ASSIGN_OR_RETURN(ys, output_bounds(model, {x, x}, exact));
  } else {  // the run at x, whose shapes may not be the static ones
    internal::PointEvaluator run(model);
    ASSIGN_OR_RETURN(Vec y, run.outputs(x));
    ys.push_back({y, y});
  }
  std::vector<std::string> items;
  char buf[64];
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    std::snprintf(buf, sizeof buf, "(X_%lld %.17g)", static_cast<long long>(i), x[i]);
    items.emplace_back(buf);
  }
  long long j = 0;
  for (const Interval& y : ys)
    for (Eigen::Index k = 0; k < y.size(); ++k) {
      std::snprintf(buf, sizeof buf, "(Y_%lld %.17g)", j++, 0.5 * (y.lo[k] + y.hi[k]));
      items.emplace_back(buf);
    }
  std::string text = "sat\n(";
  for (size_t i = 0; i < items.size(); ++i) text += (i ? "\n " : "") + items[i];
  return text + ")\n";
}

common::Result<VerifyResult> verify(const Model& model, const Spec& spec, const Options& options,
                                    const SplitOptions& split, BoxBounder* bounder) {
  RETURN_IF_ERROR(check_sizes(model, spec));
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(split.seconds > 0 ? split.seconds : 0));
  // Bound computations running past the limit stop refining (engine.h: Options::deadline).
  Options timed = options;
  if (split.seconds > 0) timed.deadline = deadline;
  timed.refine_stable_rows = true;  // split choices read every row's bounds
  timed.alpha_planes = false;       // tuned beside CROWN's planes only (case_bounds.cc)
  VerifyResult result;
  result.cases = static_cast<int>(spec.cases.size());
  std::vector<std::unique_ptr<CaseSearch>> searches;
  std::vector<const Interval*> boxes;
  std::vector<const SpecCase*> cases;
  std::unique_ptr<internal::PointEvaluator> evaluator;
  if (!model.value_dependent_shape().empty())
    evaluator = std::make_unique<internal::PointEvaluator>(model);
  for (const SpecCase& c : spec.cases) {
    if (c.unsafe.empty()) continue;  // no output constraint: every input is a counterexample
    searches.push_back(std::make_unique<CaseSearch>(model, c, timed, split, deadline, bounder));
    searches.back()->set_point_evaluator(evaluator.get());
    boxes.push_back(&c.box);
    cases.push_back(&c);
  }
  // Cases over the same box (a robustness property's one per other class) get their whole-box
  // bounds from one computation, whose intermediate bounds they share.
  std::vector<bool> grouped(searches.size(), false);
  for (size_t i = 0; i < searches.size(); ++i) {
    if (grouped[i] || !searches[i]->shares_bounds()) continue;
    const Interval& box = *boxes[i];
    std::vector<CaseSearch*> group = {searches[i].get()};
    for (size_t j = i + 1; j < searches.size(); ++j) {
      const Interval& other = *boxes[j];
      if (!grouped[j] && other.lo == box.lo && other.hi == box.hi) {
        group.push_back(searches[j].get());
        grouped[j] = true;
      }
    }
    if (group.size() > 1) RETURN_IF_ERROR(CaseSearch::bound_together(group));
  }
  // First every case over its whole box: bounds, its centre and corners; then, for the cases
  // left open, a short split search (CaseSearch::probe: small inputs), then a PGD attack on each
  // group over one box, then each case's point searches, so that a counterexample anywhere is
  // found before time goes into splitting one case; then the open cases are split. Past
  // --timeout, the cases not yet looked at stay open.
  std::vector<CaseSearch*> open;
  std::vector<const SpecCase*> open_cases;
  for (size_t i = 0; i < searches.size(); ++i) {
    if (split.seconds > 0 && Clock::now() >= deadline) break;
    ASSIGN_OR_RETURN(Verdict v, searches[i]->start());
    result.boxes += searches[i]->boxes();
    if (v == Verdict::kProved) ++result.cases_proved;
    if (v == Verdict::kFalsified) {
      result.falsified = true;
      result.counterexample = searches[i]->counterexample();
      return result;
    }
    if (v == Verdict::kOpen) open.push_back(searches[i].get()), open_cases.push_back(cases[i]);
  }
  for (size_t i = 0; i < open.size();) {
    const int64_t before = open[i]->boxes();
    ASSIGN_OR_RETURN(Verdict v, open[i]->probe());
    result.boxes += open[i]->boxes() - before;
    if (v == Verdict::kFalsified) {
      result.falsified = true;
      result.counterexample = open[i]->counterexample();
      return result;
    }
    if (v == Verdict::kProved) {
      ++result.cases_proved;
      ++result.cases_probed;
      open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
      open_cases.erase(open_cases.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  if (split.max_boxes > 1 && !open.empty()) {
    ASSIGN_OR_RETURN(std::optional<Vec> x, attack(model, spec, open_cases, split, deadline));
    if (x) {
      result.falsified = true;
      result.counterexample = std::move(*x);
      return result;
    }
  }
  for (CaseSearch* search : open) {
    ASSIGN_OR_RETURN(Verdict v, search->search());
    if (v == Verdict::kFalsified) {
      result.falsified = true;
      result.counterexample = search->counterexample();
      return result;
    }
  }
  // Open cases over one box that need a full CROWN bound of it get one between them.
  for (size_t i = 0; i < open.size(); ++i) {
    std::vector<CaseSearch*> group = {open[i]};
    for (size_t j = i + 1; j < open.size(); ++j)
      if (open_cases[j]->box.lo == open_cases[i]->box.lo &&
          open_cases[j]->box.hi == open_cases[i]->box.hi)
        group.push_back(open[j]);
    if (group.size() > 1) RETURN_IF_ERROR(CaseSearch::full_crown_together(group));
  }
  // The open cases take turns of kCaseTurnBoxes bound computations (the last one left runs to
  // its end), so that one hard case does not keep the others from being proved or falsified.
  std::vector<CaseSearch*> running = open;
  while (!running.empty() && !result.falsified) {
    std::vector<CaseSearch*> still;
    for (CaseSearch* search : running) {
      const int64_t before = search->boxes();
      ASSIGN_OR_RETURN(Verdict v, search->run(running.size() > 1 ? kCaseTurnBoxes : 0));
      result.boxes += search->boxes() - before;
      if (v == Verdict::kProved) ++result.cases_proved;
      if (v == Verdict::kRoundOver) still.push_back(search);
      if (v == Verdict::kFalsified) {
        result.falsified = true;
        result.counterexample = search->counterexample();
        break;
      }
    }
    running = std::move(still);
  }
  for (const auto& search : searches) result.untuned += search->untuned();
  // Bounds hold for runs with the static shapes only: where a shape may vary, only cases every
  // box of which was decided by evaluating its run are proved.
  bool by_bounds = false;
  for (const auto& search : searches) by_bounds = by_bounds || search->proved_by_bounds();
  result.verified =
      result.cases_proved == result.cases && (model.value_dependent_shape().empty() || !by_bounds);
  return result;
}

}  // namespace propdag

#include "propdag/torch/batch_verify.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "common/cli.h"
#include "propdag/objective.h"

namespace propdag::torch_engine {
namespace {

enum class CaseVerdict { kProved, kFalsified, kOpen };

// Whether x meets every constraint of the case, its outputs computed in float64 (IBP on the
// point: their upper values must meet each constraint).
common::Result<bool> is_counterexample(const Model& model, const SpecCase& c, const Vec& x) {
  std::vector<Mat> rows(model.dag().outputs().size());
  Eigen::Index at = 0;
  for (size_t o = 0; o < rows.size(); ++o) {
    const Eigen::Index n = model.numel(model.dag().outputs()[o]);
    rows[o].resize(static_cast<Eigen::Index>(c.unsafe.size()), n);
    for (size_t r = 0; r < c.unsafe.size(); ++r)
      rows[o].row(static_cast<Eigen::Index>(r)) = c.unsafe[r].coef.segment(at, n).transpose();
    at += n;
  }
  Options exact;
  exact.method = Method::kIbp;
  ASSIGN_OR_RETURN(Interval y, linear_bounds(model, {x, x}, rows, exact));
  for (size_t r = 0; r < c.unsafe.size(); ++r)
    if (!(y.hi[static_cast<Eigen::Index>(r)] <= c.unsafe[r].rhs)) return false;
  return true;
}

struct CaseRun {
  CaseVerdict verdict = CaseVerdict::kOpen;
  int64_t boxes = 0;
  Vec counterexample;
};

common::Result<CaseRun> run_case(Engine& engine, const Model& model, const SpecCase& c,
                                 const Options& options, const SplitOptions& split, int batch,
                                 double deadline_ms) {
  const std::vector<Mat> obj = internal::objective_of(model, c);
  const Vec rhs = internal::rhs_of(c);
  const Vec scale = (c.box.hi - c.box.lo).cwiseMax(1e-300);
  std::vector<Interval> open{c.box};
  CaseRun run;
  while (!open.empty()) {
    if (run.boxes >= split.max_boxes || (deadline_ms > 0 && common::now_ms() >= deadline_ms))
      return run;
    const auto take = static_cast<Eigen::Index>(
        std::min<int64_t>({static_cast<int64_t>(open.size()), batch, split.max_boxes - run.boxes}));
    Boxes in{Mat(take, c.box.size()), Mat(take, c.box.size())};
    std::vector<Interval> taken(open.end() - take, open.end());
    open.resize(open.size() - static_cast<size_t>(take));
    for (Eigen::Index k = 0; k < take; ++k)
      in.lo.row(k) = taken[k].lo.transpose(), in.hi.row(k) = taken[k].hi.transpose();
    std::vector<Mat> coef;
    ASSIGN_OR_RETURN(Boxes b, engine.linear_bounds(in, obj, options, &coef));
    run.boxes += take;
    for (Eigen::Index k = 0; k < take; ++k) {
      Eigen::Index best = 0;
      if ((b.lo.row(k).transpose() - rhs).maxCoeff(&best) > 0) continue;  // proved
      if (split.max_boxes <= 1) return run;
      const Interval& box = taken[k];
      const Vec mid = (box.lo + box.hi) * 0.5;
      ASSIGN_OR_RETURN(bool hit, is_counterexample(model, c, mid));
      if (hit) {
        run.verdict = CaseVerdict::kFalsified;
        run.counterexample = mid;
        return run;
      }
      // The widest dimension (relative to the case's box), unless the best row's lower bound
      // changes most along another one (|a_r,d| x width_d, as input_split.cc's steepest).
      Eigen::Index dim = 0;
      ((box.hi - box.lo).cwiseQuotient(scale)).maxCoeff(&dim);
      Eigen::Index steep = 0;
      const Vec slope = coef[k].row(best).transpose().cwiseAbs();
      if ((slope.array() * (box.hi - box.lo).array()).maxCoeff(&steep) > 0) dim = steep;
      if (!(box.lo[dim] < mid[dim] && mid[dim] < box.hi[dim])) return run;  // a point
      Interval low = box, high = box;
      low.hi[dim] = mid[dim];
      high.lo[dim] = mid[dim];
      open.push_back(std::move(high));
      open.push_back(std::move(low));
    }
  }
  run.verdict = CaseVerdict::kProved;
  return run;
}

}  // namespace

common::Result<VerifyResult> verify_batched(Engine& engine, const Model& model, const Spec& spec,
                                            const Options& options, const SplitOptions& split,
                                            int batch) {
  const double deadline = split.seconds > 0 ? common::now_ms() + 1000 * split.seconds : 0;
  Options opt = options;
  if (deadline > 0)
    opt.deadline = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                       std::chrono::duration<double>(split.seconds));
  VerifyResult r;
  r.verified = true;
  for (const SpecCase& c : spec.cases) {
    ++r.cases;
    ASSIGN_OR_RETURN(CaseRun run, run_case(engine, model, c, opt, split, batch, deadline));
    r.boxes += run.boxes;
    if (run.verdict == CaseVerdict::kProved) {
      ++r.cases_proved;
      continue;
    }
    r.verified = false;
    if (run.verdict == CaseVerdict::kFalsified) {
      r.falsified = true;
      r.counterexample = run.counterexample;
      return r;
    }
  }
  return r;
}

}  // namespace propdag::torch_engine

#include "propdag/verify.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

namespace propdag {
namespace {

using Clock = std::chrono::steady_clock;

enum class Verdict { kProved, kFalsified, kOpen };

constexpr Eigen::Index kLookaheadDims = 16;

// The unsafe constraints of one case as one objective matrix per graph output.
std::vector<Mat> objective_of(const Model& model, const SpecCase& c) {
  const auto rows = static_cast<Eigen::Index>(c.unsafe.size());
  std::vector<Mat> objective;
  Eigen::Index at = 0;
  for (int o : model.dag().outputs()) {
    Mat m(rows, model.numel(o));
    for (Eigen::Index r = 0; r < rows; ++r) m.row(r) = c.unsafe[r].coef.segment(at, m.cols());
    at += m.cols();
    objective.push_back(std::move(m));
  }
  return objective;
}

// Proves one case box by box (depth first). `boxes` counts the bound computations.
class CaseSearch {
 public:
  CaseSearch(const Model& model, const SpecCase& c, const Options& options,
             const SplitOptions& split, Clock::time_point deadline)
      : model_(model),
        case_(c),
        options_(options),
        split_(split),
        deadline_(deadline),
        objective_(objective_of(model, c)) {}

  common::Result<Verdict> run() {
    std::vector<Open> open;
    open.push_back({case_.box, std::nullopt});
    while (!open.empty()) {
      Open next = std::move(open.back());
      open.pop_back();
      if (!next.bounds) {
        ASSIGN_OR_RETURN(next.bounds, bound(next.box));
      }
      if (margin(*next.bounds) > 0) continue;
      if (split_.max_boxes <= 1) return Verdict::kOpen;
      ASSIGN_OR_RETURN(bool hit, counterexample_at_centre(next.box));
      if (hit) return Verdict::kFalsified;
      const bool out_of_time = split_.seconds > 0 && Clock::now() >= deadline_;
      if (boxes_ + static_cast<int64_t>(open.size()) + 2 * lookahead_cost(next.box) >
              split_.max_boxes ||
          out_of_time)
        return Verdict::kOpen;
      ASSIGN_OR_RETURN(auto parts, split(next.box));
      if (!parts) return Verdict::kOpen;  // a point, as far as doubles go
      auto& halves = *parts;
      // Depth first, into the half closer to a counterexample (smaller margin) first.
      if (halves.first.bounds && halves.second.bounds &&
          margin(*halves.first.bounds) > margin(*halves.second.bounds))
        std::swap(halves.first, halves.second);
      open.push_back(std::move(halves.second));
      open.push_back(std::move(halves.first));
    }
    return Verdict::kProved;
  }

  int64_t boxes() const { return boxes_; }
  const Vec& counterexample() const { return counterexample_; }

 private:
  // A box and, once computed, the bounds of the case's constraints over it.
  struct Open {
    Interval box;
    std::optional<Interval> bounds;
  };

  common::Result<Interval> bound(const Interval& box) {
    ++boxes_;
    return linear_bounds(model_, box, objective_, options_);
  }

  // Positive when the bounds prove the box safe: by how much the best unsafe constraint c.y <= rhs
  // misses (its lower bound minus rhs).
  double margin(const Interval& b) const {
    double best = -std::numeric_limits<double>::infinity();
    for (Eigen::Index r = 0; r < b.lo.size(); ++r)
      best = std::max(best, b.lo[r] - case_.unsafe[r].rhs);
    return best;
  }

  // Dimensions tried when choosing a split (all of them for small inputs such as ACAS Xu's five;
  // larger inputs are bisected along their widest dimension without trying).
  static int64_t lookahead_cost(const Interval& box) {
    return box.lo.size() <= kLookaheadDims ? box.lo.size() : 1;
  }

  using Halves = std::pair<Open, Open>;

  // Splits `box` in two at the middle of one dimension. For small inputs, every dimension is tried
  // and the one whose worse half comes closest to being proved wins; its halves keep their bounds.
  // Nothing when no dimension can be halved (every one is a single double wide).
  common::Result<std::optional<Halves>> split(const Interval& box) {
    const Vec width = box.hi - box.lo;
    if (box.lo.size() > kLookaheadDims) {
      Eigen::Index dim = 0;
      width.maxCoeff(&dim);
      if (!splittable(box, dim)) return std::optional<Halves>();
      auto [low, high] = halves(box, dim);
      return std::optional<Halves>(
          Halves{Open{std::move(low), std::nullopt}, Open{std::move(high), std::nullopt}});
    }
    std::optional<Halves> best;
    double best_score = -std::numeric_limits<double>::infinity();
    for (Eigen::Index d = 0; d < box.lo.size(); ++d) {
      if (!splittable(box, d)) continue;
      auto [low, high] = halves(box, d);
      ASSIGN_OR_RETURN(Interval bl, bound(low));
      ASSIGN_OR_RETURN(Interval bh, bound(high));
      const double score = std::min(margin(bl), margin(bh));
      if (best && !(score > best_score)) continue;
      best_score = score;
      best = Halves{Open{std::move(low), std::move(bl)}, Open{std::move(high), std::move(bh)}};
    }
    return best;
  }

  // The middle of the dimension lies strictly inside it.
  static bool splittable(const Interval& box, Eigen::Index dim) {
    const double mid = 0.5 * (box.lo[dim] + box.hi[dim]);
    return box.lo[dim] < mid && mid < box.hi[dim];
  }

  static std::pair<Interval, Interval> halves(const Interval& box, Eigen::Index dim) {
    const double mid = 0.5 * (box.lo[dim] + box.hi[dim]);
    Interval low = box, high = box;
    low.hi[dim] = mid;
    high.lo[dim] = mid;
    return {std::move(low), std::move(high)};
  }

  common::Result<bool> counterexample_at_centre(const Interval& box) {
    Vec mid = (box.lo + box.hi) * 0.5;
    Options point = options_;
    point.method = Method::kIbp;  // exact on a one-point box, up to rounding
    ASSIGN_OR_RETURN(Interval y, linear_bounds(model_, {mid, mid}, objective_, point));
    for (Eigen::Index r = 0; r < y.hi.size(); ++r)
      if (!(y.hi[r] <= case_.unsafe[r].rhs)) return false;
    counterexample_ = std::move(mid);
    return true;
  }

  const Model& model_;
  const SpecCase& case_;
  const Options& options_;
  const SplitOptions& split_;
  Clock::time_point deadline_;
  std::vector<Mat> objective_;
  int64_t boxes_ = 0;
  Vec counterexample_;
};

}  // namespace

common::Result<VerifyResult> verify(const Model& model, const Spec& spec, const Options& options,
                                    const SplitOptions& split) {
  const Dag& dag = model.dag();
  int64_t outputs = 0;
  for (int o : dag.outputs()) outputs += model.numel(o);
  if (spec.num_inputs != model.input_size() || spec.num_outputs != outputs)
    return model.graph().error("property declares " + std::to_string(spec.num_inputs) +
                               " inputs and " + std::to_string(spec.num_outputs) +
                               " outputs, the model has " + std::to_string(model.input_size()) +
                               " and " + std::to_string(outputs));
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(split.seconds > 0 ? split.seconds : 0));
  VerifyResult result;
  result.cases = static_cast<int>(spec.cases.size());
  for (const SpecCase& c : spec.cases) {
    if (c.unsafe.empty()) continue;  // no output constraint: every input is a counterexample
    CaseSearch search(model, c, options, split, deadline);
    ASSIGN_OR_RETURN(Verdict v, search.run());
    result.boxes += search.boxes();
    if (v == Verdict::kProved) ++result.cases_proved;
    if (v == Verdict::kFalsified) {
      result.falsified = true;
      result.counterexample = search.counterexample();
      break;
    }
  }
  result.verified = result.cases_proved == result.cases;
  return result;
}

}  // namespace propdag

#include "propdag/verify.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "propdag/objective.h"
#include "propdag/point_search.h"

namespace propdag {
namespace {

using internal::objective_of;
using internal::rhs_of;

using Clock = std::chrono::steady_clock;

// kRoundOver: one search's turn ran out of boxes (see CaseSearch::run); it can go on.
enum class Verdict { kProved, kFalsified, kOpen, kRoundOver };

constexpr Eigen::Index kLookaheadDims = 16;
// Falsification by search before splitting: sampled points, pattern searches started, and the
// time it may take (at most this, and at most a tenth of --timeout).
constexpr int kSamples = 10000;
constexpr size_t kStarts = 20;
constexpr double kSearchSeconds = 1.0;
// Splitting small inputs: one search per dimension ratio, taking turns of this many boxes.
constexpr double kRatios[] = {0, 4, 16};
constexpr int64_t kSliceBoxes = 1000;
// Boxes keep every node's bounds for their halves when the model has at most this many elements
// in all (each open box holds two doubles per element: 2 MiB at most).
constexpr int64_t kCarryElements = int64_t{1} << 17;

int64_t elements(const Model& model) {
  int64_t n = 0;
  for (int node = 0; node < model.dag().size(); ++node) n += model.numel(node);
  return n;
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
        objective_(objective_of(model, c)),
        rhs_(rhs_of(c)),
        carry_nodes_(options.method != Method::kIbp && split.carry_bounds &&
                     elements(model) <= kCarryElements) {}

  // The whole box: proved by its bounds, or (when splitting is allowed) falsified by a point
  // search, or open. Cheap next to splitting, so verify() runs it on every case first.
  common::Result<Verdict> start() {
    ASSIGN_OR_RETURN(Bounds b, bound(case_.box));
    if (margin(b) > 0) return Verdict::kProved;
    if (split_.max_boxes > 1) {
      ASSIGN_OR_RETURN(bool hit, find_counterexample(case_.box, b));
      if (!hit) {
        ASSIGN_OR_RETURN(hit, local_search(case_.box));
      }
      if (hit) return Verdict::kFalsified;
    }
    whole_ = std::move(b);
    return Verdict::kOpen;
  }

  // After start() left the case open: splits until every box is proved, a box centre or corner
  // is a counterexample, or the budget or time runs out. Small inputs get one depth-first search
  // per entry of kRatios, run in turns of kSliceBoxes bound computations, each resuming where it
  // stopped; the first to finish decides. Which choice of dimensions proves a case soonest
  // varies from case to case (ACAS Xu 4_6 prop_1 takes 3.9k boxes with every dimension a
  // candidate and 70k with ratio 16, 2_5 prop_1 about 6k with ratio 16 and more than 80k with
  // every dimension), and taking turns costs at most kRatios' size times the best one.
  common::Result<Verdict> run() {
    if (split_.max_boxes <= 1) return Verdict::kOpen;
    if (case_.box.lo.size() > kLookaheadDims) {
      Search only{0, {Open{case_.box, whole_}}};
      return depth_first(only, split_.max_boxes);
    }
    std::vector<Search> searches;
    for (double ratio : kRatios) searches.push_back({ratio, {Open{case_.box, whole_}}});
    for (;;) {
      for (Search& search : searches) {
        ASSIGN_OR_RETURN(Verdict v, depth_first(search, kSliceBoxes));
        if (v != Verdict::kRoundOver) return v;
      }
    }
  }

  int64_t boxes() const { return boxes_; }
  const Vec& counterexample() const { return counterexample_; }

 private:
  // Bounds of the case's constraints over a box, and per constraint the input coefficients of
  // the linear function CROWN's lower bound comes from (empty for IBP).
  struct Bounds {
    Interval y;
    Mat coef;
    Slopes slopes;                // --method alpha: the tuned slopes
    std::vector<Interval> nodes;  // every Dag node's bounds (CROWN, alpha; small models only)
  };

  // A box and, once computed, its bounds.
  struct Open {
    Interval box;
    std::optional<Bounds> bounds;
  };

  // A depth-first search that splits only dimensions at least 1/ratio as wide (relative to the
  // case's box) as the relatively widest one (ratio 0: any), and the boxes it has left.
  struct Search {
    double ratio = 0;
    std::vector<Open> open;
    bool started = false;  // the whole box (which start() searched for points) was split
  };

  // Continues `search` for at most `slice` more bound computations (kRoundOver when they would
  // run out; the search can be resumed).
  common::Result<Verdict> depth_first(Search& search, int64_t slice) {
    const int64_t slice_start = boxes_;
    std::vector<Open>& open = search.open;
    while (!open.empty()) {
      Open next = std::move(open.back());
      open.pop_back();
      if (!next.bounds) {
        ASSIGN_OR_RETURN(next.bounds, bound(next.box));
      }
      if (margin(*next.bounds) > 0) continue;
      const int64_t next_boxes = static_cast<int64_t>(open.size()) + 2 * lookahead_cost(next.box);
      if (boxes_ - slice_start + next_boxes > slice) {
        open.push_back(std::move(next));
        return Verdict::kRoundOver;
      }
      if (search.started) {
        ASSIGN_OR_RETURN(bool hit, find_counterexample(next.box, *next.bounds));
        if (hit) return Verdict::kFalsified;
      }
      search.started = true;
      const bool out_of_time = split_.seconds > 0 && Clock::now() >= deadline_;
      if (boxes_ + next_boxes > split_.max_boxes || out_of_time) return Verdict::kOpen;
      ASSIGN_OR_RETURN(auto parts, split(next.box, *next.bounds, search.ratio));
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

  // With --method alpha, the tuned slopes start from `from`'s too (those of the box this one
  // was split from) and are kept in the result for its own halves.
  common::Result<Bounds> bound(const Interval& box, const Bounds* from = nullptr) {
    ++boxes_;
    Bounds b;
    const bool alpha = options_.method == Method::kAlpha;
    if (alpha && from != nullptr) b.slopes = from->slopes;
    if (carry_nodes_ && from != nullptr) b.nodes = from->nodes;
    ASSIGN_OR_RETURN(b.y,
                     linear_bounds(model_, box, objective_, options_,
                                   options_.method != Method::kIbp ? &b.coef : nullptr, &rhs_,
                                   alpha ? &b.slopes : nullptr, carry_nodes_ ? &b.nodes : nullptr));
    return b;
  }

  // Positive when the bounds prove the box safe: by how much the best unsafe constraint c.y <= rhs
  // misses (its lower bound minus rhs).
  double margin(const Bounds& b) const { return margin_row(b).first; }

  // The best margin and the constraint that has it.
  std::pair<double, Eigen::Index> margin_row(const Bounds& b) const {
    double best = -std::numeric_limits<double>::infinity();
    Eigen::Index row = 0;
    for (Eigen::Index r = 0; r < b.y.lo.size(); ++r) {
      if (b.y.lo[r] - rhs_[r] > best) best = b.y.lo[r] - rhs_[r], row = r;
    }
    return {best, row};
  }

  // Dimensions tried when choosing a split (all of them for small inputs such as ACAS Xu's five;
  // larger inputs are bisected along their widest dimension without trying).
  static int64_t lookahead_cost(const Interval& box) {
    return box.lo.size() <= kLookaheadDims ? box.lo.size() : 1;
  }

  using Halves = std::pair<Open, Open>;

  // Splits `box` (bounds `b`) in two at the middle of one dimension. For small inputs, every
  // dimension at least 1/ratio as wide (relative to the case's box) as the widest is tried
  // (every one for ratio 0), and the one whose worse half comes closest to being proved wins;
  // its halves keep their bounds.
  // Nothing when no dimension can be halved (every one is a single double wide).
  common::Result<std::optional<Halves>> split(const Interval& box, const Bounds& b, double ratio) {
    const Vec width = box.hi - box.lo;
    if (box.lo.size() > kLookaheadDims) {
      Eigen::Index dim = 0;
      width.maxCoeff(&dim);
      if (!splittable(box, dim)) return std::optional<Halves>();
      if (carry_nodes_) {  // bounded now, while this box's bounds are at hand to narrow theirs
        ASSIGN_OR_RETURN(Halves h, bounded_halves(box, dim, b));
        return std::optional<Halves>(std::move(h));
      }
      auto [low, high] = halves(box, dim);
      return std::optional<Halves>(
          Halves{Open{std::move(low), std::nullopt}, Open{std::move(high), std::nullopt}});
    }
    std::optional<Halves> best;
    double best_score = -std::numeric_limits<double>::infinity();
    // Every candidate's halves; the split kept is the one whose worse half has the larger margin,
    // unless no split improves on the box's own margin: then the dimension that is widest relative
    // to the case's box, so that no dimension is halved forever while another one stays whole.
    const double before = margin(b);
    double widest = -1;
    std::optional<Halves> widest_halves;
    Vec relative_width(box.lo.size());
    for (Eigen::Index d = 0; d < box.lo.size(); ++d)
      relative_width[d] = splittable(box, d) ? width[d] / (case_.box.hi[d] - case_.box.lo[d]) : 0;
    const double narrowest = ratio > 0 ? relative_width.maxCoeff() / ratio : 0;
    for (Eigen::Index d = 0; d < box.lo.size(); ++d) {
      if (!splittable(box, d) || relative_width[d] < narrowest) continue;
      ASSIGN_OR_RETURN(Halves h, bounded_halves(box, d, b));
      const double score = std::min(margin(*h.first.bounds), margin(*h.second.bounds));
      const double relative = relative_width[d];
      if (relative > widest) {
        widest = relative;
        widest_halves = h;  // a copy: `best` may take h too
      }
      if (best && !(score > best_score)) continue;
      best_score = score;
      best = std::move(h);
    }
    if (best && !(best_score > before)) return widest_halves;
    return best;
  }

  // The two halves of `box` along `dim`, each with its bounds, which start from `b` (the box's).
  common::Result<Halves> bounded_halves(const Interval& box, Eigen::Index dim, const Bounds& b) {
    auto [low, high] = halves(box, dim);
    ASSIGN_OR_RETURN(Bounds bl, bound(low, &b));
    ASSIGN_OR_RETURN(Bounds bh, bound(high, &b));
    return Halves{Open{std::move(low), std::move(bl)}, Open{std::move(high), std::move(bh)}};
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

  // Looks for a counterexample among a few points of the box: its centre and, per constraint,
  // the corner that minimizes the linear function CROWN bounds that constraint by (the corner
  // where the lower bound is attained, so the likeliest place for the constraint to hold).
  common::Result<bool> find_counterexample(const Interval& box, const Bounds& b) {
    ASSIGN_OR_RETURN(bool hit, counterexample_at((box.lo + box.hi) * 0.5));
    for (Eigen::Index r = 0; !hit && r < b.coef.rows(); ++r) {
      Vec corner = (b.coef.row(r).transpose().array() > 0).select(box.lo, box.hi);
      ASSIGN_OR_RETURN(hit, counterexample_at(corner));
    }
    return hit;
  }

  // By how much x misses being a counterexample: max_r (c_r . y(x) - rhs_r) over the case's
  // constraints (the first rows of the objective), <= 0 for one.
  common::Result<double> violation(const Vec& x) {
    Options point = options_;
    point.method = Method::kIbp;  // exact on a one-point box, up to rounding
    ASSIGN_OR_RETURN(Interval y, linear_bounds(model_, {x, x}, objective_, point));
    double worst = -std::numeric_limits<double>::infinity();
    for (Eigen::Index r = 0; r < static_cast<Eigen::Index>(case_.unsafe.size()); ++r) {
      const double v = y.hi[r] - case_.unsafe[r].rhs;
      if (!(v <= worst)) worst = v;  // NaN counts as a miss
    }
    return worst;
  }

  common::Result<bool> counterexample_at(const Vec& x) {
    ASSIGN_OR_RETURN(double v, violation(x));
    return v <= 0 && found(x);
  }

  // Records x, whose violation is <= 0, as the counterexample.
  bool found(Vec x) {
    counterexample_ = std::move(x);
    return true;
  }

  // Before any splitting, and for small inputs only (kLookaheadDims): a falsification attempt
  // by sampling and pattern search (point_search.h), for kSearchSeconds or a tenth of --timeout.
  common::Result<bool> local_search(const Interval& box) {
    if (box.lo.size() > kLookaheadDims) return false;
    const double seconds =
        split_.seconds > 0 ? std::min(kSearchSeconds, 0.1 * split_.seconds) : kSearchSeconds;
    ASSIGN_OR_RETURN(std::optional<Vec> x, internal::point_search(
                                               box, [this](const Vec& p) { return violation(p); },
                                               kSamples, kStarts, seconds));
    return x && found(std::move(*x));
  }

  const Model& model_;
  const SpecCase& case_;
  const Options& options_;
  const SplitOptions& split_;
  Clock::time_point deadline_;
  std::vector<Mat> objective_;
  Vec rhs_;  // the constraints' right-hand sides: a box is proved once one lower bound exceeds
  bool carry_nodes_;  // boxes keep their nodes' bounds, which narrow those of their halves
  int64_t boxes_ = 0;
  std::optional<Bounds> whole_;  // start()'s bounds of the whole box
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
  // First every case over its whole box (bounds, then a point search), so that a counterexample
  // anywhere is found before time goes into splitting one case; then the open cases are split.
  std::vector<std::unique_ptr<CaseSearch>> open;
  for (const SpecCase& c : spec.cases) {
    if (c.unsafe.empty()) continue;  // no output constraint: every input is a counterexample
    auto search = std::make_unique<CaseSearch>(model, c, options, split, deadline);
    ASSIGN_OR_RETURN(Verdict v, search->start());
    result.boxes += search->boxes();
    if (v == Verdict::kProved) ++result.cases_proved;
    if (v == Verdict::kFalsified) {
      result.falsified = true;
      result.counterexample = search->counterexample();
      return result;
    }
    if (v == Verdict::kOpen) open.push_back(std::move(search));
  }
  for (auto& search : open) {
    const int64_t before = search->boxes();
    ASSIGN_OR_RETURN(Verdict v, search->run());
    result.boxes += search->boxes() - before;
    if (v == Verdict::kProved) ++result.cases_proved;
    if (v == Verdict::kFalsified) {
      result.falsified = true;
      result.counterexample = search->counterexample();
      break;
    }
  }
  result.verified = result.cases_proved == result.cases;
  return result;
}

}  // namespace propdag

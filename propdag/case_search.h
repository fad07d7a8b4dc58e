// The search verify() runs on each case of a property: bounds over the case's box, points that
// may be counterexamples, and splitting (of the input box: input_split.cc; by the signs of ReLU
// inputs: relu_split.cc). Not installed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "common/error.h"
#include "propdag/engine.h"
#include "propdag/point_eval.h"
#include "propdag/verify.h"
#include "propdag/workers.h"

namespace propdag::internal {

using Clock = std::chrono::steady_clock;

// kRoundOver: one search's turn ran out of boxes (see CaseSearch::run); it can go on.
enum class Verdict { kProved, kFalsified, kOpen, kRoundOver };

// Proves one case part by part (depth first). `boxes` counts the bound computations.
class CaseSearch {
 public:
  // With `bounder`, every bound computation goes to it, up to bounder->batch() boxes per call.
  CaseSearch(const Model& model, const SpecCase& c, const Options& options,
             const SplitOptions& split, Clock::time_point deadline, BoxBounder* bounder = nullptr);

  // The whole box: proved by its bounds, or (when splitting is allowed) falsified at its centre
  // or a corner CROWN points to, or open. Cheap: verify() runs it on every case first.
  common::Result<Verdict> start();
  // After start(): SplitOptions::probe_boxes' short split search (parallel_split.cc).
  common::Result<Verdict> probe();
  // After start() left the case open (and when splitting is allowed): falsified by a point
  // search over the whole box (sampling, descent), or still open.
  common::Result<Verdict> search();

  // Whether this case's whole-box bounds may come from bound_together (CROWN and IBP without
  // ReLU splits: alpha tunes its slopes for the rows it is given, and ReLU splits score them).
  bool shares_bounds() const;
  // The whole-box bounds of several cases over the same box (shares_bounds() for each, the same
  // model, options and BoxBounder) in one linear_bounds or BoxBounder call over all their
  // objective rows: the intermediate bounds, most of CROWN's work, are computed once instead of
  // once per case. Counted as one bound computation, of the first case.
  // start() uses them instead of computing its own (when given before it).
  static common::Status bound_together(const std::vector<CaseSearch*>& cases);
  // After search() left them open: the whole box of several cases over one box bounded once
  // with full CROWN (SplitOptions::full_crown) for all their rows, where full_crown_whole_box
  // would bound each case's once more: its intermediate bounds are computed, and the nodes
  // nearest the outputs tuned, once instead of once per case. Each case's whole-box bounds are
  // narrowed to its rows'; run() then starts from them.
  static common::Status full_crown_together(const std::vector<CaseSearch*>& cases);

  // After start() left the case open: splits until every part is proved, a point checked in one
  // is a counterexample, or the budget or time runs out. With `turn` > 0, returns kRoundOver
  // once about that many bound computations are done and the case is still open; the next call
  // goes on where this one stopped (ReLU splits run to the end in one call).
  common::Result<Verdict> run(int64_t turn = 0);

  int64_t boxes() const { return boxes_; }
  int64_t untuned() const { return untuned_; }  // of them, with CROWN as tuning did not pay
  const Vec& counterexample() const { return counterexample_; }

  // For a model whose shapes depend on input values (Model::value_dependent_shape): points are
  // judged by evaluating the run there (`evaluator`, shared by the cases of a property). A box
  // on which the model is constant (integer_split.cc: cells) is then decided by one evaluation,
  // and a point counts as a counterexample only if the run there meets the case.
  void set_point_evaluator(PointEvaluator* evaluator) { evaluator_ = evaluator; }
  // Whether some box was proved by bounds (which describe the static-shape runs only).
  bool proved_by_bounds() const { return proved_by_bounds_; }

 private:
  // Bounds of the case's constraints over a box, and per constraint the input coefficients of
  // the linear function CROWN's lower bound comes from (empty for IBP).
  struct Bounds {
    Interval y;
    Mat coef;
    Vec bias;  // with coef: coef.row(r) . x + bias[r] <= row r's value on the box (empty: unknown)
    Mat tuned_coef;  // compute()'s tuned planes' lines, beside the steering CROWN's (both clip)
    Vec tuned_bias;
    // The best margin of a positive combination of the constraints (joint_margin), computed
    // where the bounds were; -inf where it was not.
    double joint = -std::numeric_limits<double>::infinity();
    Slopes slopes;                // --method alpha: the tuned slopes
    std::vector<Interval> nodes;  // every Dag node's bounds (CROWN, alpha; small models only)
    std::vector<Vec> scores;      // with ReLU splits: BoundsOut::split_scores
    Mat multipliers;              // with ReLU splits and alpha: BoundsOut::split_multipliers
  };

  struct Open {  // a box and, once computed, its bounds
    Interval box;
    std::optional<Bounds> bounds;
    bool ibp_tried = false;  // integer dims: IBP left this single-cell box open (integer_step)
    int rebounds = 0;        // batched bounders: times this box was clipped and bounded again
  };
  using Halves = std::pair<Open, Open>;

  // A depth-first search that splits only dimensions at least 1/ratio as wide (relative to the
  // case's box) as the relatively widest one (ratio 0: any), and the boxes it has left.
  struct Search {
    double ratio = 0;
    std::vector<Open> open;
    bool started = false;  // the whole box (which search() looked for points in) was split
  };

  // A box and the part of it that ReLU splits cut out, with its bounds.
  struct Part {
    Interval box;
    std::vector<NeuronSplit> splits;
    Bounds bounds;
  };

  // case_search.cc

  // Bounds over `box` (with `splits`, over the part of it that meets them). `from`: the bounds
  // of the part this one was split from, which hold here too; with --method alpha the tuned
  // slopes and multipliers start from its ones, and carried node bounds narrow these.
  // With --method alpha, the halves of input splitting (also in bound_all's batches) are
  // tuned only while it pays: every kAlphaSampleEvery-th one (kAlphaPausedSampleEvery-th while
  // not tuning) is bounded both with and without tuning (the bounds kept are both
  // intersected), and once kAlphaMinSamples such pairs are in, alpha tunes only while more than
  // kAlphaMinGain of them were proved by the tuned bounds alone.
  common::Result<Bounds> bound(const Interval& box, const Bounds* from = nullptr,
                               const std::vector<NeuronSplit>* splits = nullptr);
  // bound()'s computation, tuned (--method alpha) or with CROWN (`tune` false), counted;
  // compute() with `options` (options_ or untuned_options_), uncounted, on any thread.
  common::Result<Bounds> bound_once(const Interval& box, const Bounds* from,
                                    const std::vector<NeuronSplit>* splits, bool tune);
  common::Result<Bounds> compute(const Interval& box, const Bounds* from,
                                 const std::vector<NeuronSplit>* splits, bool tune,
                                 const Options& options) const;
  // Whether alpha's tuning paid on the sampled halves so far (true until enough are in).
  bool alpha_pays() const;
  // Counts a half and says whether it is one to bound both ways.
  bool sample_now(bool tuning);
  // A sampled half: `kept` (tuned when `tuned`) and `other` (the other way) counted toward
  // alpha_pays, and `kept` narrowed by `other`.
  void sampled(Bounds& kept, Bounds&& other, bool tuned);
  // Bounds over each of `boxes`, from[i] as bound()'s `from` for boxes[i]: one box at a time, or
  // with a BoxBounder up to its batch() per call.
  common::Result<std::vector<Bounds>> bound_all(const std::vector<Interval>& boxes,
                                                const std::vector<const Bounds*>& from);
  // bound_all on workers_: each box's choices as bound() makes them, then all computations.
  common::Result<std::vector<Bounds>> bound_on_workers(const std::vector<Interval>& boxes,
                                                       const std::vector<const Bounds*>& from);
  // bound_all's BoxBounder calls, up to its batch() boxes each, with `options`.
  common::Result<std::vector<Bounds>> batched(const std::vector<Interval>& boxes,
                                              const std::vector<const Bounds*>& from,
                                              const Options& options);
  // Boxes per bound call: the BoxBounder's batch, one per worker, else 1.
  int64_t per_call() const;
  // Positive when the bounds prove the box safe: by how much the best unsafe constraint
  // c.y <= rhs misses (its lower bound minus rhs).
  double margin(const Bounds& b) const { return margin_row(b).first; }
  // The best margin and the constraint that has it.
  std::pair<double, Eigen::Index> margin_row(const Bounds& b) const;
  // Whether the bounds prove the box (or part) safe: some constraint misses (margin > 0), or a
  // positive combination of them does (Bounds::joint > 0).
  bool proved(const Bounds& b) {
    const bool p = proves(b);
    proved_by_bounds_ = proved_by_bounds_ || p;
    return p;
  }
  // The same, without recording it.
  bool proves(const Bounds& b) const { return margin(b) > 0 || b.joint > 0; }
  // max over lambda >= 0, sum 1, of min over `box` of sum_r lambda_r (a_r . x + bias_r - rhs_r),
  // a_r = coef.row(r): > 0 when no x of the box meets every constraint. Exact for two (clip.h),
  // approximate for more (any lambda gives a valid bound); -inf for fewer than two.
  double joint_margin(const Mat& coef, const Vec& bias, const Interval& box) const;
  // Cuts `box` down to where every constraint's linear lower bound a_r . x + bias_r is at most
  // its right-hand side, where every counterexample lies (clip_box, clip.h). Returns the share of
  // the box's volume kept (over the dimensions it varies in; 0 where one was cut to a point), or
  // nothing when no point is left: the box is proved.
  std::optional<double> clip(Interval& box, const Bounds& b) const;
  // clip() an open box; while it keeps <= kReboundKept of its volume (kRebounds times), bound
  // it again and clip; a batched bounder's box gets kAgain (split_all bounds it with halves).
  enum class Clipped { kProved, kOpen, kAgain };
  common::Result<Clipped> clip_and_bound(Open& o, bool room);
  // Whether the case's box varies in at most kLookaheadDims dimensions (ACAS Xu's five; the
  // eight noise inputs of dist_shift's 792, whose image part is fixed).
  bool small() const;
  // SplitOptions::full_crown: a whole box bounded under a finite refine budget bounded once more
  // with full CROWN by that bounder (alpha also tunes the last kFullCrownTunedNodes refined
  // nodes), its bounds replacing the whole box's; true when they prove it.
  common::Result<bool> full_crown_whole_box();
  // Whether full_crown_whole_box would bound the whole box (and has not yet).
  bool wants_full_crown() const;
  // After the whole box's full CROWN bound left a small input open: whether its parts are bounded
  // with full CROWN too (full_bounder_), the budget's bounds missing by far more (kFullGap).
  bool full_pays() const;
  // Whether bounds now come from full_bounder_.
  bool full_mode() const { return full_bounder_ != nullptr && bounder_ == full_bounder_.get(); }
  // The objectives of `cases` stacked row-wise (one matrix per graph output): case i's rows
  // start at offsets[i] (offsets.back(): all rows); `most` is the largest case's row count.
  struct Stacked {
    std::vector<Mat> objective;
    std::vector<Eigen::Index> offsets;
    Eigen::Index most = 0;
  };
  static Stacked stacked(const std::vector<CaseSearch*>& cases);
  bool out_of_time() const {
    return (split_.seconds > 0 && Clock::now() >= deadline_) ||
           (stop_ != nullptr && stop_->load(std::memory_order_relaxed));
  }
  // How long a point search may take (case_points.cc): kSearchSeconds, at most a tenth of
  // --timeout and at most what is left of it.
  double search_seconds() const;
  // Looks for a counterexample among a few points of the box: its centre (with `centre`) and,
  // per constraint, the corner where the linear function CROWN bounds it by is least.
  common::Result<bool> find_counterexample(const Interval& box, const Bounds& b,
                                           bool centre = true);
  // By how much x misses being a counterexample: max_r (c_r . y(x) - rhs_r) over the case's
  // constraints (the first rows of the objective), <= 0 for one.
  // With `at`, also the objective's bounds there (IBP on the one-point box).
  common::Result<double> violation(const Vec& x, Interval* at = nullptr);
  common::Result<bool> counterexample_at(const Vec& x);
  // Records x, whose violation is <= 0, as the counterexample.
  bool found(Vec x);
  // Before any splitting (for large inputs after descent): sampling and, for small inputs,
  // pattern search (point_search.h), for kSearchSeconds or a tenth of --timeout.
  common::Result<bool> local_search(const Interval& box);
  // Then, for any input size: gradient descent on the case's violated constraints, its starts
  // side by side with the attack's gradients (CROWN's on one-point boxes where shapes may vary).
  common::Result<bool> descent(const Interval& box);
  // While splitting, every kAttackEvery seconds: a PGD attack (attack.h) for kSearchSeconds or a
  // tenth of --timeout, in turn over the case's box (new starts each time) and `top`.
  common::Result<bool> attack_while_splitting(const Interval& top);

  // parallel_split.cc

  // Whether run() hands a small input's box to run_parallel: searched_alone(), a model of at
  // most 2^17 elements, and more than one thread (SplitOptions::threads) or a network whose
  // nonlinear ops are all ReLU-like.
  bool parallel() const;
  bool searched_alone() const;  // Eigen engine, no integer dimensions, evaluator or parts
  // A large input's one search, searched_alone(), with more than one thread: workers_, on
  // which each round's halves are bounded side by side.
  void start_workers();
  // The case searched in parts by SplitOptions::threads threads, each part as a case of its own
  // (its start() and run(), no point search: search() covered the whole box) for up to
  // SplitOptions::part_boxes bound computations. The first part is the case's box; what a part
  // leaves open (left_open()) goes back to the queue as parts. Alpha's samples are counted over
  // all parts. Proved when every part is; falsified when one is (the others stop); open
  // otherwise. With `turn` > 0, parts are taken until about that many bound computations are
  // done (kRoundOver: the queue waits for the next call).
  common::Result<Verdict> run_parallel(int64_t turn);
  // After run() stopped at split_.max_boxes (budget_spent_): the boxes one of its searches left
  // open (the one whose boxes have the least volume), which cover every point of the case's box
  // not yet proved.
  std::vector<Interval> left_open() const;

  // input_split.cc

  // Continues `search` for at most `slice` more bound computations (kRoundOver when they would
  // run out; the search can be resumed). Each round splits up to splits_per_round() boxes from
  // the top of the stack, their halves bounded together.
  common::Result<Verdict> depth_first(Search& search, int64_t slice);
  // Bound computations per split, halves not counted: every dimension the box varies in is
  // tried for small inputs; larger ones are halved along steepest()'s without trying.
  int64_t lookahead_cost() const { return small() ? lookahead_dims_ : 1; }
  // Boxes split per round: as many as per_call() bounds their halves in one call (at least 1).
  int64_t splits_per_round() const;
  // Bounds the topmost open boxes that have none, up to per_call() of them, in one call.
  common::Status bound_top(std::vector<Open>& open);
  // Splits each box (with its bounds) in two at the middle of one dimension. For small inputs,
  // every dimension at least 1/ratio as wide (relative to the case's box) as the widest is tried
  // (every one for ratio 0; of them, the lookahead_dims_ that steepest() ranks first), and
  // choose() picks one; its halves keep their bounds. Fewer results than boxes when some box cannot
  // be halved (every dimension a single double wide). `again` (clip_and_bound's kAgain boxes)
  // are bounded in the same call, each narrowed by its former bounds.
  common::Result<std::vector<Halves>> split_all(const std::vector<Open>& boxes, double ratio,
                                                std::vector<Open>& again);
  // The dimensions split_all tries for `box` (empty when none can be halved).
  std::vector<Eigen::Index> candidates(const Interval& box, const Bounds& b, double ratio) const;
  // Of the candidate dimensions `dims` of a box with bounds `b`, whose halves' bounds are
  // parts[first + 2j] and parts[first + 2j + 1] for dims[j]: the index j of the split kept (the
  // one whose halves keep the least volume once clipped, where clipping cuts any).
  size_t choose(const Interval& box, const Bounds& b, const std::vector<Eigen::Index>& dims,
                const std::vector<Bounds>& parts, size_t first) const;
  // Where larger inputs are halved without trying: the dimension along which the lower bound of
  // the constraint closest to being proved varies the most over the box (|its CROWN input
  // coefficient| x the box's width), or the widest one for IBP.
  Eigen::Index steepest(const Interval& box, const Bounds& b) const;
  // The middle of the dimension lies strictly inside it.
  static bool splittable(const Interval& box, Eigen::Index dim);
  static std::pair<Interval, Interval> halves(const Interval& box, Eigen::Index dim);

  // integer_split.cc

  // The free dimensions of the case's box that change the output of some op rounding to
  // integers (BoundOp::rounds_to_integers) when only they vary, the others at the box's centre:
  // inputs used as indices, positions, counts. Small inputs only; one IBP run per dimension.
  common::Result<std::vector<Eigen::Index>> find_integer_dims() const;
  // Where the box is split at an integer: the integer dimension with the most cells [k, k + 1)
  // in it, and the integer m nearest its middle; nothing when the box lies in one cell of each.
  std::optional<std::pair<Eigen::Index, double>> integer_cut(const Interval& box) const;
  enum class Step { kNext, kBound, kFalsified, kOutOfTime };
  // One step of depth_first for the top open box when the case has integer dimensions: a box
  // over several cells is split at an integer, not bounded (kNext), into [lo, prev(m)] and [m, hi];
  // a box within one cell is bounded by IBP first and dropped when that proves it, its centre is
  // checked for a counterexample, and a box whose bounds equal those at its centre is dropped as
  // unprovable (unprovable_); otherwise kBound: depth_first bounds it as usual.
  common::Result<Step> integer_step(std::vector<Open>& open);
  // With a point evaluator: the integer dimensions through which the model's outputs are
  // constant on each cell [k, k + 1), k >= 0 (the others fixed): when only that dimension varies
  // within the first cell of the case's box, the nodes whose IBP bounds vary with it, followed
  // from the inputs up to the ops rounding to integers, are no output and copy elements
  // unchanged (so each rounding op rounds the input itself), and their other successors vary
  // too or are affine (fixed coefficients, which read it with a 0). One IBP run per integer
  // dimension.
  common::Result<std::vector<Eigen::Index>> find_cell_dims() const;
  // Whether `box` is a cell: each dimension a point, or a cell dimension within one cell.
  bool is_cell(const Interval& box) const;
  // The case at outputs y of an evaluated run: kHolds when some constraint misses by more than
  // float32 rounding (1e-5 relative), kViolated when all are met, else kClose.
  enum class Judged { kHolds, kViolated, kClose };
  Judged judge(const Vec& y) const;

  // relu_split.cc

  // Splits the case's box by the signs of ReLU inputs, depth first.
  common::Result<Verdict> relu_search();
  // The element of a ReLU input with the largest split score, if any scores above 0.
  static std::optional<NeuronSplit> best_split(const Bounds& b);

  const Model& model_;
  const SpecCase& case_;
  const Options& options_;
  const SplitOptions& split_;
  Clock::time_point deadline_;
  std::vector<Mat> objective_;
  Vec rhs_;  // the constraints' right-hand sides: a box is proved once one lower bound exceeds
  Eigen::Index free_dims_;  // dimensions in which the case's box has a width
  bool smooth_;    // a nonlinear op other than a ReLU-like one: one search of small inputs (run)
  bool products_;  // some op has products' second planes (tuned beside CROWN: compute())
  // Of free_dims_, how many the lookahead of small inputs tries per split (candidates()).
  Eigen::Index lookahead_dims_;
  bool carry_nodes_;     // boxes keep their nodes' bounds, which narrow those of their halves
  bool relu_splits_;     // open cases are split by the signs of ReLU inputs (relu_search)
  BoxBounder* bounder_;  // where bounds are computed (nullptr: linear_bounds, one box a call)
  // integer_split.cc: the case's integer dimensions (find_integer_dims; set by run() on small
  // inputs without ReLU splits), and whether a box was dropped as unprovable
  // (the search then ends open, having looked at every box for a counterexample).
  std::vector<Eigen::Index> integer_dims_;
  bool unprovable_ = false;
  PointEvaluator* evaluator_ = nullptr;
  std::vector<Eigen::Index> cell_dims_;  // find_cell_dims(), with an evaluator
  bool proved_by_bounds_ = false;
  bool small_model_;  // at most kCarryElements elements in all
  // run_parallel's parts: set when another part was falsified or failed (out_of_time()).
  const std::atomic<bool>* stop_ = nullptr;
  bool run_started_ = false;      // run() has set up the searches below
  std::vector<Search> searches_;  // run()'s searches (one for large inputs)
  bool parallel_ = false;         // run() goes on in run_parallel()
  // run_parallel's parts still to search, the bound computations of all parts so far, and
  // whether a part ended open for good (its time, a box no split can narrow).
  struct ParallelState {
    std::vector<Interval> queue;
    int64_t before = 0;  // the case's bound computations before its parts
    int64_t boxes = 0;
    bool open = false;
    bool first = true;  // the first part (the case's box) starts from the case's bounds
  };
  std::unique_ptr<ParallelState> parallel_state_;
  bool budget_spent_ = false;  // a search stopped at split_.max_boxes (left_open())
  bool full_done_ = false;  // the whole box was bounded with full CROWN (or found not to need it)
  // The whole box's margin under the refine budget, before its full CROWN bound (-inf: none).
  double budget_margin_ = -std::numeric_limits<double>::infinity();
  double full_margin_ = -std::numeric_limits<double>::infinity();  // and after it
  std::unique_ptr<BoxBounder> full_bounder_;  // full_pays(): every part's bounds come from it
  std::unique_ptr<Workers> workers_;          // start_workers(): bound_all's boxes run on them
  int64_t boxes_ = 0;
  Options untuned_options_;   // options_ with CROWN for --method alpha (bound())
  int64_t split_halves_ = 0;  // halves bound() computed under --method alpha
  // Of them, those bounded both ways; of those, the ones proved by the tuned bounds and not by
  // CROWN's, and by CROWN's and not by the tuned ones (alpha_pays()). Atomic: run_parallel's
  // parts count into their case's (shared_samples_), as one search would.
  struct AlphaSamples {
    std::atomic<int64_t> sampled{0}, only{0}, crown_only{0};
  };
  AlphaSamples samples_;
  AlphaSamples* shared_samples_ = nullptr;
  AlphaSamples& alpha_samples() { return shared_samples_ != nullptr ? *shared_samples_ : samples_; }
  const AlphaSamples& alpha_samples() const {
    return shared_samples_ != nullptr ? *shared_samples_ : samples_;
  }
  int64_t untuned_ = 0;          // halves bounded with CROWN because tuning did not pay
  std::optional<Bounds> whole_;  // the whole box's bounds (from bound_together, or start()'s)
  Vec counterexample_;
  Clock::time_point next_attack_;  // when attack_while_splitting is due
  int attacks_ = 0;                // attacks so far, each from its own seed
};

}  // namespace propdag::internal

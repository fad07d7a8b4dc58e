// The built-in engines: IBP (forward intervals), CROWN (backward linear bound propagation), and
// alpha-CROWN (CROWN whose final bounds tune the ReLU lower lines and the tangent
// points of Sigmoid, Tanh, Exp, Softplus and Log by gradient steps).
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "propdag/model.h"
#include "propdag/op.h"

namespace propdag {

enum class Method { kIbp, kCrown, kAlpha };

/// What kept CROWN bounds from being full (textbook) CROWN, where every input of a nonlinear op
/// is bounded by a backward pass of its own (for an input of ReLU-like ops only, its rows that
/// straddle 0: the others' relaxations are exact) and every output by a final backward pass.
/// A node with no row to refine is not counted. Counts add up over every bound computation given
/// the report (Options::report), one per box: a verifier's whole run, say. Chunking rows or boxes
/// changes no bound and is not counted.
struct BoundsReport {
  int64_t boxes = 0;    ///< CROWN / alpha bound computations (one per box)
  int64_t refined = 0;  ///< intermediate nodes bounded by a backward pass
  /// Intermediate nodes (inputs of nonlinear ops) left with IBP's bounds because the pass cost
  /// more than Options::refine_budget, because Options::deadline had passed, or because
  /// Options::refine_intermediate was off (asked for: not cut short).
  int64_t ibp_budget = 0, ibp_deadline = 0, ibp_option = 0;
  /// Rows that the passes counted in ibp_budget and ibp_deadline would have refined (for an
  /// input of ReLU-like ops, its elements whose bounds straddle 0; else all its elements).
  int64_t elements_ibp = 0;
  /// Outputs (objective parts, per box) whose final backward pass cost more than the output
  /// budget (50 x refine_budget): bounded by box arithmetic on their forward bounds.
  int64_t outputs_forward = 0;
  /// The largest cost (rows x elements crossed) of a pass left out for the budget: a
  /// refine_budget at least this large (50x for outputs) would have run it.
  double largest_skipped = 0;
  /// The cost (rows x elements crossed) of the backward passes that ran, summed.
  double cost = 0;
  /// Whether any bound was cut short (a budget or the deadline).
  bool cut_short() const { return ibp_budget + ibp_deadline + outputs_forward > 0; }
  void add(const BoundsReport& r);
};

/// "ibp", "crown" or "alpha".
common::Result<Method> parse_method(std::string_view name);

struct Options {
  Method method = Method::kCrown;
  /// CROWN computes the bounds of every input of a nonlinear op by a backward pass when its cost
  /// (rows x elements of the nodes it crosses) stays under this budget; otherwise IBP's are used
  /// (counted in `report`). The default, infinity, is full CROWN; `default_refine_budget` gives
  /// a finite budget for a model.
  double refine_budget = std::numeric_limits<double>::infinity();
  /// Off: CROWN keeps IBP's bounds for every intermediate node (no refining backward passes), as
  /// for a one-point box, where they are exact; the final backward passes still run.
  bool refine_intermediate = true;
  /// On: every row of a ReLU input is refined, stable rows too (where the pass fits the budget),
  /// as where a later pass is cut short. Off: only the rows whose bounds straddle 0, which alone
  /// change the output bounds. verify turns it on: its split choices read every row's bounds
  /// (on ACAS Xu 2_2 prop_3 without carried bounds, 581 boxes against 1,493 with it off).
  bool refine_stable_rows = false;
  /// On: linear_bounds refines only the rows that reach a column its objective weighs (elements
  /// of the objective's cone, relevance.h); the others keep IBP's bounds, which move no bound of
  /// the objective. ml4acopf_2023 118_ieee prop2 weighs 1 of 1,697 outputs: its passes cost
  /// 3.0e7 per box instead of 4.0e8 (rows x elements crossed). Off: every row, as output_bounds.
  bool objective_cone = true;
  /// Rows per backward pass are chunked so one coefficient matrix holds at most this many entries
  /// (16 MiB; a pass holds about ten such matrices at once). Measured with 3e7 before: CROWN on
  /// tllverifybench N=M=64 peaked at 1.98 GB (now 0.49), on cGAN 32x32 at 2.5 GB (now 0.40) and
  /// ran 20.5 CPU-s instead of 12.1; tllverifybench took 16.5 CPU-s instead of 21.3.
  double chunk_entries = 2e6;
  /// Intersect the final CROWN bounds with IBP's (intermediate bounds always are).
  bool intersect_ibp = true;
  /// BoundsIn::budget_rows for a call that has no BoundsIn (a BoxBounder, the torch engine): the
  /// rows by which an output's final pass is judged against refine_budget (0: all the
  /// objective's rows). BoundsIn::budget_rows, when set, takes precedence.
  Eigen::Index budget_rows = 0;
  /// BoundsIn::goal for a call that has no BoundsIn (a BoxBounder, the torch engine), one entry
  /// per objective row; BoundsIn::goal, when set, takes precedence.
  const Vec* goal = nullptr;
  /// kAlpha: projected gradient (Adam) steps that tune, per objective row, the lower-line slope of
  /// every ReLU / LeakyReLU whose input interval crosses zero and the tangent points of the
  /// Sigmoid / Tanh lines (within their families) and, with alpha_planes, products' planes, from
  /// CROWN's choice; the best bound seen is kept, so it is never looser than CROWN's.
  /// Intermediate bounds stay CROWN's unless alpha_intermediate.
  int alpha_steps = 10;
  /// kAlpha: the weights between the two pairs of McCormick planes of each product of two
  /// variables (Relaxation::second) are tuned too, per row, output element and side, from
  /// CROWN's planes (weight 1 on the first pair). verify turns it off but where it bounds a
  /// box of a small input beside a CROWN bound whose coefficients steer its splits and clipping
  /// (case_bounds.cc): steered by the tuned bound's, lsnc quadrotor2d_state_2 went from 1.0 s
  /// to open at 60 s.
  bool alpha_planes = true;
  /// Steps when the slopes start from ones carried over (BoundsIn::slopes, e.g. from the
  /// box a verifier split this one from): they start close, so fewer steps do.
  int alpha_warm_steps = 3;
  /// kAlpha, torch engine (the Eigen engine ignores it): the bounds of this many refined
  /// intermediate nodes, the last in the Dag's order (nearest the outputs), are tuned too, before
  /// later nodes' lines are taken from them: the lower bound and minus the upper bound of each
  /// element CROWN refined there (for a ReLU-like op's input, those that straddle 0), as objective
  /// rows of their own, toward no goal (torch_alpha.h: rows as many at a time as fit). A node
  /// whose rows would hold more than 5e7 coefficients per box keeps CROWN's bounds.
  int alpha_last_nodes = 0;
  /// kAlpha, Eigen engine (the torch engine has alpha_last_nodes): right after CROWN refines an
  /// intermediate node, the lower bound of each refined row and of minus it are tuned as
  /// objective rows of their own (Crown::optimized_lower, alpha_steps steps, the best bound
  /// kept, so never looser than CROWN's), before any later node's lines are taken from them. A
  /// node is tuned where alpha_steps times its CROWN pass costs at most refine_budget. verify
  /// turns it on for large inputs (SplitOptions::alpha_intermediate): ml4acopf_2023 118_ieee
  /// prop2's box, upper bound of its output 119.35 -> 16.35 (goal 0.0793), 0.14 -> 2.3 s.
  bool alpha_intermediate = false;
  double alpha_rate = 0.1;
  /// When set, past this time CROWN refines no more intermediate bounds (IBP's stand) and alpha
  /// takes no more steps (the best bound so far stands): the bounds stay sound, only looser, and
  /// a computation started just before a verifier's time limit ends soon after it.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  /// When set, every CROWN / alpha bound computation adds what it cut short here (BoundsReport).
  BoundsReport* report = nullptr;
  /// Whether `deadline` is set and has passed.
  bool past_deadline() const { return deadline && std::chrono::steady_clock::now() >= *deadline; }
};

/// Multiply-adds (rows x elements crossed, summed over passes; a dense weight entry priced at
/// kDenseEntryCost = 1/8) that one CROWN bound computation of default_refine_budget may cost: about
/// 1 to 1.6 ns each (Eigen engine, loaded 2-core VM), so 45 to 70 CPU seconds at most. Full CROWN
/// then runs on the three shared models whose bounds at 1e10 were looser than auto_LiRPA's:
/// tllverifybench instance_6_0 (4.33e10), instance_5_3 (1.78e10), collins_rul_cnn full_window_40
/// (2.02e10).
constexpr double kDefaultCrownCost = 4.5e10;

/// A refine_budget for `model`: infinity (full CROWN) when the backward passes of every input of
/// a nonlinear op and of every output together cost at most `total`; otherwise the largest
/// budget under which the passes it lets run (cheapest first) stay within `total`. Without a
/// box, a pass costs every row of its node.
double default_refine_budget(const Model& model, double total = kDefaultCrownCost);

/// The same for bounds on `box`: a pass costs only the rows CROWN refines there (an input of
/// ReLU-like ops only: the rows whose IBP bounds on the box straddle 0; CROWN's refined bounds
/// lie inside IBP's, so no more rows straddle when it runs).
common::Result<double> default_refine_budget(const Model& model, const Interval& box,
                                             double total = kDefaultCrownCost);

/// IBP bounds of every Dag node for an input box over all graph inputs (concatenated in order).
common::Result<std::vector<Interval>> ibp_all(const Model& model, const Interval& input);

/// IBP run that drops each node's bounds after its last consumer (graph outputs are kept).
common::Result<std::vector<std::optional<Interval>>> ibp_run(const Model& model,
                                                             const Interval& input, bool keep_all);

/// Bounds of every graph output.
common::Result<std::vector<Interval>> output_bounds(const Model& model, const Interval& input,
                                                    const Options& options = {});

/// Tuned lower-line slopes, per graph output and Dag node (k x elements; empty where untuned).
using Slopes = std::vector<std::vector<Mat>>;

/// A split of the input box by the sign of one element of a Dag node that feeds an op linear on
/// each side of 0 (BoundOp::linear_on_each_side_of_zero: a ReLU's or LeakyReLU's input). Bounds
/// computed under it hold on the part of the box where that element is >= 0 (`active`) or <= 0.
struct NeuronSplit {
  int node = 0;
  Eigen::Index index = 0;
  bool active = false;
};

/// What linear_bounds takes besides the box, the objective and the options; every field is
/// optional. Carrying what one call gave into the next (a verifier's split boxes) means passing
/// BoundsOut's fields of the box split from as these.
struct BoundsIn {
  /// kAlpha, one objective matrix: tuning stops once some row's lower bound exceeds goal[row],
  /// the point where a verifier needs no tighter bound. Also picks the row split_scores are for.
  const Vec* goal = nullptr;
  /// kAlpha: a second starting point for the tuned slopes (BoundsOut::slopes of, e.g., the box
  /// this one was split from): each row starts from them where they give the better bound.
  const Slopes* slopes = nullptr;
  /// CROWN and alpha: bounds known to hold on this box, one entry per Dag node (an empty entry:
  /// nothing known), intersected with those computed here, node by node, before they are used.
  /// Bounds of a box that contains this one (the box it was split from) hold; bounds carried down
  /// a chain of splits this way keep the tightest any enclosing box reached. Bounds that hold
  /// only on part of the box (under `splits`) give bounds that hold on that part.
  const std::vector<Interval>* node_bounds = nullptr;
  /// CROWN and alpha: bounds over the part of the box that meets every split. Each split
  /// element's bounds are clamped to its side of 0. With alpha, each split also enters the final
  /// lower bound as a constraint with a nonnegative multiplier per row (beta-CROWN's), tuned
  /// with the slopes. When the bounds show that part of the box to be empty, the result is
  /// lo = +inf, hi = -inf, and BoundsOut::empty is set.
  const std::vector<NeuronSplit>* splits = nullptr;
  /// kAlpha with splits, one objective matrix: where the multipliers (rows x splits) of the
  /// first columns' splits start, e.g. BoundsOut::split_multipliers of the part this one was
  /// split from, whose splits come first in `splits`.
  const Mat* split_multipliers = nullptr;
  /// The number of rows by which the cost of each output's final backward pass is judged
  /// against Options::refine_budget (0: all the objective's rows). A caller that stacks several
  /// objectives into one call passes the largest one's row count, so that each row is bounded as
  /// it would be in a call of its own (the pass is chunked by rows anyway).
  Eigen::Index budget_rows = 0;
};

/// What linear_bounds gives besides the bounds. Only the fields `want` names are filled (the
/// others are left as they were); `empty` always is. BoundsIn's pointers may point at this
/// struct's own fields, to carry one call's outputs into the next.
struct BoundsOut {
  /// Set by the caller: which outputs to compute.
  struct Want {
    bool lower_coef = false, slopes = false, node_bounds = false, split_multipliers = false,
         split_scores = false;
  } want;
  /// CROWN and alpha: row r holds a_r with a_r . x + const <= sum_o (C_o y_o)_r for every x in
  /// the box, the linear function CROWN's lower bound concretizes (zero rows where an output's
  /// part fell back to interval bounds). Verifiers use it to pick splits and candidate
  /// counterexamples.
  Mat lower_coef;
  /// With lower_coef: per row r, b_r with lower_coef.row(r) . x + b_r <= sum_o (C_o y_o)_r for
  /// every x in the box (satisfying BoundsIn::splits), from the bounds before their
  /// intersection with interval bounds and lowered for rounding. Unlike the lower bounds, rows
  /// may be combined: for lambda >= 0, min over the box of sum_r lambda_r (a_r . x + b_r)
  /// bounds sum_r lambda_r (C y)_r from below.
  Vec lower_bias;
  /// kAlpha: the tuned slopes, one entry per graph output (BoundsIn::slopes where no output was
  /// tuned).
  Slopes slopes;
  /// CROWN and alpha: this box's bounds of every node (each already intersected with
  /// BoundsIn::node_bounds); empty for IBP.
  std::vector<Interval> node_bounds;
  /// Whether the bounds show that no point of the box meets BoundsIn::splits.
  bool empty = false;
  /// kAlpha with splits, one objective matrix: the tuned multipliers (rows x splits); else
  /// BoundsIn::split_multipliers.
  Mat split_multipliers;
  /// CROWN and alpha: per Dag node, per element, an estimate of how much splitting that element
  /// would tighten the lower bound of the row closest to its goal (row 0 without a goal):
  /// |coefficient of the ReLU's output in CROWN's lower bound| x the intercept of its upper line
  /// (-l u / (u - l)). Zero where an element cannot be split (stable, or not feeding a ReLU-like
  /// op); empty entries for nodes feeding none.
  std::vector<Vec> split_scores;
};

/// Bounds of sum_o C_o * y_o, y_o the flattened graph output o (one matrix per graph output, all
/// with the same number of rows; an empty matrix skips that output). Each row is one objective.
/// See BoundsIn for what else it takes and BoundsOut for what else it gives (`out` may be null).
common::Result<Interval> linear_bounds(const Model& model, const Interval& input,
                                       const std::vector<Mat>& c, const Options& options = {},
                                       const BoundsIn& in = {}, BoundsOut* out = nullptr);

}  // namespace propdag

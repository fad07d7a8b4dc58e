// The CROWN engine's internals, shared by crown.cc (bounds, the backward pass) and alpha.cc (the
// tuned lower slopes of alpha-CROWN). Not installed: verifiers use engine.h.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "common/error.h"
#include "propdag/engine.h"
#include "propdag/relevance.h"

namespace propdag::internal {

// The state of a backward pass: per Dag node, the coefficients (rows x elements of the node)
// of the lower (lam) and upper (om) bound of the objective rows as linear functions of that
// node, and the constant parts of the lower (lb) and upper (ub) bounds gathered so far. lam and
// om are the CROWN paper's Lambda and Omega.
struct Backward {
  std::vector<Mat> lam, om;
  Vec lb, ub;
};

inline void accumulate(Mat& into, Mat&& add) {
  if (into.size() == 0)
    into = std::move(add);
  else
    into += add;
}

inline Mat times(const Mat& a, const LinearTerm& t) {
  if (t.dense) return dense_left(a, t);
  return t.gather ? gather_left(a, *t.gather) : Mat(a * t.sparse());
}

/// into += a * t (into empty: it becomes that).
inline void add_times(Mat& into, const Mat& a, const LinearTerm& t) {
  if (into.size() != 0 && t.dense && t.wf.size() == 0)
    into.noalias() += a * t.w;
  else
    accumulate(into, times(a, t));
}

inline Mat scale_cols(const Mat& a, const Vec& s) { return a * s.asDiagonal(); }

/// out += a+ * on_pos + a- * on_neg, a+ and a- the positive and negative parts of `a` (rows x
/// n): each coefficient takes the vector its sign selects. In one sweep without temporaries.
void add_by_sign(const Mat& a, const Eigen::Ref<const Vec>& on_pos,
                 const Eigen::Ref<const Vec>& on_neg, Vec& out);
/// into += a+ * diag(on_pos) + a- * diag(on_neg) (into empty: it becomes that).
void add_scaled_by_sign(const Mat& a, const Vec& on_pos, const Vec& on_neg, Mat& into);
/// into += a+ * on_pos + a- * on_neg for maps (n x cols; into empty: it becomes that).
void add_mapped_by_sign(const Mat& a, const SpMat& on_pos, const SpMat& on_neg, Mat& into);

/// BoundsOut::lower_bias: b_r = raw_lo_r - min over `box` of a_r . x, lowered for rounding, where
/// raw_lo_r is the lower bound that row a_r of `a` was concretized to (before any intersection
/// with interval bounds; summed over objective parts with their rows).
Vec lower_bias(const Mat& a, const Vec& raw_lo, const Interval& box);

/// Bounds that met inf - inf or 0 * inf (an affine map of an unbounded interval) are NaN: they say
/// nothing. The engines make such a lower bound -inf and such an upper bound +inf as soon as a
/// node's bounds are computed, so that no later op (a max, a comparison) turns them into finite,
/// unsound bounds.
inline void nan_as_unbounded(Interval& b) {
  if (!b.lo.hasNaN() && !b.hi.hasNaN()) return;
  const double inf = std::numeric_limits<double>::infinity();
  b.lo = b.lo.unaryExpr([inf](double v) { return std::isnan(v) ? -inf : v; });
  b.hi = b.hi.unaryExpr([inf](double v) { return std::isnan(v) ? inf : v; });
}

/// Intersects two sound bounds of the same values. Where rounding makes them cross (both are
/// exact up to rounding, e.g. on a one-point box), the crossed pair is swapped so the result
/// still spans both.
inline void intersect(Interval& a, const Vec& lo, const Vec& hi) {
  for (Eigen::Index i = 0; i < a.lo.size(); ++i) {
    const double l = std::max(a.lo[i], lo[i]), h = std::min(a.hi[i], hi[i]);
    a.lo[i] = std::min(l, h);
    a.hi[i] = std::max(l, h);
  }
}

/// A final backward pass may cost this many times Options::refine_budget before the output keeps
/// its forward bounds instead (large outputs over large convolutions, e.g. TinyYOLO).
constexpr double kOutputBudget = 50;

/// default_refine_budget's price of one dense weight entry of a backward pass, relative to a
/// sparse entry or an element (1): Eigen's dense products (MatMul / Gemm rows) run about this
/// much faster per multiply-add than its sparse ones (Conv and other gathered terms). Measured as
/// user + sys seconds of `bounds --method crown --refine-budget 1e15` minus `--method ibp`, per
/// multiply-add counted by row_cost (2-core VM, load 8-10): dense, tllverifybench instance_5_3
/// 15.5 s / 1.37e11 = 0.11 ns, cora mnist-point 0.09 s / 6.6e8 = 0.13 ns; sparse, metaroom
/// 4cnn_ry_102_17 1.07 s / 1.07e9 = 1.0 ns, collins_rul_cnn full_window_40 32 s / 2.02e10 =
/// 1.6 ns. Ratio 0.07-0.13: 1/8 (exact in binary, so hand-worked costs stay exact).
constexpr double kDenseEntryCost = 0.125;

/// Whether CROWN refines an input of a nonlinear op whose backward pass costs `cost`, and if not,
/// why; `boxes` such computations are added to options.report (if any) either way.
enum class Refine { kYes, kBudget, kDeadline, kOption };
Refine refine_choice(const Options& options, double cost);
void count_refine(const Options& options, Refine choice, double cost, int64_t elements,
                  int64_t boxes);
/// A pass that count_refine counted as run (kYes) and that the deadline stopped before its end:
/// its `boxes` (of `elements` rows in all, `cost`) are counted as left to IBP for the deadline.
void count_late(const Options& options, double cost, int64_t elements, int64_t boxes);
/// refine_choice and count_refine for one box whose pass refines `rows` rows of `row_cost` each:
/// whether it runs. A pass of no rows neither runs nor counts.
bool refine_rows_choice(const Options& options, double row_cost, int64_t rows);
/// Whether a final pass of `cost` is affordable; when not, counts `boxes` outputs bounded by
/// their forward bounds in options.report.
bool output_affordable(const Options& options, double cost, int64_t boxes);

/// Which rows of a Dag node CROWN refines by a backward pass: none (it feeds no nonlinear op, or
/// it is a graph input), every row, or only the rows whose bounds straddle 0, when every nonlinear
/// op it feeds is linear on each side of 0 (BoundOp::linear_on_each_side_of_zero): a row on one
/// side has an exact relaxation whatever its bounds, so refining it changes no relaxation
/// (auto_LiRPA's CROWN refines only the unstable neurons too). Both engines decide by these.
enum class RefineRows : char { kNone, kAll, kStraddling };
/// One entry per Dag node.
std::vector<RefineRows> refine_rows(const Model& model);
/// What every CROWN pass over a model shares, computed once per model (Model::crown_plan).
struct CrownPlan {
  std::vector<RefineRows> kinds;      ///< refine_rows(model)
  std::vector<double> row_cost;       ///< per Dag node: Crown::row_cost
  std::vector<double> row_time_cost;  ///< per Dag node: Crown::row_time_cost
};
CrownPlan make_crown_plan(const Model& model);
/// Whether `rows` refines a row with bounds [lo, hi] (NaN bounds count as straddling).
inline bool refines(RefineRows rows, double lo, double hi) {
  return rows == RefineRows::kAll || (rows == RefineRows::kStraddling && !(lo >= 0) && !(hi <= 0));
}
/// Whether Options::refine_budget can leave some pass to IBP or to forward bounds: a node of
/// `kinds` other than kNone whose pass over all its rows (row_cost[n] x its elements) costs more
/// than the budget, or an output o whose final pass over output_rows[o] rows (0: none) is not
/// affordable (output_affordable). Reports nothing. Then a later pass left to IBP is computed from
/// the bounds of every row of the nodes before it, stable rows too, so refine_kind refines them.
bool budget_binding(const Model& model, const Options& options,
                    const std::vector<RefineRows>& kinds, const std::vector<double>& row_cost,
                    const std::vector<double>& output_rows);
/// budget_binding for `model` with `output_rows` rows per output (0: none): whether
/// Options::refine_budget can cut any pass short on some box (false: CROWN is full CROWN).
bool budget_may_bind(const Model& model, const Options& options,
                     const std::vector<double>& output_rows);
/// Multiply-adds of one full CROWN bound of `model` with `output_rows` rows per output: every
/// row of each node CROWN may refine and of the outputs, priced by Crown::row_cost.
double full_crown_cost(const Model& model, const Options& options,
                       const std::vector<double>& output_rows);
/// The rows CROWN refines at `node` of kind `kind` (refine_rows) whose row costs `row_cost`: when
/// the budget is binding (budget_binding) or Options::refine_stable_rows is on, and the pass over
/// all its rows fits the budget, every row; else `kind`, whose rows still go through the budget.
RefineRows refine_kind(const Model& model, const Options& options, int node, RefineRows kind,
                       bool binding, double row_cost);
/// The rows of `b` that `rows` refines, ascending.
std::vector<Eigen::Index> rows_to_refine(RefineRows rows, const Interval& b);

class Crown {
 public:
  Crown(const Model& model, const Options& options) : model_(model), options_(options) {}

  /// Bounds of every node on `input`: IBP, intersected with `prior` if given (bounds valid on a
  /// box containing this one, one per Dag node; empty entries are skipped), and for the inputs of
  /// nonlinear ops refined by CROWN on the rows refine_kind names (and the rows split). With
  /// `splits`, on the part of the box that meets them (see BoundsIn::splits); empty() tells when
  /// the bounds show that part to be empty, and then the bounds of the nodes after the
  /// contradiction are not computed.
  common::Status forward(const Interval& input, const std::vector<Interval>* prior = nullptr,
                         const std::vector<NeuronSplit>* splits = nullptr);
  /// Rows of each output's final pass (0: none) that forward's budget decision (budget_binding)
  /// counts on; by default every element of each output.
  void set_output_rows(std::vector<double> rows) { output_rows_ = std::move(rows); }
  /// Refine only the rows `relevance` keeps (relevant_elements of the objective that the
  /// backward passes after forward() start from); by default every row.
  void set_relevance(std::shared_ptr<const Relevance> relevance) {
    relevance_ = std::move(relevance);
  }
  bool empty() const { return empty_; }
  const std::vector<Interval>& all_bounds() const { return node_bounds_; }
  /// BoundsOut::split_scores for one objective row `c` (1 x elements of target), from one
  /// lower-bound pass with CROWN's slopes; adds to `scores` (one entry per Dag node).
  void add_split_scores(int target, const Mat& c, std::vector<Vec>& scores) const;
  /// Bounds of c * target; adds the lower bound's input coefficients to `lower_coef` if given.
  /// `unit` (optional): c's rows are the identity's rows at these indices, so that an affine
  /// target's first step takes its weights' rows instead of multiplying by them; c may then be
  /// empty, and those rows are made a chunk at a time where they are needed.
  Interval backward(int target, const Mat& c, Mat* lower_coef = nullptr,
                    const std::vector<Eigen::Index>* unit = nullptr);
  const Interval& bounds(int node) const { return node_bounds_[node]; }
  /// Lower bounds of c * target as backward() finds them, but with the tunable lower slopes of
  /// the relaxations (Relaxation::lo_min/lo_max) chosen per row by Options::alpha_steps steps of
  /// projected gradient ascent (Adam) from CROWN's; the best bound per row is kept. Adds that
  /// bound's input coefficients to `lower_coef` if given. With `goal`, tuning stops as soon as
  /// some row's bound exceeds goal[row].
  /// With `warm` (one entry per Dag node): rows whose bound is better from those slopes (clamped
  /// to this box's ranges) than from CROWN's start there; on return it holds the best slopes.
  /// With `warm_beta` (rows x its columns): the multipliers of the first splits start there
  /// (BoundsIn::split_multipliers, BoundsOut::split_multipliers); on return it holds the best ones
  /// (rows x splits).
  Vec optimized_lower(int target, const Mat& c, Mat* lower_coef = nullptr,
                      const Vec* goal = nullptr, std::vector<Mat>* warm = nullptr,
                      Mat* warm_beta = nullptr);
  /// Multiply-adds of one backward row from `node` to the inputs.
  double row_cost(int node) const;
  /// row_cost with each dense weight entry priced at kDenseEntryCost (default_refine_budget's
  /// time model).
  double row_time_cost(int node) const;

 private:
  // One lower-bound pass with fixed relaxations: the coefficients that reached every node (kept
  // for the gradient) and the bound.
  struct LowerPass {
    std::vector<Mat> lam;
    Vec lb;
  };
  // The op's relaxation on the current bounds; remembered for the nodes whose bounds forward()
  // has finished (every backward pass crosses them with the same relaxation). Valid until the
  // next relax_at(node) on a node whose bounds may still change.
  const Relaxation& relax_at(int node) const;
  // relax_at(node) with Relaxation::second set (Options::alpha_planes), kept with it: a
  // product's second planes are computed once per node bounds, not per tuned pass.
  const Relaxation& relax_with_second(int node) const;
  // `beta` (rows x splits, nonnegative; may be empty): the splits' multipliers.
  LowerPass lower_pass(const std::vector<int>& order, const std::vector<const Relaxation*>& rel,
                       const std::vector<Mat>& alpha, const Mat& beta, int target,
                       const Mat& c) const;
  // Also sets `beta_grad` (d lb / d beta) when there are splits.
  std::vector<Mat> alpha_gradient(const std::vector<int>& order,
                                  const std::vector<const Relaxation*>& rel,
                                  const std::vector<Mat>& alpha, const LowerPass& pass,
                                  Mat* beta_grad) const;
  // Clamps `bounds` (of `node`) to the sides of 0 its splits name; false when a split
  // contradicts them.
  bool narrow_by_splits(int node, Interval& bounds) const;
  // CROWN's bounds of `rows` of `node`, narrowed by its splits, intersected with
  // node_bounds_[node]; false when a split contradicts them.
  bool refine(int node, const std::vector<Eigen::Index>& rows);
  // Options::alpha_intermediate: narrows `refined` (node's bounds after CROWN's pass over
  // `rows`) to the tuned lower bound of each row and of minus each row (alpha_rows.cc).
  void tune_rows(int node, const std::vector<Eigen::Index>& rows, Interval& refined);
  // rows_to_refine's rows of `node` and the rows its splits name (so that a contradiction with
  // CROWN's bounds is seen), ascending.
  std::vector<Eigen::Index> refined_rows(int node, RefineRows kind) const;
  // One step of `pass`: replaces its coefficients on `node` by coefficients on its inputs.
  void step(int node, Backward& pass);
  // A graph input's step: its coefficients times the box, into pass.lb and pass.ub.
  void concretize(int node, Backward& pass);
  // backward()'s step through an affine target for the identity's rows unit[first_row + i]
  // (pass.lb's size of them): false, nothing done, where the target is not affine.
  bool first_step(int target, const std::vector<Eigen::Index>& unit, Eigen::Index first_row,
                  Backward& pass) const;

  const Model& model_;
  Options options_;
  std::vector<Interval> node_bounds_;  // per Dag node, from forward()
  std::vector<double> output_rows_;
  std::shared_ptr<const Relevance> relevance_;
  int final_nodes_ = 0;  // nodes [0, final_nodes_) have the bounds forward() gives them
  // Per node: its last relax_at(), kept for good once the node's bounds are final (kept_). The
  // ops' own fixed relaxations are read in place: passes on several threads share them, and a
  // shared count per pass step made the threads contend for its cache line.
  mutable std::vector<std::optional<Relaxation>> relaxations_;
  // The input bounds handed to an op, reused from node to node: forward()'s and relax_at()'s.
  std::vector<const Interval*> forward_in_;
  mutable std::vector<const Interval*> relax_in_;
  mutable std::vector<char> kept_;
  std::vector<NeuronSplit> splits_;
  std::vector<std::vector<int>> splits_at_;  // per Dag node: indices into splits_
  bool empty_ = false;
  Interval input_box_;                      // the box over every graph input, concatenated in order
  std::vector<Eigen::Index> input_offset_;  // per Dag node: where a graph input starts in it
  // During backward: where the input coefficients of the lower bound go (null: nowhere), and
  // the row there of the chunk's first row.
  Mat* lower_coef_ = nullptr;
  Eigen::Index coef_row0_ = 0;
};

}  // namespace propdag::internal

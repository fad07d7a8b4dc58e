// Sound, incomplete verification of a VNN-LIB property from bounds, with optional input splitting.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "propdag/engine.h"
#include "propdag/model.h"
#include "propdag/vnnlib.h"

namespace propdag {

/// How a case left open is split: by halving its input box, or by the sign of a ReLU's input
/// (NeuronSplit: the box stays whole, and each part of it is bounded under its splits).
enum class Branching {
  kInput,  ///< halve input boxes
  /// CROWN and alpha: split the ReLU input element with the largest BoundsOut::split_scores
  /// (halving the box where no ReLU input crosses 0, or no coefficient reaches one)
  kRelu,
};

/// Splitting: a case whose bounds do not prove it over its box is proved part by part.
class BoxBounder;

struct SplitOptions {
  /// Bound computations per case, the whole box included; 1 keeps the whole box only.
  int64_t max_boxes = 1;
  /// Wall-clock limit for the whole property in seconds (0: none).
  double seconds = 0;
  /// CROWN and alpha: a box keeps every node's bounds, and its halves' bounds are intersected
  /// with them (linear_bounds' node_bounds). Off only to measure what it gains; models with more
  /// than 2^17 elements in all never carry them (memory).
  bool carry_bounds = true;
  /// CROWN and alpha, input splitting: each open box is cut down to where the linear lower
  /// bounds of the case's constraints allow every one to be met (counterexamples lie there
  /// only), and bounded again while that leaves at most 90% of it (propdag/README.md). Off only
  /// to measure what it gains.
  bool clip_boxes = true;
  /// alpha on a small input with products of two variables: their McCormick pairs are tuned,
  /// beside a CROWN bound that steers the search (case_bounds.cc). Off: CROWN's pairs
  /// (comparison; Options::alpha_planes).
  bool tune_planes = true;
  /// alpha on a large input (more than 16 varying dimensions), whose splits narrow it slowly:
  /// once a case has spent 32 bound computations undecided, its boxes' intermediate bounds
  /// are tuned too (Options::alpha_intermediate). ml4acopf_2023 118_ieee prop2: verified in
  /// about 170 bound computations, open after 37,319 without. Off: comparison.
  bool alpha_intermediate = true;
  Branching branching = Branching::kInput;
  /// Input splitting of small inputs (at most 16 varying dimensions) on the Eigen engine: a case
  /// left open by its whole box is searched in parts by this many threads, each part as a case
  /// of its own: the first part is the whole box, and the boxes a part leaves open after
  /// part_boxes bound computations are parts in turn, taken by idle threads. The case is proved
  /// when every part is, falsified when one is; max_boxes counts the bound computations of all
  /// parts. Networks whose nonlinear ops are all ReLU-like are searched in parts on one thread
  /// too (each part's searches start afresh, which pays there). Small inputs of models with more
  /// than 2^17 elements, integer inputs and value-dependent shapes are searched whole, on one
  /// thread. Large inputs (more than 16 varying dimensions, shapes not value-dependent): the
  /// halves of each round are bounded side by side on this many threads, in one thread's order.
  int threads = 1;
  /// With threads: bound computations a part may take before the boxes it left open go back to
  /// the queue as parts of their own, where idle threads take them (0: 2,000 for networks whose
  /// nonlinear ops are all ReLU-like, 20,000 for others; propdag/README.md).
  int64_t part_boxes = 0;
  /// Small inputs of models with at most 2^17 elements: a case left open by its whole box is
  /// first split for at most this many bound computations and 0.1 s (a twentieth of `seconds` at
  /// most), one search on one thread, before the point searches look for a counterexample. Most
  /// cases that hold are proved there in less time than those searches take (ACAS Xu: median
  /// verdict time 0.31 -> 0.12 s); a case still open is searched afresh after them. 0: never.
  int64_t probe_boxes = 200;
  /// Networks whose refine budget may cut a pass short: when the whole box's CROWN or alpha
  /// bounds left the case open, the whole box is bounded once more with full CROWN (no budget;
  /// the timeout still stops refining; with alpha, the bounds of the two refined nodes nearest
  /// the outputs are tuned too, Options::alpha_last_nodes) by the bounder this returns, before
  /// any splitting (for large inputs, more than 16 varying dimensions, after the point searches);
  /// its bounds replace the whole box's. Halving a large input's box gains little per bound,
  /// and a small input's halves under the budget stay as loose as the whole box (cGAN). Null, or
  /// returning null: never. The CLI gives the torch engine on the CPU, loaded only then (not with
  /// `--engine eigen` named), whose convolution passes cost the windows of their coefficients
  /// (TinyYOLO: about 50 s on two cores, where its sparse products would take many minutes).
  std::function<BoxBounder*()> full_crown;
};

/// Bounds several boxes in one call (a batched engine: the torch engine's, propdag/torch). verify()
/// runs the same search with or without one; with one, every bound computation of the search
/// goes to it (the counterexample checks and point searches stay in float64 on the Eigen engine)
/// and the search bounds up to batch() boxes per call. Node bounds are carried from a box to its
/// halves as without one (SplitOptions::carry_bounds); ReLU splits fall back to halving input
/// boxes.
class BoxBounder {
 public:
  virtual ~BoxBounder() = default;
  /// Boxes per call that the bounder works best with (at least 1).
  virtual int batch() const = 0;
  /// For each box, bounds of sum_o C_o y_o as linear_bounds(model, box, c, options); with
  /// `lower_coef`, per box the input coefficients of each row's lower bound (BoundsOut::lower_coef,
  /// empty for IBP). With `node_bounds`, one entry per box: passed in, the node bounds known to
  /// hold on that box (an empty entry: none; BoundsIn::node_bounds), intersected with those
  /// computed before they are used; on return, that box's bounds of every node
  /// (BoundsOut::node_bounds). With `lower_bias` (and `lower_coef`), per box its
  /// BoundsOut::lower_bias (or none: empty), by which the search cuts boxes down (clip_boxes).
  virtual common::Result<std::vector<Interval>> bound(
      const std::vector<Interval>& boxes, const std::vector<Mat>& c, const Options& options,
      std::vector<Mat>* lower_coef, std::vector<std::vector<Interval>>* node_bounds,
      std::vector<Vec>* lower_bias) = 0;
};

struct VerifyResult {
  bool verified = false;  ///< every case was shown to contain no counterexample
  /// A box centre was found whose outputs meet every constraint of a case (only with splitting):
  /// a counterexample, held in `counterexample` (the concatenated inputs).
  bool falsified = false;
  int cases = 0;
  int cases_proved = 0;
  int cases_probed = 0;  ///< of them, proved by SplitOptions::probe_boxes' short search
  int64_t boxes = 0;     ///< bound computations made, over all cases
  /// Of them, under Method::kAlpha: halves of input splitting bounded with CROWN because tuning
  /// had stopped paying in their case's search (sampled: one half in 16, one in 128 while
  /// paused, is bounded both ways; alpha goes on while over 1% of those are proved by its
  /// bounds alone).
  int64_t untuned = 0;
  Vec counterexample;
};
// A model with a value-dependent shape (Model::value_dependent_shape) is `verified` only when
// every part of every case was decided by evaluating its run (README: cells on which the model is
// constant): its bounds cover only the runs in which every tensor has its static shape. Its
// counterexamples are confirmed by evaluating the run at the point.

/// For each case of the spec, bounds every unsafe constraint c.y <= rhs over the case's box; the
/// case is safe when some constraint's lower bound exceeds rhs. `verified` only when all are.
/// With split.max_boxes > 1, cases left open are split and each sub-box's centre is checked for a
/// counterexample (exact up to rounding: the point's upper bounds must meet every constraint).
/// With `bounder`, every bound computation goes to it (see BoxBounder).
common::Result<VerifyResult> verify(const Model& model, const Spec& spec, const Options& options,
                                    const SplitOptions& split = {}, BoxBounder* bounder = nullptr);

/// Whether `x` is a counterexample of `spec` on `model` (e.g. the original of a graph that was
/// rewritten before verification): x lies in some case's box and the model's outputs at x,
/// evaluated in double (IBP on the one-point box; for a model with a value-dependent shape, the
/// run at x, in the model's element types), meet every unsafe constraint of that case with the
/// upper end of c . y. The model must have the spec's input and output counts.
common::Result<bool> confirm_counterexample(const Model& model, const Spec& spec, const Vec& x);

/// The result file of the VNN-COMP scripts for `r` on `model`: "unsat", "timeout" (open when the
/// time limit ran out, `timed_out`) or "unknown", or "sat" and the counterexample's inputs and
/// outputs ((X_i v) ... (Y_j v)), the outputs evaluated at it (for a model with a
/// value-dependent shape, by its run there).
common::Result<std::string> vnncomp_result(const Model& model, const VerifyResult& r,
                                           bool timed_out);

}  // namespace propdag

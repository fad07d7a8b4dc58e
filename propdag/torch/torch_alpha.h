// alpha-CROWN in the torch engine (torch_alpha.cc): alpha.cc's tuning of the lower-line slopes
// of ReLU-like nodes, per box and objective row, for K boxes at once.
// Internal to propdag/torch: it includes ATen and is not installed.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "propdag/engine.h"
#include "propdag/model.h"
#include "propdag/torch/torch_ops.h"

namespace propdag::torch_engine::internal {

/// What tuning reads of the engine: the model, its kernels (one per Dag node), where each graph
/// input starts in a box, the boxes [K, inputs] and every node's bounds on them.
struct AlphaInput {
  const Model& model;
  const std::vector<std::unique_ptr<Kernel>>& kernels;
  const std::vector<int64_t>& offset;
  const TBox& x;
  const std::vector<TBox>& b;
};

/// Options::method kAlpha (else undefined): Crown::optimized_lower for K boxes: lower bounds [K,
/// rows] of c * target (c: [rows, numel]), the relaxations fixed by `in.b` except the lower slopes
/// of elements whose slope may vary (TLines::lo_min < lo_max), tuned per box and row by
/// Options::alpha_steps projected Adam steps (rate Options::alpha_rate) from CROWN's; every pass
/// clamps the slopes to their range, and the best bound per box and row is kept, so each is a CROWN
/// bound for some valid lines. Stops stepping past Options::deadline. With `coef` ([K, rows,
/// inputs]), writes the tuned rows' input coefficients of that bound there (the other rows are
/// left as they are). Rows not tuned get -inf.
///
/// Without `goal`, every row is tuned, or none (undefined) when the coefficients of one box would
/// exceed Options::chunk_entries (as alpha.cc): then CROWN's bound stands. With `goal` ([rows],
/// a verifier's: a box is proved once some row's lower bound exceeds its goal) and `crown` (the
/// lower bounds [K, rows] known before tuning: CROWN's, with IBP's), a box proved stops tuning, and
/// where all rows do not fit, the rows are tuned as many at a time as fit (at least one, if one
/// box's row holds at most 3.2e7 entries), those with the largest CROWN margin first, until every
/// box is proved.
common::Result<at::Tensor> optimized_lower(const AlphaInput& in, int target, const at::Tensor& c,
                                           const Options& opt, at::Tensor* coef,
                                           const at::Tensor& crown, const Vec* goal);

/// Options::method kAlpha (else `crown`): propdag::output_bounds' alpha for output `target`: both
/// sides tuned (the upper bound of y is minus the tuned lower bound of -y), never looser than
/// `crown`, its CROWN bounds [K, n].
common::Result<TBox> tuned_outputs(const AlphaInput& in, int target, const TBox& crown,
                                   const Options& opt);

}  // namespace propdag::torch_engine::internal

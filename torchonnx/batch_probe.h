// Where the batch lives in each value: shape inference run again at twice the batch size shows
// which dim scales with it, also after transposes and reshapes that move it out of dim 0 or merge
// it with another dim (attention's [seq, batch * heads, dim]).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "common/graph.h"
#include "shapeonnx/infer.h"

namespace torchonnx {

/// The model's batch size: the leading dim of its first tensor input of rank >= 2 whose leading dim
/// is symbolic or 1 (after inference), or -1 when it has none.
int64_t batch_size(const common::Graph& graph);
/// Whether input `name` has `batch` (> 0) as its leading dim.
bool is_input_batched(const common::Graph& graph, const std::string& name, int64_t batch);

/// Whether the graph as loaded may have a batch (an input of rank >= 2, or of unknown rank, whose
/// leading dim is symbolic, unknown or 1): only then is a probe worth a copy of the graph.
bool may_have_batch(const common::Graph& loaded);

/// One value's batch dim as the probe saw it.
struct ProbedAxis {
  common::Dims dims;  ///< the value's shape at the model's batch size
  int axis = -1;      ///< the one dim that doubles with the batch; -1: none; -2: not one clean dim
};
using BatchAxes = std::map<std::string, ProbedAxis, std::less<>>;

/// A copy of `graph` whose initializers have dims but no bytes: probe_batch_axes borrows the
/// bytes of the inferred graph's initializers of the same names, so the probe holds no second
/// copy of the weights (inference adds initializers but never changes one).
common::Graph copy_without_weights(common::Graph& graph);

/// Runs inference on `original` (the graph before inference, possibly from copy_without_weights)
/// with every batched input of `inferred` at twice its batch size and compares each value's shape
/// with `inferred`'s. Empty when the model has no batch or the doubled model does not infer (a
/// Reshape target that hard-codes the batch). `inferred` lends its initializers' bytes while the
/// probe runs and has them back on return.
BatchAxes probe_batch_axes(common::Graph original, common::Graph& inferred,
                           shapeonnx::Options options);

}  // namespace torchonnx

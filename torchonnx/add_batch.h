// --add-batch-dim: a model declared without a batch dimension gets one in front of its inputs.
#pragma once

#include "common/error.h"
#include "common/graph.h"

namespace torchonnx {

/// Gives every input without a batch dim (rank < 2, or a fixed leading dim other than 1) a
/// symbolic leading dim N, where the model's first step on it is to add a leading unit dim (a
/// Reshape to [1, ...] or [-1, ...] of the same elements, or an Unsqueeze at axis 0): that step
/// then keeps
/// the N samples instead, and the rest of the model computes them as its batch of 1 before.
/// Any other reader of such an input is an error (the model has no batch to follow; batch it
/// with vmap). Inputs that already have a batch dim are left as they are.
common::Status add_batch_dim(common::Graph& graph);

}  // namespace torchonnx

// Lowering: an inferred (and optionally slimmed) Graph -> module IR, one handler per op.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/graph.h"
#include "torchonnx/batch_probe.h"
#include "torchonnx/module.h"

namespace torchonnx {

struct LowerOptions {
  std::string class_name = "Model";
  /// RNN/GRU/LSTM as nn.RNN/nn.GRU/nn.LSTM layers where PyTorch computes the same thing (faster,
  /// cuDNN on a GPU, but vmap has no batching rule for them); otherwise a helper method that loops
  /// over the time steps with plain tensor ops.
  bool rnn_modules = false;
  /// Where the batch lives in each value (probe_batch_axes), so that reshapes and transposes that
  /// move it out of dim 0 keep the batch free; null: only a batch kept in dim 0 stays free.
  const BatchAxes* batch_axes = nullptr;
  /// When set, lowering goes on past a node it cannot compile: every such node's error is
  /// appended here (nodes reading its results are skipped), and the first one is returned.
  std::vector<common::Error>* problems = nullptr;
  /// Custom ops ("domain::Op") -> "module:function": a call of that function (ops/custom.cc).
  const std::map<std::string, std::string, std::less<>>* custom_ops = nullptr;
};

/// Lowers a graph whose values all have static shapes (run shapeonnx::infer first). Fails with
/// the node, op and opset when an op has no handler or uses a form that cannot be expressed.
common::Result<Module> lower(const common::Graph& graph, const LowerOptions& options = {});
/// The same, freeing each weight of `graph` (an initializer only Gemm, MatMul, Conv and
/// ConvTranspose read) once the last node reading it is lowered, so that the weights are not held
/// twice (graph and module). A model with a batch is first lowered
/// without keeping any weights, to learn whether the batch stays free.
common::Result<Module> lower(common::Graph&& graph, const LowerOptions& options = {});

/// Op types with a handler (default ONNX domain), sorted.
std::vector<std::string> supported_ops();

}  // namespace torchonnx

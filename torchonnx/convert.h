// The whole conversion: Graph -> shapes -> slim -> module IR -> model.py text + weights.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/graph.h"
#include "shapeonnx/custom_ops.h"
#include "torchonnx/module.h"
#include "torchonnx/report.h"

namespace torchonnx {

struct ConvertOptions {
  std::string class_name = "Model";
  bool slim = true;          ///< run slimonnx before lowering (when it is built)
  bool rnn_modules = false;  ///< LowerOptions::rnn_modules
  int64_t batch_size = 1;
  std::map<std::string, common::Dims> input_shapes;
  /// Sequence inputs: their lengths (element shapes from input_shapes or the declaration), or
  /// the shape of each element; forward takes such an input as a list of tensors.
  std::map<std::string, int64_t> sequence_lengths;
  std::map<std::string, std::vector<common::Dims>> sequence_inputs;
  /// Optional inputs that hold no value (forward takes None there); others hold a tensor.
  std::set<std::string> absent_inputs;
  /// Inputs declared without a batch dim get one (add_batch.h).
  bool add_batch_dim = false;
  /// Custom ops ("domain::Op") -> the Python function computing them ("module:function"), and
  /// types for their outputs where the model declares none.
  std::map<std::string, std::string, std::less<>> custom_ops;
  std::map<std::string, shapeonnx::ValueType, std::less<>> custom_types;
};

struct Converted {
  std::string python;       ///< text of <stem>.py
  Module module;            ///< layers and buffers (the weights)
  int64_t nodes = 0;        ///< nodes of the loaded model
  int64_t nodes_after = 0;  ///< nodes after shape inference and slimming (what is lowered)
};

/// True when this build links slimonnx.
bool slim_available();

/// Infers shapes, optionally slims, lowers and emits. `graph` is consumed. On failure the first
/// problem is returned; with `report`, it holds every node that cannot be compiled (the checks
/// go on past one, skipping what reads its results) and what the conversion met.
common::Result<Converted> convert(common::Graph graph, const ConvertOptions& options,
                                  ConvertReport* report = nullptr);
/// load_graph + convert.
common::Result<Converted> convert_file(std::string_view path, const ConvertOptions& options,
                                       ConvertReport* report = nullptr);
/// Writes `<dir>/<stem>.py` and `<dir>/<stem>.pth`, both or neither (common::write_outputs_atomic).
common::Status write_converted(const Converted& converted, std::string_view dir,
                               std::string_view stem);

}  // namespace torchonnx

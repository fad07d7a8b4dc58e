// What every tool's per-node context shares: one node of a graph, read-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "common/error.h"
#include "common/graph.h"

namespace common {

/// One node and the graph (and so the file) it belongs to: its inputs' and outputs' types as the
/// graph records them, its constant inputs, and errors located at it. Attributes are read through
/// `node()` (common::Node's attribute API). Each tool's context extends this view with what only
/// that tool has (the evaluator's input tensors, shapeonnx's outputs, torchonnx's statements).
class NodeView {
 public:
  NodeView(const Graph& graph, const Node& node) : graph_(graph), node_(node) {}

  const Graph& graph() const { return graph_; }
  const Node& node() const { return node_; }
  /// The file the graph was read from ("-" for stdin; may be empty).
  const std::string& file() const { return graph_.source; }

  size_t num_inputs() const { return node_.inputs.size(); }
  size_t num_outputs() const { return node_.outputs.size(); }
  /// Input i present (in range and not omitted).
  bool has_input(size_t i) const { return node_.has_input(i); }

  /// The graph's record of input i, or null when omitted or unknown.
  const Value* input_value(size_t i) const;
  /// The graph's record of output i, or null when omitted or unknown.
  const Value* output_value(size_t i) const;
  /// Element type of input i (kUndefined when unknown).
  DType dtype(size_t i) const;
  /// Shape of input i (empty when unknown).
  const Dims& shape(size_t i) const;
  int64_t rank(size_t i) const { return static_cast<int64_t>(shape(i).size()); }
  DType out_dtype(size_t i = 0) const;
  const Dims& out_shape(size_t i = 0) const;
  /// Known content of input i (initializer or propagated value); null when unknown.
  const Tensor* constant(size_t i) const;

  /// An error at this node: `file: node 'name' (Op): message` once rendered.
  Error error(std::string message) const { return graph_.error(node_, std::move(message)); }
  /// `r` with its error, a bare message (e.g. from a common/op_params.h reader), placed at this
  /// node.
  template <class T>
  Result<T> at(Result<T> r) const {
    if (!r.ok()) return error(r.error().message);
    return r;
  }

 private:
  const Graph& graph_;
  const Node& node_;
};

}  // namespace common

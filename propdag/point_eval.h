// Evaluation of a model at one input point with ONNX's own semantics (common's evaluator): every
// tensor takes the shape the run gives it, not the static shape the bound rules assume. For
// models whose shapes depend on input values (Model::value_dependent_shape), where bounds describe
// only the runs with the static shapes. Not installed.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "common/tensor.h"
#include "propdag/model.h"

namespace propdag::internal {

class PointEvaluator {
 public:
  /// `model` must outlive the evaluator; its graph must hold every initializer (Model keeps them
  /// for models with value-dependent shapes).
  explicit PointEvaluator(const Model& model) : model_(model) {}

  /// The graph's outputs at x (the graph inputs concatenated), flattened and concatenated, each
  /// node computed in its own element type (float ops in float). A node's outputs are remembered
  /// by the contents of its computed inputs, so points whose runs agree up to a node share the
  /// work past it (the cells of a patch position that all leave the image unchanged). Fails when
  /// an output's size differs from its static one (the spec's Y_i would not line up).
  common::Result<Vec> outputs(const Vec& x);

 private:
  using Key = std::array<uint64_t, 2>;
  struct KeyHash {
    size_t operator()(const Key& k) const { return static_cast<size_t>(k[0] ^ (k[1] << 1)); }
  };
  struct Value {
    common::Tensor tensor;
    Key hash{};
  };

  const Model& model_;
  // Per graph node: input contents -> outputs.
  std::vector<std::unordered_map<Key, std::vector<Value>, KeyHash>> memo_;
  int64_t memo_bytes_ = 0;
};

}  // namespace propdag::internal

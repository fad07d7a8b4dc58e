// Tracking of data-dependent integer index values of the form `base + constant`.
//
// Some models compute Slice bounds from input data (cctsdb_yolo: `s = Cast(x[12288])`,
// `Slice(t, s, s + 254)`). The bounds are unknown, but their difference is not: for indices in
// range the slice has 254 elements. AffineValues records, for small integer values that are not
// known, which unknown `base` tensor they offset and by how much, element by element.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/graph.h"

namespace shapeonnx {

struct Affine {
  std::string base;              ///< the unknown tensor (by value name), element-aligned
  std::vector<int64_t> offsets;  ///< element i = base[i] + offsets[i]
};

class AffineValues {
 public:
  /// Records what a just-inferred node's outputs are in terms of unknown bases.
  void update(const common::Graph& graph, const common::Node& node);
  const Affine* find(const std::string& name) const;
  /// For a Slice whose starts and ends are unknown but offset the same base: the offsets, which
  /// give the slice's extent for in-range indices. nullopt otherwise.
  std::optional<std::pair<std::vector<int64_t>, std::vector<int64_t>>> slice_bounds(
      const common::Graph& graph, const common::Node& node) const;

 private:
  std::unordered_map<std::string, Affine> values_;
};

}  // namespace shapeonnx

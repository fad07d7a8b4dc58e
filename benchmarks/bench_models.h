// The VNN-COMP models the benchmarks run over, loaded once up front.
#pragma once

#include <vector>

#include "common/graph.h"
#include "common/onnx_io.h"
#include "common/testing.h"
#include "shapeonnx/infer.h"

namespace benchmarks {

/// Every VNN-COMP model that loads (and, with `infer`, gets shapes from shapeonnx); empty when the
/// benchmark folder is absent.
inline std::vector<common::Graph> load_models(bool infer) {
  std::vector<common::Graph> graphs;
  for (const std::string& path : common::testing::vnncomp_models()) {
    auto g = common::load_graph(path);
    if (g.ok() && (!infer || shapeonnx::infer(*g).ok())) graphs.push_back(std::move(g).value());
  }
  return graphs;
}

}  // namespace benchmarks

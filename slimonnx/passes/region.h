// The groups the linear-region pass works on (see region.cc).
#pragma once

#include <vector>

#include "slimonnx/rewrite.h"

namespace slimonnx {

/// Connected groups (through the values they pass on and the inputs they share) of ops that are
/// affine in their non-constant inputs and treat each sample (dim 0, of size 1) separately; each
/// group has at least two nodes and is in ascending (topological) order. Ops upstream of a graph
/// output computed as Sub(a, b) of two computed values are left out.
std::vector<std::vector<int>> linear_regions(const Editor& ed);

}  // namespace slimonnx

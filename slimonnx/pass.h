// The pass interface and registry. Each pass family lives in its own file and registers here.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/error.h"
#include "common/graph.h"
#include "common/registry.h"

namespace slimonnx {

/// A pass makes one sweep over the graph and returns how many rewrites it made. The driver
/// repeats all passes until none rewrites anything. A pass must leave the graph valid
/// (topologically sorted, index rebuilt) and must never increase the node count.
using PassFn = common::Result<int64_t> (*)(common::Graph&);

struct Pass {
  std::string_view description;
  PassFn run;
  /// Runs only once the other passes have reached their fixed point, so that the local rewrites
  /// (which keep layers as they are) get the first say.
  bool late = false;
};

/// Pass families add their passes here by name, in the order they should run.
using PassRegistry = common::Registry<Pass>;

/// Every registered pass, in run order (PassRegistry::entries).
const PassRegistry& registered_passes();

void register_fold_passes(PassRegistry& table);       // constant folding, dead code
void register_cleanup_passes(PassRegistry& table);    // Identity/Dropout, no-op ops, x+0, x*1
void register_reshape_passes(PassRegistry& table);    // reshape/squeeze chains, transpose chains
void register_linear_passes(PassRegistry& table);     // MatMul+Add, linear chains, affine folding
void register_batchnorm_passes(PassRegistry& table);  // BatchNormalization into linear layers
void register_conv_passes(PassRegistry& table);       // Pad into Conv, Conv -> Gemm
void register_select_passes(PassRegistry& table);     // Slice / Gather into dense layers
void register_region_passes(PassRegistry& table);     // affine regions into one Gemm per output
void register_cse_passes(PassRegistry& table);        // common subexpressions

}  // namespace slimonnx

// The pass interface and registry. Each pass family lives in its own file and registers here.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/graph.h"

namespace slimonnx {

/// A pass makes one sweep over the graph and returns how many rewrites it made. The driver
/// repeats all passes until none rewrites anything. A pass must leave the graph valid
/// (topologically sorted, index rebuilt) and must never increase the node count.
using PassFn = common::Result<int64_t> (*)(common::Graph&);

struct Pass {
  std::string_view name;
  std::string_view description;
  PassFn run;
  /// Runs only once the other passes have reached their fixed point, so that the local rewrites
  /// (which keep layers as they are) get the first say.
  bool late = false;
};

/// Pass families add their passes here, in the order they should run.
struct PassTable {
  std::vector<Pass> entries;
  void add(std::string_view name, std::string_view description, PassFn run, bool late = false) {
    entries.push_back({name, description, run, late});
  }
};

/// Every registered pass, in run order.
const std::vector<Pass>& registered_passes();

void register_fold_passes(PassTable& table);       // constant folding, dead code
void register_cleanup_passes(PassTable& table);    // Identity/Dropout, no-op ops, x+0, x*1
void register_reshape_passes(PassTable& table);    // reshape/squeeze chains, transpose chains
void register_linear_passes(PassTable& table);     // MatMul+Add, linear chains, affine folding
void register_batchnorm_passes(PassTable& table);  // BatchNormalization into linear layers
void register_conv_passes(PassTable& table);       // Pad into Conv, Conv -> Gemm
void register_select_passes(PassTable& table);     // Slice / Gather into dense layers
void register_region_passes(PassTable& table);     // affine regions into one Gemm per output
void register_cse_passes(PassTable& table);        // common subexpressions

}  // namespace slimonnx

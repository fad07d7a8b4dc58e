// slimonnx: rewrites a model into a smaller one that computes the same function.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/graph.h"

namespace slimonnx {

/// Which passes to run. Empty `passes` means every registered pass (in registry order);
/// names in `disable` are skipped. Unknown names are an error.
struct Options {
  std::vector<std::string> passes;
  std::vector<std::string> disable;
  /// Upper bound on rounds over all passes (the fixed point is normally reached in 2-4).
  int max_rounds = 32;
};

/// What `run` did.
struct Report {
  int64_t nodes_before = 0;
  int64_t nodes_after = 0;
  /// Pass name -> number of rewrites it made (every selected pass appears, possibly with 0).
  std::map<std::string, int64_t> rewrites;
};

/// A registered pass, for --list-passes.
struct PassInfo {
  std::string name;
  std::string description;
};

/// Rewrites `graph` in place, running the selected passes to a fixed point. Expects shapes from
/// shapeonnx::infer (passes that need a shape skip values without one). Keeps graph input and
/// output names; never increases the node count; running it again changes nothing.
/// On error the graph may be partially rewritten. Shapes stay as inference left them, for the
/// caller that goes on to use them (torchonnx lowers the slimmed graph with them); a caller
/// that writes the graph to a file calls forget_untrusted_shapes first.
common::Result<Report> run(common::Graph& graph, const Options& options = {});

/// Drops the shapes and dtypes inferred from guessed runtime data (a Slice whose starts come
/// from a graph input, and what follows from it), which a runtime reading the file would trust.
/// Graph outputs keep theirs (the ONNX checker requires one there).
void forget_untrusted_shapes(common::Graph& graph);

/// Every registered pass, in the order they run.
std::vector<PassInfo> list_passes();

}  // namespace slimonnx

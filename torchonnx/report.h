// What a conversion met: every node it cannot compile at once, and the --report Markdown file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/graph.h"

namespace torchonnx {

/// Facts about one conversion, filled as far as it got.
struct ConvertReport {
  std::string source;
  bool converted = false;
  std::vector<common::OpsetId> opsets;
  std::map<std::string, int64_t> op_counts;  ///< loaded model: "Op" or "domain::Op" -> nodes
  int64_t nodes_loaded = -1, nodes_inferred = -1, nodes_after = -1;  ///< -1: not reached
  int64_t nodes_dropped = 0;  ///< left out: cannot be compiled, or read such a node's results
  std::map<std::string, int64_t> slim_rewrites;  ///< slimonnx pass -> rewrites
  std::vector<std::string> inputs, outputs;      ///< "name: float32 [1, 5]"
  std::vector<common::Error> problems;           ///< every node that cannot be compiled, in order
  std::map<std::string, std::string, std::less<>> custom_ops;  ///< declared: op -> module:function
};

/// Nodes of ops torchonnx has no lowering for (another domain, or no handler), in graph order;
/// the declared custom ops ("domain::Op" keys) have one.
std::vector<common::Error> unsupported_nodes(
    const common::Graph& graph, const std::map<std::string, std::string, std::less<>>& custom = {});

/// Removes the nodes named in `problems` and every node that reads their results, so that the
/// rest of the graph can still be checked; graph outputs no longer computed are dropped.
void drop_failed(common::Graph& graph, const std::vector<common::Error>& problems);

/// Records the loaded graph's opsets, op counts and interface in `report`.
void describe_loaded(const common::Graph& graph, ConvertReport& report);
/// Records the interface with its inferred shapes.
void describe_interface(const common::Graph& graph, ConvertReport& report);

/// Lines for a failed conversion: a count, one line per op type (count and first node names),
/// then one line per node (Error::str()).
std::vector<std::string> problem_lines(const std::vector<common::Error>& problems);

/// The Markdown text of one model's report.
std::string markdown(const ConvertReport& report);

}  // namespace torchonnx

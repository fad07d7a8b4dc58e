// The DAG view of a model that bound propagation walks: one node per variable tensor.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "common/graph.h"

namespace propdag {

/// A variable tensor: a graph input, or one output of an op whose inputs depend on a graph input.
/// Constant sub-expressions (initializers, Shape chains) are not nodes; ops see them as constants.
struct DagNode {
  std::string name;         ///< the ONNX value name
  int graph_node = -1;      ///< index into Graph::nodes; -1 for a graph input
  int output_index = 0;     ///< which output of that graph node
  std::vector<int> inputs;  ///< per input position of the graph node: Dag node or -1 (constant)
  std::vector<int> preds;   ///< distinct variable predecessors, ascending
  std::vector<int> succs;   ///< distinct successors, ascending
};

/// Nodes in a deterministic topological order (the graph's node order), inputs first.
class Dag {
 public:
  /// Builds the view. A value is variable when it depends on a graph input through ops other than
  /// Shape/Size. Fails when a graph output is not variable or a name is produced twice.
  static common::Result<Dag> build(const common::Graph& graph);

  const std::vector<DagNode>& nodes() const { return nodes_; }
  const DagNode& node(int i) const { return nodes_[i]; }
  int size() const { return static_cast<int>(nodes_.size()); }
  const std::vector<int>& inputs() const { return inputs_; }
  const std::vector<int>& outputs() const { return outputs_; }
  /// Dag node of a value name, -1 if the value is constant or unknown.
  int find(const std::string& name) const;

  /// Forward schedules: every node after its predecessors. BFS visits by depth level (Kahn's
  /// algorithm, FIFO, lowest index first); DFS finishes one branch before starting the next.
  std::vector<int> bfs_order() const;
  std::vector<int> dfs_order() const;
  /// Backward schedule from `target` to the inputs: the target's ancestors (itself included),
  /// every node before all of its predecessors (reverse topological order).
  std::vector<int> backward_order(int target) const;
  /// For a forward schedule: release[k] lists the nodes whose cached results are no longer needed
  /// after step k (their last successor ran; graph outputs are never released).
  std::vector<std::vector<int>> lifetimes(const std::vector<int>& order) const;

  /// The same schedules, computed once when the Dag is built: engines that bound box after box
  /// of a small network spent several percent of each bound recomputing them. bfs_order() and
  /// its lifetimes() always; backward_order(target) where the schedules of all nodes hold at
  /// most kCachedOrderEntries entries in all, else computed into `scratch`.
  static constexpr int64_t kCachedOrderEntries = int64_t{1} << 20;
  const std::vector<int>& bfs() const { return bfs_; }
  const std::vector<std::vector<int>>& bfs_release() const { return bfs_release_; }
  const std::vector<int>& backward_schedule(int target, std::vector<int>& scratch) const;

 private:
  void cache_schedules();

  std::vector<DagNode> nodes_;
  std::vector<int> inputs_, outputs_;
  std::unordered_map<std::string, int> index_;
  std::vector<int> bfs_;
  std::vector<std::vector<int>> bfs_release_;
  std::vector<std::vector<int>> backward_;  ///< per node, or empty: over kCachedOrderEntries
};

}  // namespace propdag

#include "propdag/dag.h"

#include <algorithm>
#include <deque>
#include <unordered_map>

namespace propdag {
namespace {

// Ops whose result depends only on the shape of their input, never on its values.
bool shape_only(const common::Node& node) {
  return node.op_type == "Shape" || node.op_type == "Size";
}

void add_unique(std::vector<int>& v, int x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

}  // namespace

common::Result<Dag> Dag::build(const common::Graph& graph) {
  Dag dag;
  std::unordered_map<std::string, int> index;
  for (const std::string& name : graph.inputs) {
    if (graph.is_initializer(name)) continue;
    index[name] = dag.size();
    dag.inputs_.push_back(dag.size());
    dag.nodes_.push_back(DagNode{name, -1, 0, {}, {}, {}});
  }
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const common::Node& node = graph.nodes[n];
    std::vector<int> in(node.inputs.size(), -1);
    bool variable = false;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      auto it = index.find(node.inputs[i]);
      if (it == index.end()) continue;
      in[i] = it->second;
      variable = true;
    }
    if (!variable || shape_only(node)) continue;
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const std::string& name = node.outputs[o];
      if (name.empty()) continue;
      if (index.count(name)) return graph.error(node, "value '" + name + "' is produced twice");
      index[name] = dag.size();
      DagNode d{name, static_cast<int>(n), static_cast<int>(o), in, {}, {}};
      for (int p : in)
        if (p >= 0) add_unique(d.preds, p);
      std::sort(d.preds.begin(), d.preds.end());
      dag.nodes_.push_back(std::move(d));
    }
  }
  for (int i = 0; i < dag.size(); ++i)
    for (int p : dag.nodes_[i].preds) add_unique(dag.nodes_[p].succs, i);
  for (const std::string& name : graph.outputs) {
    auto it = index.find(name);
    if (it == index.end())
      return graph.error("graph output '" + name + "' does not depend on any graph input");
    dag.outputs_.push_back(it->second);
  }
  dag.index_ = std::move(index);
  dag.cache_schedules();
  return dag;
}

int Dag::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

std::vector<int> Dag::bfs_order() const {
  std::vector<int> pending(size());
  std::deque<int> ready;
  for (int i = 0; i < size(); ++i) {
    pending[i] = static_cast<int>(nodes_[i].preds.size());
    if (pending[i] == 0) ready.push_back(i);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    int n = ready.front();
    ready.pop_front();
    order.push_back(n);
    for (int s : nodes_[n].succs)
      if (--pending[s] == 0) ready.push_back(s);
  }
  return order;
}

std::vector<int> Dag::dfs_order() const {
  // Post-order DFS over predecessors, started from the sinks in index order: a node is emitted
  // right after its whole input cone, so one branch is finished before the next one starts.
  std::vector<char> done(size(), 0);
  std::vector<int> order;
  std::vector<std::pair<int, size_t>> stack;
  std::vector<int> roots;
  for (int i = 0; i < size(); ++i)
    if (nodes_[i].succs.empty()) roots.push_back(i);
  for (int root : roots) {
    stack.push_back({root, 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (done[n]) {
        stack.pop_back();
        continue;
      }
      if (next < nodes_[n].preds.size()) {
        int p = nodes_[n].preds[next++];
        if (!done[p]) stack.push_back({p, 0});
        continue;
      }
      done[n] = 1;
      order.push_back(n);
      stack.pop_back();
    }
  }
  return order;
}

std::vector<int> Dag::backward_order(int target) const {
  std::vector<char> needed(size(), 0);
  needed[target] = 1;
  std::vector<int> order;
  // Nodes are stored topologically, so a descending scan visits successors first.
  for (int i = target; i >= 0; --i) {
    if (!needed[i]) continue;
    order.push_back(i);
    for (int p : nodes_[i].preds) needed[p] = 1;
  }
  return order;
}

std::vector<std::vector<int>> Dag::lifetimes(const std::vector<int>& order) const {
  std::vector<int> step(size(), -1);
  for (size_t k = 0; k < order.size(); ++k) step[order[k]] = static_cast<int>(k);
  std::vector<char> is_output(size(), 0);
  for (int o : outputs_) is_output[o] = 1;
  std::vector<std::vector<int>> release(order.size());
  for (int n = 0; n < size(); ++n) {
    if (is_output[n] || step[n] < 0) continue;
    int last = step[n];
    for (int s : nodes_[n].succs) last = std::max(last, step[s]);
    release[last].push_back(n);
  }
  return release;
}

void Dag::cache_schedules() {
  bfs_ = bfs_order();
  bfs_release_ = lifetimes(bfs_);
  std::vector<std::vector<int>> all(nodes_.size());
  int64_t entries = 0;
  for (int n = 0; n < size(); ++n) {
    all[n] = backward_order(n);
    entries += static_cast<int64_t>(all[n].size());
    if (entries > kCachedOrderEntries) return;
  }
  backward_ = std::move(all);
}

const std::vector<int>& Dag::backward_schedule(int target, std::vector<int>& scratch) const {
  if (!backward_.empty()) return backward_[target];
  scratch = backward_order(target);
  return scratch;
}

}  // namespace propdag

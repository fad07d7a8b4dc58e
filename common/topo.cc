#include "common/topo.h"

#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

namespace common {

namespace {

// Names the producer of every value; error if a value is produced twice.
Result<std::unordered_map<std::string, int>> producers(const Graph& graph) {
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < static_cast<int>(graph.nodes.size()); ++i) {
    for (const std::string& out : graph.nodes[i].outputs) {
      if (out.empty()) continue;
      if (!producer.emplace(out, i).second || graph.is_initializer(out)) {
        return graph.error(graph.nodes[i], "value '" + out + "' is produced more than once");
      }
    }
  }
  return producer;
}

// Finds a cycle among `pending` nodes by a three-colour DFS and renders it as node names.
std::string cycle_path(const Graph& graph, const std::unordered_map<std::string, int>& producer,
                       const std::vector<int>& indegree) {
  const int n = static_cast<int>(graph.nodes.size());
  std::vector<int> colour(n, 0), parent(n, -1);
  auto label = [&](int i) {
    return graph.nodes[i].name.empty() ? graph.nodes[i].op_type : graph.nodes[i].name;
  };
  for (int start = 0; start < n; ++start) {
    if (indegree[start] == 0 || colour[start] != 0) continue;
    std::vector<std::pair<int, size_t>> stack{{start, 0}};
    colour[start] = 1;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      const auto& ins = graph.nodes[node].inputs;
      if (next == ins.size()) {
        colour[node] = 2;
        stack.pop_back();
        continue;
      }
      auto it = producer.find(ins[next++]);
      if (it == producer.end()) continue;
      const int pred = it->second;
      if (colour[pred] == 1) {  // back edge: node depends on pred which is on the stack
        // Data flows pred -> node -> parent[node] -> ... -> pred.
        std::string path = label(pred);
        for (int cur = node; cur != pred && cur != -1; cur = parent[cur]) {
          path += " -> " + label(cur);
        }
        return path + " -> " + label(pred);
      }
      if (colour[pred] == 0) {
        colour[pred] = 1;
        parent[pred] = node;
        stack.emplace_back(pred, 0);
      }
    }
  }
  return "?";
}

}  // namespace

Status topo_sort(Graph& graph) {
  ASSIGN_OR_RETURN(auto producer, producers(graph));
  const int n = static_cast<int>(graph.nodes.size());
  std::vector<int> indegree(n, 0);
  std::vector<std::vector<int>> users(n);
  std::unordered_map<std::string, bool> available;
  for (const std::string& in : graph.inputs) available[in] = true;
  for (const auto& [key, t] : graph.initializers) available[key] = true;
  for (int i = 0; i < n; ++i) {
    for (const std::string& in : graph.nodes[i].inputs) {
      if (in.empty()) continue;
      auto it = producer.find(in);
      if (it != producer.end()) {
        ++indegree[i];
        users[it->second].push_back(i);
      } else if (!available.count(in)) {
        return graph.error(graph.nodes[i], "input '" + in + "' has no producer");
      }
    }
  }
  for (const std::string& out : graph.outputs) {
    if (!producer.count(out) && !available.count(out)) {
      return graph.error("graph output '" + out + "' has no producer");
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < n; ++i) {
    if (indegree[i] == 0) ready.push(i);
  }
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[i]) {
      if (--indegree[u] == 0) ready.push(u);
    }
  }
  if (static_cast<int>(order.size()) != n) {
    return graph.error("graph has a cycle: " + cycle_path(graph, producer, indegree));
  }
  std::vector<Node> sorted;
  sorted.reserve(n);
  for (int i : order) sorted.push_back(std::move(graph.nodes[i]));
  graph.nodes = std::move(sorted);
  graph.rebuild_index();
  return {};
}

}  // namespace common

// The traversal engine: runs per-node hooks in a schedule and frees cached results when their
// last consumer has run, so a verifier plugs in its own math without writing graph code.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "common/error.h"
#include "propdag/dag.h"

namespace propdag {

/// Results of a forward run: per Dag node, the cached value if still held.
template <class T>
struct ForwardResult {
  std::vector<std::optional<T>> values;
  size_t peak_cached = 0;  ///< most results held at once
};

/// Runs `hook(node, inputs)` for every node of `order` (a forward schedule of `dag`). `inputs`
/// has one pointer per input position of the node's graph op (nullptr for constant inputs); for
/// graph inputs it is empty. With keep_all false a result is dropped right after its last
/// successor ran (graph outputs are kept). Stops at the first failing hook.
/// `release` is dag.lifetimes(order) (unread with keep_all).
template <class T, class Hook>
common::Result<ForwardResult<T>> run_forward(const Dag& dag, const std::vector<int>& order,
                                             const std::vector<std::vector<int>>& release,
                                             Hook&& hook, bool keep_all) {
  ForwardResult<T> out;
  out.values.resize(dag.size());
  size_t held = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const DagNode& node = dag.node(order[k]);
    std::vector<const T*> in(node.inputs.size(), nullptr);
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (node.inputs[i] >= 0) in[i] = &*out.values[node.inputs[i]];
    common::Result<T> r = hook(order[k], in);
    if (!r.ok()) return r.error();
    out.values[order[k]] = std::move(r).value();
    out.peak_cached = std::max(out.peak_cached, ++held);
    if (keep_all) continue;
    for (int n : release[k]) {
      out.values[n].reset();
      --held;
    }
  }
  return out;
}

template <class T, class Hook>
common::Result<ForwardResult<T>> run_forward(const Dag& dag, const std::vector<int>& order,
                                             Hook&& hook, bool keep_all = false) {
  return run_forward<T>(dag, order,
                        keep_all ? std::vector<std::vector<int>>{} : dag.lifetimes(order),
                        std::forward<Hook>(hook), keep_all);
}

}  // namespace propdag

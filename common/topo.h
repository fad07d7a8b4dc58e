// Deterministic topological order of a graph's nodes.
#pragma once

#include "common/error.h"
#include "common/graph.h"

namespace common {

/// Reorders graph.nodes topologically; among ready nodes the earlier one (original order) comes
/// first, so an already sorted graph is unchanged. Fails on a cycle, naming its path
/// (`cycle: a -> b -> a`), and on a value that no node, input or initializer produces.
/// Rebuilds the value index.
Status topo_sort(Graph& graph);

}  // namespace common

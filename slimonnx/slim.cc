#include "slimonnx/slim.h"

#include <algorithm>
#include <string_view>

#include "slimonnx/pass.h"
#include "slimonnx/rewrite.h"

namespace slimonnx {
namespace {

PassTable build_table() {
  PassTable table;
  register_fold_passes(table);
  register_cse_passes(table);
  register_cleanup_passes(table);
  register_reshape_passes(table);
  register_linear_passes(table);
  register_batchnorm_passes(table);
  register_conv_passes(table);
  register_select_passes(table);
  register_region_passes(table);
  return table;
}

const Pass* find_pass(std::string_view name) {
  for (const Pass& p : registered_passes()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

common::Status check_names(const common::Graph& graph, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    if (find_pass(n) == nullptr) return graph.error("unknown pass '" + n + "'");
  }
  return {};
}

// The selected passes in registry order (so `--passes b,a` runs a before b, like the default).
common::Result<std::vector<const Pass*>> select(const common::Graph& graph,
                                                const Options& options) {
  RETURN_IF_ERROR(check_names(graph, options.passes));
  RETURN_IF_ERROR(check_names(graph, options.disable));
  std::vector<const Pass*> selected;
  for (const Pass& p : registered_passes()) {
    const std::string name(p.name);
    if (!options.passes.empty() && !contains(options.passes, name)) continue;
    if (contains(options.disable, name)) continue;
    selected.push_back(&p);
  }
  return selected;
}

// Shapes inferred from guessed runtime data are not written out: a runtime would trust them.
// Graph outputs keep theirs (the checker requires a shape there).
void forget_untrusted_shapes(common::Graph& graph) {
  for (const std::string& name : untrusted_values(graph)) {
    if (contains(graph.outputs, name)) continue;
    common::Value& v = graph.value(name);
    v.dtype = common::DType::kUndefined;
    v.shape.reset();
    v.dim_params.clear();
    v.known.reset();
  }
}

}  // namespace

const std::vector<Pass>& registered_passes() {
  static const std::vector<Pass> passes = build_table().entries;
  return passes;
}

std::vector<PassInfo> list_passes() {
  std::vector<PassInfo> out;
  for (const Pass& p : registered_passes()) {
    out.push_back({std::string(p.name), std::string(p.description)});
  }
  return out;
}

common::Result<Report> run(common::Graph& graph, const Options& options) {
  ASSIGN_OR_RETURN(std::vector<const Pass*> selected, select(graph, options));
  Report report;
  report.nodes_before = static_cast<int64_t>(graph.nodes.size());
  for (const Pass* p : selected) report.rewrites[std::string(p->name)] = 0;
  for (int round = 0; round < options.max_rounds; ++round) {
    int64_t changed = 0;
    for (bool late : {false, true}) {
      if (late && changed != 0) break;
      for (const Pass* p : selected) {
        if (p->late != late) continue;
        ASSIGN_OR_RETURN(int64_t n, p->run(graph));
        report.rewrites[std::string(p->name)] += n;
        changed += n;
      }
    }
    if (changed == 0) break;
  }
  forget_untrusted_shapes(graph);
  report.nodes_after = static_cast<int64_t>(graph.nodes.size());
  if (report.nodes_after > report.nodes_before) {  // every pass promises this; keep it checked
    return graph.error("internal error: slimming grew the graph from " +
                       std::to_string(report.nodes_before) + " to " +
                       std::to_string(report.nodes_after) + " nodes");
  }
  return report;
}

}  // namespace slimonnx

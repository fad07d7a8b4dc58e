#include "slimonnx/slim.h"

#include <algorithm>
#include <string_view>

#include "slimonnx/pass.h"
#include "slimonnx/rewrite.h"

namespace slimonnx {
namespace {

PassRegistry build_table() {
  PassRegistry table;
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

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

common::Status check_names(const common::Graph& graph, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    if (!registered_passes().contains(n)) return graph.error("unknown pass '" + n + "'");
  }
  return {};
}

// The selected passes in registry order (so `--passes b,a` runs a before b, like the default).
common::Result<std::vector<const PassRegistry::Entry*>> select(const common::Graph& graph,
                                                               const Options& options) {
  RETURN_IF_ERROR(check_names(graph, options.passes));
  RETURN_IF_ERROR(check_names(graph, options.disable));
  std::vector<const PassRegistry::Entry*> selected;
  for (const PassRegistry::Entry& p : registered_passes().entries()) {
    if (!options.passes.empty() && !contains(options.passes, p.name)) continue;
    if (contains(options.disable, p.name)) continue;
    selected.push_back(&p);
  }
  return selected;
}

}  // namespace

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

const PassRegistry& registered_passes() {
  static const PassRegistry passes = build_table();
  return passes;
}

std::vector<PassInfo> list_passes() {
  std::vector<PassInfo> out;
  for (const PassRegistry::Entry& p : registered_passes().entries()) {
    out.push_back({p.name, std::string(p.rule.description)});
  }
  return out;
}

common::Result<Report> run(common::Graph& graph, const Options& options) {
  ASSIGN_OR_RETURN(std::vector<const PassRegistry::Entry*> selected, select(graph, options));
  Report report;
  report.nodes_before = static_cast<int64_t>(graph.nodes.size());
  for (const PassRegistry::Entry* p : selected) report.rewrites[p->name] = 0;
  for (int round = 0; round < options.max_rounds; ++round) {
    int64_t changed = 0;
    for (bool late : {false, true}) {
      if (late && changed != 0) break;
      for (const PassRegistry::Entry* p : selected) {
        if (p->rule.late != late) continue;
        ASSIGN_OR_RETURN(int64_t n, p->rule.run(graph));
        report.rewrites[p->name] += n;
        changed += n;
      }
    }
    if (changed == 0) break;
  }
  report.nodes_after = static_cast<int64_t>(graph.nodes.size());
  if (report.nodes_after > report.nodes_before) {  // every pass promises this; keep it checked
    return graph.error("internal error: slimming grew the graph from " +
                       std::to_string(report.nodes_before) + " to " +
                       std::to_string(report.nodes_after) + " nodes");
  }
  return report;
}

}  // namespace slimonnx

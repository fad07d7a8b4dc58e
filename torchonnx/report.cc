#include "torchonnx/report.h"

#include <algorithm>
#include <set>

#include "common/cli.h"
#include "shapeonnx/control_flow/control_flow.h"
#include "shapeonnx/rules/rules.h"
#include "torchonnx/context.h"

namespace torchonnx {

namespace {

bool default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

std::string op_key(const common::Node& node) {
  return default_domain(node.domain) ? node.op_type : node.domain + "::" + node.op_type;
}

// Markdown table cell text: no pipes or newlines.
std::string cell(std::string text) {
  text = common::one_line(text);
  std::replace(text.begin(), text.end(), '|', '/');
  return text;
}

}  // namespace

std::vector<common::Error> unsupported_nodes(
    const common::Graph& graph, const std::map<std::string, std::string, std::less<>>& custom) {
  const std::vector<std::string>& expanded = shapeonnx::expanded_ops();
  std::vector<common::Error> out;
  for (const common::Node& node : graph.nodes) {
    if (!default_domain(node.domain) && custom.count(op_key(node))) continue;
    const bool known_domain =
        default_domain(node.domain) || shapeonnx::is_training_op(node.domain, node.op_type);
    if (!known_domain) {
      common::Error e =
          graph.error(node, "op of domain '" + node.domain + "' has no PyTorch lowering (opset " +
                                std::to_string(graph.opset(node.domain)) + ")");
      e.op = op_key(node);
      out.push_back(std::move(e));
      continue;
    }
    const bool expands =
        std::find(expanded.begin(), expanded.end(), node.op_type) != expanded.end();
    if (!find_handler(node.op_type) && !expands) {
      out.push_back(graph.error(
          node, "op has no PyTorch lowering (opset " + std::to_string(graph.opset()) + ")"));
    }
  }
  return out;
}

void drop_failed(common::Graph& graph, const std::vector<common::Error>& problems) {
  std::set<std::string> bad_nodes, bad_values;
  for (const common::Error& e : problems) bad_nodes.insert(e.node);
  std::vector<common::Node> kept;
  for (common::Node& node : graph.nodes) {  // topological order: readers come after writers
    const bool reads_bad = std::any_of(node.inputs.begin(), node.inputs.end(),
                                       [&](const std::string& v) { return bad_values.count(v); });
    if (bad_nodes.count(node.name) || reads_bad) {
      bad_values.insert(node.outputs.begin(), node.outputs.end());
      continue;
    }
    kept.push_back(std::move(node));
  }
  graph.nodes = std::move(kept);
  std::erase_if(graph.outputs, [&](const std::string& o) { return bad_values.count(o) != 0; });
  graph.rebuild_index();
  graph.prune_values();
}

void describe_loaded(const common::Graph& graph, ConvertReport& report) {
  report.source = graph.source;
  report.opsets = graph.opsets;
  report.nodes_loaded = static_cast<int64_t>(graph.nodes.size());
  for (const common::Node& node : graph.nodes) ++report.op_counts[op_key(node)];
  describe_interface(graph, report);
}

void describe_interface(const common::Graph& graph, ConvertReport& report) {
  report.inputs.clear();
  report.outputs.clear();
  for (const std::string& n : graph.inputs) report.inputs.push_back(common::port_text(graph, n));
  for (const std::string& n : graph.outputs) report.outputs.push_back(common::port_text(graph, n));
}

std::vector<std::string> problem_lines(const std::vector<common::Error>& problems) {
  constexpr size_t kNamesShown = 5;
  std::map<std::string, std::vector<std::string>> by_op;
  for (const common::Error& e : problems) by_op[e.op.empty() ? "(model)" : e.op].push_back(e.node);
  std::vector<std::string> out;
  out.push_back(std::to_string(problems.size()) + " node" + (problems.size() == 1 ? "" : "s") +
                " cannot be compiled, " + std::to_string(by_op.size()) + " op type" +
                (by_op.size() == 1 ? "" : "s") + ":");
  for (const auto& [op, names] : by_op) {
    std::string line = "  " + common::one_line(op) + " x" + std::to_string(names.size()) + ": ";
    for (size_t i = 0; i < std::min(names.size(), kNamesShown); ++i) {
      line += (i ? ", '" : "'") + common::one_line(names[i]) + "'";
    }
    if (names.size() > kNamesShown) line += ", ...";
    out.push_back(line);
  }
  for (const common::Error& e : problems) {
    common::Error local = e;
    local.file.clear();
    out.push_back(local.str());
  }
  return out;
}

std::string markdown(const ConvertReport& r) {
  std::string md = "# torchonnx: " + cell(r.source) + "\n\n";
  md += r.converted ? "Converted.\n\n"
                    : "Not converted: " + std::to_string(r.problems.size()) + " problem" +
                          (r.problems.size() == 1 ? "" : "s") + ".\n\n";
  md += "## Opsets\n\n| domain | version |\n|---|---|\n";
  for (const common::OpsetId& o : r.opsets) {
    md += "| " + cell(o.domain.empty() ? "ai.onnx" : o.domain) + " | " + std::to_string(o.version) +
          " |\n";
  }
  auto count = [](int64_t n) { return n < 0 ? std::string("not reached") : std::to_string(n); };
  md += "\n## Nodes\n\n| stage | nodes |\n|---|---|\n| loaded | " + count(r.nodes_loaded) +
        " |\n| control flow unrolled, shapes inferred | " + count(r.nodes_inferred) +
        " |\n| after slimming (lowered) | " + count(r.nodes_after) + " |\n";
  if (r.nodes_dropped > 0) {
    md += "\n" + std::to_string(r.nodes_dropped) +
          " nodes were left out of inference and lowering: those that cannot be compiled and "
          "those that read their results.\n";
  }
  if (r.nodes_after >= 0) {
    std::string rows;
    for (const auto& [pass, n] : r.slim_rewrites) {
      if (n > 0) rows += "| " + cell(pass) + " | " + std::to_string(n) + " |\n";
    }
    md += rows.empty() ? "\nslimonnx rewrote nothing.\n"
                       : "\n| slimonnx pass | rewrites |\n|---|---|\n" + rows;
  }
  md += "\n## Op types (loaded model)\n\n| op | nodes |\n|---|---|\n";
  for (const auto& [op, n] : r.op_counts)
    md += "| " + cell(op) + " | " + std::to_string(n) + " |\n";
  if (!r.custom_ops.empty()) {
    md += "\n## Custom ops (declared)\n\n| op | Python function | nodes |\n|---|---|---|\n";
    for (const auto& [op, target] : r.custom_ops) {
      auto it = r.op_counts.find(op);
      md += "| " + cell(op) + " | " + cell(target) + " | " +
            std::to_string(it == r.op_counts.end() ? 0 : it->second) + " |\n";
    }
  }
  md += "\n## Inputs\n\n";
  for (const std::string& p : r.inputs) md += "- `" + cell(p) + "`\n";
  md += "\n## Outputs\n\n";
  for (const std::string& p : r.outputs) md += "- `" + cell(p) + "`\n";
  md += "\n## Problems\n\n";
  if (r.problems.empty()) md += "None.\n";
  for (const common::Error& e : r.problems) {
    common::Error local = e;
    local.file.clear();
    md += "- " + cell(local.str()) + "\n";
  }
  return md;
}

}  // namespace torchonnx

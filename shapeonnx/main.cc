// shapeonnx: static shape inference for ONNX models.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <utility>

#include "common/cli.h"
#include "common/cli_app.h"
#include "common/onnx_io.h"
#include "shapeonnx/control_flow/control_flow.h"
#include "shapeonnx/infer.h"

namespace {

struct Args {
  std::string input;
  std::string output = "-";
  int64_t batch_size = 1;
  std::vector<std::string> input_shapes;
  bool stats = false;
  bool unroll = false;
  std::vector<std::string> custom_ops, custom_types;  ///< --custom-op, --custom-op-shape
  std::string report;                                 ///< --report FILE.md
};

// What the --report file says about one run (filled as far as it got).
struct Report {
  std::vector<common::OpsetId> opsets;
  std::map<std::string, int64_t> op_counts;
  int64_t nodes_loaded = -1, nodes_inferred = -1, values = -1, static_values = -1;
  std::vector<std::string> inputs, outputs;
  std::optional<common::Error> problem;

  void loaded(const common::Graph& g) {
    opsets = g.opsets;
    nodes_loaded = static_cast<int64_t>(g.nodes.size());
    for (const common::Node& n : g.nodes) {
      const bool plain = n.domain.empty() || n.domain == "ai.onnx";
      ++op_counts[plain ? n.op_type : n.domain + "::" + n.op_type];
    }
    interface(g);
  }
  void interface(const common::Graph& g) {
    inputs.clear();
    outputs.clear();
    for (const std::string& n : g.inputs) inputs.push_back(common::port_text(g, n));
    for (const std::string& n : g.outputs) outputs.push_back(common::port_text(g, n));
  }
  std::string markdown(const std::string& input) const {
    auto n = [](int64_t v) { return v < 0 ? std::string("not reached") : std::to_string(v); };
    std::string md = "# shapeonnx: " + common::one_line(input) + "\n\n" +
                     (problem ? "Not inferred: 1 problem.\n" : "Inferred.\n") +
                     "\n## Opsets\n\n| domain | version |\n|---|---|\n";
    for (const common::OpsetId& o : opsets) {
      md += "| " + (o.domain.empty() ? std::string("ai.onnx") : common::one_line(o.domain)) +
            " | " + std::to_string(o.version) + " |\n";
    }
    md += "\n## Nodes\n\n| stage | nodes |\n|---|---|\n| loaded | " + n(nodes_loaded) +
          " |\n| inferred (control flow unrolled with --unroll) | " + n(nodes_inferred) +
          " |\n\nValues with a static shape: " + n(static_values) + " of " + n(values) +
          ".\n\n## Op types\n\n| op | nodes |\n|---|---|\n";
    for (const auto& [op, c] : op_counts) {
      md += "| " + common::one_line(op) + " | " + std::to_string(c) + " |\n";
    }
    md += "\n## Inputs\n\n";
    for (const std::string& p : inputs) md += "- `" + common::one_line(p) + "`\n";
    md += "\n## Outputs\n\n";
    for (const std::string& p : outputs) md += "- `" + common::one_line(p) + "`\n";
    md += "\n## Problems\n\n";
    if (!problem) return md + "None.\n";
    common::Error e = *problem;
    e.file.clear();
    return md + "- " + e.str() + "\n";
  }
};

int infer_and_save(const Args& args, Report& report) {
  const double start = common::now_ms();
  auto shapes = common::parse_input_shapes(args.input_shapes);
  if (!shapes.ok()) return common::report_error("shapeonnx", shapes.error());
  auto graph = common::load_graph(args.input);
  if (!graph.ok()) {
    report.problem = graph.error();
    return common::report_error("shapeonnx", graph.error());
  }
  report.loaded(*graph);
  shapeonnx::Options options{args.batch_size, *shapes};
  if (auto s =
          shapeonnx::parse_custom_flags(args.custom_ops, args.custom_types, options.custom_ops);
      !s.ok()) {
    return common::report_error("shapeonnx", s.error());
  }
  common::Status s = shapeonnx::infer_with_control_flow(*graph, options, args.unroll);
  if (s.ok()) {
    report.nodes_inferred = static_cast<int64_t>(graph->nodes.size());
    report.interface(*graph);
    const auto st = shapeonnx::stats(*graph);
    report.values = st.values;
    report.static_values = st.static_values;
    s = common::save_graph(std::move(*graph), args.output);
  }
  if (!s.ok()) {
    report.problem = s.error();
    return common::report_error("shapeonnx", s.error());
  }
  if (args.stats) {
    std::fprintf(stderr, "{\"values\": %lld, \"static\": %lld, \"ms\": %.3f}\n",
                 static_cast<long long>(report.values),
                 static_cast<long long>(report.static_values), common::now_ms() - start);
  }
  return 0;
}

int run(const Args& args) {
  if (args.output == "-" && ::isatty(STDOUT_FILENO)) {
    return common::report_error(
        "shapeonnx",
        {args.input, "", "", "refusing to write a binary model to a terminal; use -o"});
  }
  Report report;
  const int code = infer_and_save(args, report);
  if (!args.report.empty()) {
    common::Status written = common::write_output_atomic(args.report, report.markdown(args.input));
    if (!written.ok()) return common::report_error("shapeonnx", written.error());
  }
  return code;
}

}  // namespace

static int main_body(int argc, char** argv) {
  CLI::App app{
      "shapeonnx: give every tensor of an ONNX model a concrete shape.\n"
      "Reads .onnx, .onnx.gz or - (stdin); writes the model with value_info filled in."};
  Args args;
  app.add_option("IN", args.input, "input model (.onnx, .onnx.gz, or - for stdin)")->required();
  app.add_option("-o,--output", args.output, "output model path, or - for stdout (default)");
  common::add_shape_options(app, args.batch_size, args.input_shapes);
  app.add_flag("--stats", args.stats,
               "print one JSON line {\"values\", \"static\", \"ms\"} on stderr");
  app.add_flag("--unroll", args.unroll,
               "expand If/Loop/Scan into plain nodes first (trip counts and sequence lengths must "
               "be static; an If on a run-time condition becomes Where)");
  app.add_option("--report", args.report,
                 "FILE.md: write a Markdown report (opsets, op types, nodes, inputs/outputs with "
                 "shapes, the problem if any), also on failure");
  common::add_custom_op_options(app, args.custom_ops, args.custom_types);
  app.set_version_flag("--version", std::string("shapeonnx ") + SUITE_VERSION);
  if (auto code = common::parse_command_line(app, argc, argv)) return *code;
  return common::run_guarded("shapeonnx", args.input, [&] { return run(args); });
}

int main(int argc, char** argv) {
  common::keep_freed_memory();
  return common::run_guarded("shapeonnx", "", [&] { return main_body(argc, argv); });
}

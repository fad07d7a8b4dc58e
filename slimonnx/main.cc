// slimonnx: rewrite an ONNX model into a smaller one that computes the same function.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/cli.h"
#include "common/cli_app.h"
#include "common/onnx_io.h"
#include "shapeonnx/control_flow/control_flow.h"
#include "shapeonnx/infer.h"
#include "slimonnx/slim.h"

namespace {

struct Args {
  std::string input;
  std::string output = "-";
  std::vector<std::string> passes, disable;
  bool list = false;
  bool stats = false;
  bool unroll = false;
  std::vector<std::string> custom_ops, custom_types;  ///< --custom-op, --custom-op-shape
};

int list_passes() {
  for (const slimonnx::PassInfo& p : slimonnx::list_passes()) {
    std::printf("%-22s %s\n", p.name.c_str(), p.description.c_str());
  }
  return 0;
}

std::string stats_json(const slimonnx::Report& report, double ms) {
  std::string out = "{\"nodes_before\": " + std::to_string(report.nodes_before) +
                    ", \"nodes_after\": " + std::to_string(report.nodes_after);
  char buf[64];
  std::snprintf(buf, sizeof(buf), ", \"ms\": %.3f, \"passes\": {", ms);
  out += buf;
  bool first = true;
  for (const auto& [name, count] : report.rewrites) {
    out += (first ? "" : ", ") + common::json_string(name) + ": " + std::to_string(count);
    first = false;
  }
  return out + "}}";
}

int run(const Args& args) {
  const double start = common::now_ms();
  if (args.output == "-" && ::isatty(STDOUT_FILENO)) {
    return common::report_error(
        "slimonnx", {args.input, "", "", "refusing to write a binary model to a terminal; use -o"});
  }
  shapeonnx::Options options;
  if (auto s =
          shapeonnx::parse_custom_flags(args.custom_ops, args.custom_types, options.custom_ops);
      !s.ok()) {
    return common::report_error("slimonnx", s.error());
  }
  auto graph = common::load_graph(args.input);
  if (!graph.ok()) return common::report_error("slimonnx", graph.error());
  if (auto s = shapeonnx::infer_with_control_flow(*graph, options, args.unroll); !s.ok())
    return common::report_error("slimonnx", s.error());
  auto report = slimonnx::run(*graph, {args.passes, args.disable});
  if (!report.ok()) return common::report_error("slimonnx", report.error());
  slimonnx::forget_untrusted_shapes(*graph);
  if (auto s = common::save_graph(std::move(*graph), args.output); !s.ok()) {
    return common::report_error("slimonnx", s.error());
  }
  if (args.stats) {
    std::fprintf(stderr, "%s\n", stats_json(*report, common::now_ms() - start).c_str());
  }
  return 0;
}

}  // namespace

static int main_body(int argc, char** argv) {
  CLI::App app{
      "slimonnx: rewrite an ONNX model into a smaller one that computes the same function.\n"
      "Reads .onnx, .onnx.gz or - (stdin); runs shape inference first."};
  Args args;
  app.add_option("IN", args.input, "input model (.onnx, .onnx.gz, or - for stdin)");
  app.add_option("-o,--output", args.output, "output model path, or - for stdout (default)");
  app.add_option("--passes", args.passes, "run only these passes (comma-separated)")
      ->delimiter(',');
  app.add_option("--disable", args.disable, "skip these passes (comma-separated)")->delimiter(',');
  app.add_flag("--unroll", args.unroll,
               "expand If/Loop/Scan into plain nodes first (trip counts and sequence lengths must "
               "be static; an If on a run-time condition becomes Where)");
  app.add_flag("--list-passes", args.list, "print every pass with its description and exit");
  app.add_flag(
      "--stats", args.stats,
      "print one JSON line {\"nodes_before\", \"nodes_after\", \"ms\", \"passes\"} on stderr");
  common::add_custom_op_options(app, args.custom_ops, args.custom_types);
  app.set_version_flag("--version", std::string("slimonnx ") + SUITE_VERSION);
  if (auto code = common::parse_command_line(app, argc, argv)) return *code;
  if (args.list) return list_passes();
  if (args.input.empty()) {
    return common::report_error("slimonnx", {"", "", "", "missing input model (IN)"});
  }
  return common::run_guarded("slimonnx", args.input, [&] { return run(args); });
}

int main(int argc, char** argv) {
  common::keep_freed_memory();
  return common::run_guarded("slimonnx", "", [&] { return main_body(argc, argv); });
}

// shapeonnx: static shape inference for ONNX models.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "common/cli.h"
#include "common/cli_app.h"
#include "common/onnx_io.h"
#include "shapeonnx/control_flow.h"
#include "shapeonnx/infer.h"

namespace {

struct Args {
  std::string input;
  std::string output = "-";
  int64_t batch_size = 1;
  std::vector<std::string> input_shapes;
  bool stats = false;
  bool unroll = false;
};

int run(const Args& args) {
  const double start = common::now_ms();
  if (args.output == "-" && ::isatty(STDOUT_FILENO)) {
    return common::report_error(
        "shapeonnx",
        {args.input, "", "", "refusing to write a binary model to a terminal; use -o"});
  }
  auto shapes = common::parse_input_shapes(args.input_shapes);
  if (!shapes.ok()) return common::report_error("shapeonnx", shapes.error());
  auto graph = common::load_graph(args.input);
  if (!graph.ok()) return common::report_error("shapeonnx", graph.error());
  shapeonnx::Options options{args.batch_size, *shapes};
  if (auto s = shapeonnx::infer_with_control_flow(*graph, options, args.unroll); !s.ok()) {
    return common::report_error("shapeonnx", s.error());
  }
  if (auto s = common::save_graph(*graph, args.output); !s.ok()) {
    return common::report_error("shapeonnx", s.error());
  }
  if (args.stats) {
    const auto st = shapeonnx::stats(*graph);
    std::fprintf(stderr, "{\"values\": %lld, \"static\": %lld, \"ms\": %.3f}\n",
                 static_cast<long long>(st.values), static_cast<long long>(st.static_values),
                 common::now_ms() - start);
  }
  return 0;
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
  app.set_version_flag("--version", std::string("shapeonnx ") + SUITE_VERSION);
  if (auto code = common::parse_command_line(app, argc, argv)) return *code;
  return common::run_guarded("shapeonnx", args.input, [&] { return run(args); });
}

int main(int argc, char** argv) {
  common::keep_freed_memory();
  return common::run_guarded("shapeonnx", "", [&] { return main_body(argc, argv); });
}

// torchonnx: compile ONNX models into readable PyTorch modules (<stem>.py + <stem>.pth).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/cli.h"
#include "common/cli_app.h"
#include "common/onnx_io.h"
#include "common/ordered_parallel.h"
#include "torchonnx/convert.h"
#include "torchonnx/lower.h"
#include "torchonnx/stems.h"

namespace {

int default_jobs() { return static_cast<int>(std::max(1U, std::thread::hardware_concurrency())); }

struct Args {
  std::vector<std::string> inputs;
  std::string out_dir;
  std::string class_name = "Model";
  bool no_slim = false;
  bool rnn_modules = false;
  bool add_batch_dim = false;
  int64_t batch_size = 1;
  std::vector<std::string> input_shapes;
  std::vector<std::string> sequence_lengths;
  std::vector<std::string> absent;
  bool stats = false;
  bool list_ops = false;
  int jobs = default_jobs();
  std::string report;                                 ///< --report FILE.md
  std::vector<std::string> custom_ops, custom_types;  ///< --custom-op, --custom-op-shape
};

// What converting one model printed, kept until the models before it have been printed (models
// are converted several at once, and reported in the order given).
struct Outcome {
  bool ok = false;
  std::string out;       ///< stdout: "IN -> OUTDIR/<stem>.py"
  std::string err;       ///< stderr: the problems, or the --stats line
  std::string markdown;  ///< this model's part of --report
};

std::string error_line(const common::Error& error) { return "torchonnx: " + error.str() + "\n"; }

// A failed conversion: the one-line error when it is the only problem, else every node that
// cannot be compiled (grouped by op type, then one line each).
std::string problems_text(const std::string& input, const common::Error& first,
                          const torchonnx::ConvertReport& report) {
  if (report.problems.size() <= 1) {
    common::Error e = first;
    if (e.file.empty()) e.file = input;
    return error_line(e);
  }
  std::string text;
  for (const std::string& line : torchonnx::problem_lines(report.problems)) {
    text += "torchonnx: " + common::one_line(input) + ": " + line + "\n";
  }
  return text;
}

// Converts one model (nothing is written when it fails).
void convert_one(const Args& args, const torchonnx::ConvertOptions& options,
                 const std::string& input, const std::string& stem,
                 torchonnx::ConvertReport& report, Outcome& outcome) {
  const double start = common::now_ms();
  auto converted = torchonnx::convert_file(input, options, &report);
  common::Status written = converted.status();
  if (written.ok()) {  // the folder is created only once there is something to write
    std::error_code ec;
    std::filesystem::create_directories(args.out_dir, ec);
    written =
        ec ? common::Status(common::Error{args.out_dir, "", "", "cannot create: " + ec.message()})
           : torchonnx::write_converted(*converted, args.out_dir, stem);
  }
  if (!written.ok()) {
    if (converted.ok()) {  // the writing failed: that is the problem
      report.converted = false;
      report.problems.push_back(written.error());
    }
    outcome.err = problems_text(input, written.error(), report);
    return;
  }
  outcome.ok = true;
  outcome.out = input + " -> " + args.out_dir + "/" + stem + ".py\n";
  if (args.stats) {
    char line[160];
    std::snprintf(line, sizeof line, ", \"nodes\": %lld, \"nodes_after\": %lld, \"ms\": %.3f}\n",
                  static_cast<long long>(converted->nodes),
                  static_cast<long long>(converted->nodes_after), common::now_ms() - start);
    outcome.err = "{\"model\": " + common::json_string(input) + line;
  }
}

// convert_one on a worker thread: an exception (memory for a model's declared sizes, a library's
// throw) becomes that model's one-line error, as common::run_guarded makes it for a whole tool.
Outcome convert_guarded(const Args& args, const torchonnx::ConvertOptions& options,
                        const std::string& input, const std::string& stem) noexcept {
  Outcome outcome;
  try {
    torchonnx::ConvertReport report;
    report.source = input;
    try {
      convert_one(args, options, input, stem, report, outcome);
    } catch (const std::bad_alloc&) {
      outcome = Outcome{};
      outcome.err = error_line({input, "", "", "out of memory"});
    } catch (const std::exception& e) {
      outcome = Outcome{};
      outcome.err = error_line({input, "", "", std::string("internal error: ") + e.what()});
    }
    if (report.source.empty()) report.source = input;
    if (!args.report.empty()) outcome.markdown = torchonnx::markdown(report);
  } catch (...) {  // even the report could not be made
    outcome.ok = false;
  }
  return outcome;
}

// Parses every --sequence-length NAME=N (the name may itself contain '=').
common::Result<std::map<std::string, int64_t>> parse_sequence_lengths(
    const std::vector<std::string>& texts) {
  std::map<std::string, int64_t> out;
  for (const std::string& t : texts) {
    const size_t eq = t.rfind('=');
    const std::string count = eq == std::string::npos ? "" : t.substr(eq + 1);
    const bool digits = !count.empty() && count.size() <= 9 &&
                        count.find_first_not_of("0123456789") == std::string::npos;
    if (eq == 0 || !digits) {
      return common::Error{"", "", "", "--sequence-length expects NAME=N, got '" + t + "'"};
    }
    if (!out.emplace(t.substr(0, eq), std::stoll(count)).second) {
      return common::Error{"", "", "",
                           "--sequence-length given twice for '" + t.substr(0, eq) + "'"};
    }
  }
  return out;
}

// Parses every --custom-op DOMAIN::OP=MODULE:FUNCTION and --custom-op-shape into `options`.
common::Status parse_custom_ops(const Args& args, torchonnx::ConvertOptions& options) {
  for (const std::string& text : args.custom_ops) {
    ASSIGN_OR_RETURN(auto op, shapeonnx::parse_custom_op(text));
    if (op.second.empty()) {
      return common::Error{"", "", "",
                           "--custom-op expects DOMAIN::OP=MODULE:FUNCTION, got '" + text + "'"};
    }
    if (!options.custom_ops.emplace(op.first, op.second).second) {
      return common::Error{"", "", "", "--custom-op given twice for '" + op.first + "'"};
    }
  }
  shapeonnx::CustomOps types;
  RETURN_IF_ERROR(shapeonnx::parse_custom_flags({}, args.custom_types, types));
  options.custom_types = types.types;
  return {};
}

int run(const Args& args) {
  if (!torchonnx::is_valid_class_name(args.class_name)) {
    return common::report_error(
        "torchonnx",
        {"", "", "", "--class-name '" + args.class_name + "' is not a valid identifier"});
  }
  auto shapes = common::parse_input_shapes(args.input_shapes);
  if (!shapes.ok()) return common::report_error("torchonnx", shapes.error());
  auto lengths = parse_sequence_lengths(args.sequence_lengths);
  if (!lengths.ok()) return common::report_error("torchonnx", lengths.error());
  std::error_code ec;
  if (std::filesystem::exists(args.out_dir, ec) &&
      !std::filesystem::is_directory(args.out_dir, ec)) {
    return common::report_error("torchonnx", {args.out_dir, "", "", "not a directory"});
  }
  torchonnx::ConvertOptions options;
  options.class_name = args.class_name;
  options.slim = !args.no_slim;
  options.rnn_modules = args.rnn_modules;
  options.add_batch_dim = args.add_batch_dim;
  options.batch_size = args.batch_size;
  options.input_shapes = *shapes;
  options.sequence_lengths = *lengths;
  options.absent_inputs.insert(args.absent.begin(), args.absent.end());
  if (auto s = parse_custom_ops(args, options); !s.ok())
    return common::report_error("torchonnx", s.error());
  torchonnx::StemAllocator stems;
  std::vector<std::string> stem_of;
  for (const std::string& input : args.inputs)
    stem_of.push_back(stems.make(input, args.class_name));
  bool ok = true;
  std::string markdown;
  if (args.jobs > 1) common::one_heap_for_all_threads();
  common::ordered_parallel(
      args.inputs.size(), static_cast<size_t>(args.jobs),
      [&](size_t i) { return convert_guarded(args, options, args.inputs[i], stem_of[i]); },
      [&](size_t, const Outcome& outcome) {
        std::cout << outcome.out << std::flush;
        std::cerr << outcome.err << std::flush;
        ok = outcome.ok && ok;
        markdown += (markdown.empty() ? "" : "\n") + outcome.markdown;
      });
  if (!args.report.empty()) {
    common::Status written = common::write_output_atomic(args.report, markdown);
    if (!written.ok()) return common::report_error("torchonnx", written.error());
  }
  return ok ? 0 : 2;
}

}  // namespace

static int main_body(int argc, char** argv) {
  CLI::App app{
      "torchonnx: compile ONNX models into readable PyTorch code.\n"
      "For each IN writes OUTDIR/<stem>.py (class --class-name, default Model) and "
      "OUTDIR/<stem>.pth.\nUse: from <stem> import Model; m = Model(); "
      "m.load_state_dict(torch.load(\"<stem>.pth\", weights_only=True)); m.eval()\n"
      "Stems are the file names made importable; repeated stems get _2, _3, ... "
      "(IN -> file is printed)."};
  Args args;
  app.add_option("IN", args.inputs, "input models (.onnx, .onnx.gz, or - for stdin)");
  app.add_option("-o,--output", args.out_dir, "output folder (created if missing)");
  app.add_option("--class-name", args.class_name,
                 "name of the generated nn.Module class (default Model); also the stem for -");
  app.add_flag("--no-slim", args.no_slim, "skip slimonnx's simplifications");
  app.add_flag("--rnn-modules", args.rnn_modules,
               "RNN/GRU/LSTM as nn.RNN/nn.GRU/nn.LSTM layers where they compute the same (faster, "
               "but torch.vmap cannot batch them); default: a method looping over the time steps");
  common::add_shape_options(app, args.batch_size, args.input_shapes);
  app.add_flag("--add-batch-dim", args.add_batch_dim,
               "inputs declared without a batch dim get a leading dim N, where the model first "
               "adds a unit dim to them (Reshape to [1, ...], Unsqueeze at 0); that dim becomes "
               "the batch");
  app.add_option("--sequence-length", args.sequence_lengths,
                 "NAME=N: a sequence input holds N tensors (of its declared element shape, or "
                 "--input-shape NAME=...); forward takes it as a list");
  app.add_option("--absent", args.absent,
                 "NAME: an optional input that holds no value (forward takes None there)");
  app.add_option("--custom-op", args.custom_ops,
                 "DOMAIN::OP=MODULE:FUNCTION: nodes of that op become a call "
                 "MODULE.FUNCTION(inputs..., **attributes) after `import MODULE` (repeatable); "
                 "output types from the model's value_info or --custom-op-shape");
  app.add_option("--custom-op-shape", args.custom_types,
                 "NAME=DTYPE[D0,D1,...]: the type of a custom op's output NAME (a name as D0, e.g. "
                 "N: the batch dim)");
  app.add_flag(
      "--stats", args.stats,
      "print one JSON line {\"model\", \"nodes\", \"nodes_after\", \"ms\"} per model on stderr");
  app.add_option("--report", args.report,
                 "FILE.md: write a Markdown report of each conversion (opsets, op types, nodes "
                 "before/after slimming by pass, inputs/outputs, every problem), also on failure");
  app.add_option("-j,--jobs", args.jobs,
                 "models converted at once, on as many threads (default: the CPU count; 1 keeps "
                 "one model in memory at a time); output is printed in the order given")
      ->check(CLI::Range(1, 256));
  app.add_flag("--list-ops", args.list_ops, "print the ONNX op types torchonnx compiles and exit");
  app.set_version_flag("--version", std::string("torchonnx ") + SUITE_VERSION);
  if (auto code = common::parse_command_line(app, argc, argv)) return *code;
  if (args.list_ops) {
    for (const std::string& op : torchonnx::supported_ops()) std::cout << op << "\n";
    return 0;
  }
  if (args.inputs.empty())
    return common::report_error("torchonnx", {"", "", "", "missing input model (IN)"});
  if (args.out_dir.empty())
    return common::report_error("torchonnx", {"", "", "", "missing --output OUTDIR"});
  return run(args);
}

int main(int argc, char** argv) {
  common::keep_freed_memory();
  return common::run_guarded("torchonnx", "", [&] { return main_body(argc, argv); });
}

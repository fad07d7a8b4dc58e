// CLI11 pieces every tool's main.cc shares. Header-only and included only by main.cc files, so
// CLI11's compile cost stays at one translation unit per tool.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace common {

/// --batch-size and --input-shape (repeatable, one NAME=D0,D1,... each), as shapeonnx reads them.
inline void add_shape_options(CLI::App& app, int64_t& batch_size,
                              std::vector<std::string>& input_shapes) {
  app.add_option("--batch-size", batch_size,
                 "size of a symbolic, 0 or -1 leading input dimension (default 1)")
      ->check(CLI::PositiveNumber);
  app.add_option("--input-shape", input_shapes,
                 "NAME=D0,D1,... full shape for an input (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

/// --custom-op DOMAIN::OP[=...] and --custom-op-shape NAME=DTYPE[D0,...] (both repeatable), as
/// shapeonnx and slimonnx read them (torchonnx's --custom-op also names the Python function).
inline void add_custom_op_options(CLI::App& app, std::vector<std::string>& ops,
                                  std::vector<std::string>& types) {
  app.add_option("--custom-op", ops,
                 "DOMAIN::OP[=...]: an op computed outside the model (repeatable); its outputs "
                 "take their declared types and nothing is folded through it");
  app.add_option("--custom-op-shape", types,
                 "NAME=DTYPE[D0,D1,...]: the type of a custom op's output NAME (a name as D0: the "
                 "batch dim), where the model declares none");
}

/// Parses the command line. Returns the exit code when the tool should stop now (0 after --help or
/// --version, 2 on a usage error, with CLI11's message printed), nullopt to go on.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  return std::nullopt;
}

}  // namespace common

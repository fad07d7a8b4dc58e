// Helpers for torchonnx's tests: running the generated Python, reading the generated forward.
#pragma once

#include <string>

namespace torchonnx::testing {

/// Runs `command` through the shell; returns its exit status and fills `output` with stdout and
/// stderr together.
int run_command(const std::string& command, std::string* output);
/// The Python interpreter with torch (TORCHONNX_PYTHON, default /usr/bin/python3).
std::string python();
/// Folder of torchonnx's helper scripts (torchonnx/tools).
std::string tools_dir();
/// `text` quoted for a POSIX shell.
std::string shell_quote(const std::string& text);
/// The forward body generated for a model in ONNX text syntax (`<targets> = <expr>` per statement,
/// `return <expr>` per output, no comments), or "parse: ..." / "error: ..." with the message.
/// slimonnx runs only when `slim`.
std::string body_of(const std::string& text, bool slim = false);

}  // namespace torchonnx::testing

#include "torchonnx/test_util.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>

#include "common/testing.h"
#include "torchonnx/convert.h"

namespace torchonnx::testing {

int run_command(const std::string& command, std::string* output) {
  output->clear();
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) output->append(buf.data(), n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string python() { return TORCHONNX_PYTHON; }

std::string tools_dir() { return TORCHONNX_TOOLS; }

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string body_of(const std::string& text, bool slim) {
  auto g = common::testing::parse_text(text, "m.onnx");
  if (!g.ok()) return "parse: " + g.error().str();
  ConvertOptions options;
  options.slim = slim;
  auto c = convert(std::move(*g), options);
  if (!c.ok()) return "error: " + c.error().str();
  std::string out;
  for (const Statement& s : c->module.body) {
    std::string targets;
    for (const std::string& t : s.targets) targets += (targets.empty() ? "" : ", ") + t;
    out += targets + " = " + s.expr.str() + "\n";
  }
  for (const std::string& o : c->module.outputs) out += "return " + o + "\n";
  return out;
}

}  // namespace torchonnx::testing

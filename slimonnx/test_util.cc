#include "slimonnx/test_util.h"

#include <gtest/gtest.h>
#include <onnx/defs/printer.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "common/onnx_io.h"
#include "common/testing.h"
#include "shapeonnx/infer.h"

namespace slimonnx::testing {

common::Graph slim_text(const std::string& text, const Options& options, Report* report) {
  common::Result<common::Graph> g = common::testing::parse_text(text);
  EXPECT_TRUE(g.ok()) << g.error().str();
  if (!g.ok()) return {};
  common::Status s = shapeonnx::infer(*g);
  EXPECT_TRUE(s.ok()) << s.error().str();
  common::Result<Report> r = run(*g, options);
  EXPECT_TRUE(r.ok()) << r.error().str();
  if (r.ok() && report != nullptr) *report = *r;
  return std::move(g).value();
}

namespace {

std::string values_text(const common::Tensor& t) {
  constexpr int64_t kShown = 12;
  std::ostringstream os;
  os << "{";
  for (int64_t i = 0; i < t.numel() && i < kShown; ++i) {
    char buf[32];
    if (common::is_floating(t.dtype)) {
      std::snprintf(buf, sizeof(buf), "%.6g", t.double_at(i));
    } else {
      std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(t.int_at(i)));
    }
    os << (i ? ", " : "") << buf;
  }
  if (t.numel() > kShown) os << ", ...";
  os << "}";
  return os.str();
}

}  // namespace

std::string graph_text(const common::Graph& graph) {
  onnx::ModelProto model = common::to_proto(graph);
  model.mutable_graph()->clear_initializer();
  model.mutable_graph()->clear_value_info();
  std::ostringstream os;
  os << model.graph() << "\n";
  for (const auto& [name, t] : graph.initializers) {
    os << "# " << name << ": " << common::dtype_name(t.dtype) << "[";
    for (size_t i = 0; i < t.dims.size(); ++i) os << (i ? "," : "") << t.dims[i];
    os << "] = " << values_text(t) << "\n";
  }
  return os.str();
}

namespace {

std::string run_command(const std::string& cmd, int* status) {
  std::string out;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  *status = ::pclose(pipe);
  return out;
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

bool ort_available() {
  int status = 0;
  const std::string ort =
      std::string(SUITE_SOURCE_DIR) + "/build/ort/node_modules/onnxruntime-node";
  const char* env = std::getenv("ORT_NODE_MODULES");
  const std::string dir = env != nullptr ? std::string(env) + "/onnxruntime-node" : ort;
  run_command("node --version >/dev/null 2>&1", &status);
  return status == 0 && std::filesystem::exists(dir);
}

std::optional<double> ort_max_error(const std::string& a, const std::string& b,
                                    const std::string& vnnlib, std::string* why) {
  // vnncomp.compare: the harness's comparison (VNN-LIB box, points, error rule). Its
  // onnxruntime-node server writes a log file per process into TMPDIR: keep them in a test folder.
  static const std::string scratch = common::testing::temp_dir("ort");
  const std::string src = SUITE_SOURCE_DIR;
  std::string cmd = "cd " + quote(src) + " && TMPDIR=" + quote(scratch) +
                    " PYTHONPATH=" + quote(src) + " /usr/bin/python3 -m vnncomp.compare " +
                    quote(a) + " " + quote(b) + " --tolerance inf";
  if (!vnnlib.empty()) cmd += " --vnnlib " + quote(vnnlib);
  int status = 0;
  const std::string out = run_command(cmd + " 2>&1", &status);
  const size_t at = out.find("\"max_error\":");
  if (at == std::string::npos) {
    *why = out;
    return std::nullopt;
  }
  const std::string value = out.substr(at + 12);
  const size_t first = value.find_first_not_of(' ');
  if (first == std::string::npos || value.compare(first, 4, "null") == 0) {
    return std::numeric_limits<double>::infinity();
  }
  return std::stod(value.substr(first));
}

}  // namespace slimonnx::testing

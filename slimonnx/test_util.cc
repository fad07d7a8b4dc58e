#include "slimonnx/test_util.h"

#include <gtest/gtest.h>
#include <onnx/defs/printer.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
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

std::vector<std::optional<double>> ort_max_errors(const std::vector<ComparePair>& pairs,
                                                  std::vector<std::string>* why) {
  static const std::string scratch = common::testing::temp_dir("ort_pairs");
  const std::string list = scratch + "/pairs.txt";
  {
    std::ofstream out(list);
    for (const ComparePair& p : pairs) {
      out << p.a << '\t' << p.b;
      if (!p.vnnlib.empty()) out << '\t' << p.vnnlib;
      out << '\n';
    }
  }
  const std::string src = SUITE_SOURCE_DIR;
  const std::string cmd = "cd " + quote(src) + " && TMPDIR=" + quote(scratch) +
                          " PYTHONPATH=" + quote(src) +
                          " /usr/bin/python3 -m vnncomp.compare --tolerance inf --pairs " +
                          quote(list) + " 2>" + quote(scratch + "/pairs.err");
  int status = 0;
  std::istringstream lines(run_command(cmd, &status));
  std::vector<std::optional<double>> errors(pairs.size());
  why->assign(pairs.size(), "");
  std::string line;
  size_t i = 0;
  while (i < pairs.size() && std::getline(lines, line)) {
    if (!line.starts_with("{")) continue;  // not a result line
    const size_t at = line.find("\"max_error\":");
    if (at == std::string::npos) {
      (*why)[i++] = line;
      continue;
    }
    const std::string value = line.substr(at + 12);
    const size_t first = value.find_first_not_of(' ');
    errors[i++] = first == std::string::npos || value.compare(first, 4, "null") == 0
                      ? std::numeric_limits<double>::infinity()
                      : std::stod(value.substr(first));
  }
  for (; i < pairs.size(); ++i) {
    std::ifstream err(scratch + "/pairs.err");
    (*why)[i] = "no result from vnncomp.compare --pairs: " +
                std::string(std::istreambuf_iterator<char>(err), {});
  }
  return errors;
}

}  // namespace slimonnx::testing

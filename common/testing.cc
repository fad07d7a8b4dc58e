#include "common/testing.h"

#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

#include "common/onnx_io.h"

namespace fs = std::filesystem;

namespace common::testing {

namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

bool is_model(const fs::path& p) {
  const std::string s = p.filename().string();
  return s.ends_with(".onnx") || s.ends_with(".onnx.gz");
}

}  // namespace

std::string vnncomp_dir() {
#ifdef VNNCOMP_BENCHMARKS
  const std::string dir = env_or("VNNCOMP_BENCHMARKS", VNNCOMP_BENCHMARKS);
#else
  const std::string dir = env_or("VNNCOMP_BENCHMARKS", "../shared/vnncomp2024/benchmarks");
#endif
  std::error_code ec;
  return fs::is_directory(dir, ec) ? fs::weakly_canonical(dir).string() : "";
}

std::vector<std::string> vnncomp_models() {
  std::vector<std::string> out;
  const std::string dir = vnncomp_dir();
  if (dir.empty()) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && is_model(e.path())) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  const char* sample = std::getenv("SUITE_TEST_SAMPLE");
  const long stride = sample != nullptr ? std::strtol(sample, nullptr, 10) : 1;
  if (stride > 1) {
    std::vector<std::string> every;
    for (size_t i = 0; i < out.size(); i += static_cast<size_t>(stride)) every.push_back(out[i]);
    out = std::move(every);
  }
  return out;
}

std::string node_tests_dir() {
#ifdef ONNX_NODE_TESTS
  const std::string dir = env_or("ONNX_NODE_TESTS", ONNX_NODE_TESTS);
#else
  const std::string dir = env_or("ONNX_NODE_TESTS", "/usr/share/libonnx-testdata/data/node");
#endif
  std::error_code ec;
  return fs::is_directory(dir, ec) ? dir : "";
}

std::vector<std::string> node_tests() {
  std::vector<std::string> out;
  const std::string dir = node_tests_dir();
  if (dir.empty()) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<Graph> parse_text(const std::string& text, const std::string& source) {
  onnx::ModelProto model;
  auto status = onnx::OnnxParser::Parse(model, text.c_str());
  if (!status.IsOK()) return Error{source, "", "", "ONNX text: " + status.ErrorMessage()};
  return from_proto(std::move(model), source);
}

std::string text_to_bytes(const std::string& text) {
  onnx::ModelProto model;
  auto status = onnx::OnnxParser::Parse(model, text.c_str());
  return status.IsOK() ? model.SerializeAsString() : std::string();
}

namespace {

// Folders made by temp_dir, removed when the test process exits.
class TempDirs {
 public:
  ~TempDirs() {
    for (const fs::path& p : paths_) {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  }
  void add(fs::path p) {
    std::lock_guard<std::mutex> lock(mu_);
    paths_.push_back(std::move(p));
  }

 private:
  std::mutex mu_;
  std::vector<fs::path> paths_;
};

}  // namespace

std::string temp_dir(const std::string& tag) {
  static std::atomic<int> counter{0};
  static TempDirs made;
  fs::path p = fs::temp_directory_path() / ("onnxverify_" + tag + "_" + std::to_string(::getpid()) +
                                            "_" + std::to_string(counter++));
  fs::remove_all(p);
  fs::create_directories(p);
  made.add(p);
  return p.string();
}

}  // namespace common::testing

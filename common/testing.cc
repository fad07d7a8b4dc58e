#include "common/testing.h"

#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
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

/// A model's size once decompressed: a .gz file's last four bytes (its length modulo 2^32), else
/// the file's size; 0 where it cannot be read.
uint64_t model_bytes(const fs::path& p) {
  std::error_code ec;
  if (!p.string().ends_with(".gz")) {
    const auto size = fs::file_size(p, ec);
    return ec ? 0 : size;
  }
  std::ifstream in(p, std::ios::binary | std::ios::ate);
  if (!in || in.tellg() < 4) return 0;
  in.seekg(-4, std::ios::end);
  unsigned char b[4] = {};
  in.read(reinterpret_cast<char*>(b), 4);
  return in ? (uint64_t{b[3]} << 24) | (uint64_t{b[2]} << 16) | (uint64_t{b[1]} << 8) | b[0] : 0;
}

/// `models` (sorted paths under `dir`) with every model over 64 MiB decompressed left out except
/// the largest of its benchmark folder (the first by name among equals).
std::vector<std::string> largest_of_large(const std::vector<std::string>& models,
                                          const std::string& dir) {
  constexpr uint64_t kLarge = uint64_t{64} << 20;
  std::map<std::string, std::pair<uint64_t, std::string>> keep;  // benchmark -> (size, path)
  for (const auto& m : models) {
    const uint64_t size = model_bytes(m);
    if (size <= kLarge) continue;
    const std::string bench = fs::path(m).lexically_relative(dir).begin()->string();
    auto it = keep.find(bench);
    if (it == keep.end() || size > it->second.first) keep[bench] = {size, m};
  }
  std::vector<std::string> out;
  for (const auto& m : models) {
    bool kept = model_bytes(m) <= kLarge;
    for (const auto& [bench, entry] : keep) kept = kept || entry.second == m;
    if (kept) out.push_back(m);
  }
  return out;
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
  if (env_or("SUITE_LARGE_MODELS", "all") == std::string("largest")) {
    out = largest_of_large(out, dir);
  }
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

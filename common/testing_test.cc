// The test helpers' model list: $SUITE_LARGE_MODELS=largest leaves out, of the models over 64 MiB
// decompressed, all but the largest of each benchmark folder.
#include "common/testing.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace common::testing {
namespace {

namespace fs = std::filesystem;

/// Sets an environment variable for one scope; the old value comes back after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.has_value()) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// The inflated size of a gzip file, by inflating it.
uint64_t inflated_size(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return 0;
  std::string buf(1 << 20, '\0');
  uint64_t total = 0;
  int got = 0;
  while ((got = gzread(f, buf.data(), static_cast<unsigned>(buf.size()))) > 0) total += got;
  gzclose(f);
  return total;
}

TEST(TestingModels, LargestOfLargeKeepsOnePerBenchmark) {
  const std::string dir = vnncomp_dir();
  if (dir.empty()) GTEST_SKIP() << "VNN-COMP benchmarks not found";
  std::vector<std::string> all, sample;
  ScopedEnv every("SUITE_TEST_SAMPLE", "1");  // no stride (the sanitized run sets 8)
  {
    ScopedEnv env("SUITE_LARGE_MODELS", "all");
    all = vnncomp_models();
  }
  {
    ScopedEnv env("SUITE_LARGE_MODELS", "largest");
    sample = vnncomp_models();
  }
  // The models over 64 MiB, by inflating them (independent of the gzip trailer the list reads).
  constexpr uint64_t kLarge = uint64_t{64} << 20;
  std::map<std::string, std::pair<uint64_t, std::string>> largest;  // benchmark -> (size, path)
  std::set<std::string> over;
  for (const std::string& m : all) {
    const uint64_t size = m.ends_with(".gz") ? inflated_size(m) : fs::file_size(m);
    if (size <= kLarge) continue;
    over.insert(m);
    const std::string bench = fs::path(m).lexically_relative(dir).begin()->string();
    if (!largest.contains(bench) || size > largest[bench].first) largest[bench] = {size, m};
  }
  std::vector<std::string> expect;
  for (const std::string& m : all) {
    bool keep = !over.contains(m);
    for (const auto& [bench, entry] : largest) keep = keep || entry.second == m;
    if (keep) expect.push_back(m);
  }
  EXPECT_EQ(sample, expect);
  if (all.size() == 146) {  // ../shared's VNN-COMP 2024 set: 12 over 64 MiB, all tllverifybench
    EXPECT_EQ(over.size(), 12u);
    EXPECT_EQ(sample.size(), 135u);
  }
}

}  // namespace
}  // namespace common::testing

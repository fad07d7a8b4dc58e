// Golden tests: testdata/NAME.onnxtext (ONNX text syntax) slimmed must print as
// testdata/NAME.golden. A first line `# passes: a,b` restricts the passes (default: all).
// Regenerate every golden with `SLIMONNX_UPDATE_GOLDENS=1 ctest -R golden` and review `git diff`.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "slimonnx/test_util.h"

namespace slimonnx {
namespace {

namespace fs = std::filesystem;

fs::path testdata() { return fs::path(SUITE_SOURCE_DIR) / "slimonnx" / "testdata"; }

std::vector<std::string> golden_cases() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(testdata())) {
    if (e.path().extension() == ".onnxtext") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `# passes: a,b,c` on the first line.
Options options_of(const std::string& text) {
  Options options;
  const std::string tag = "# passes:";
  if (text.rfind(tag, 0) != 0) return options;
  std::stringstream line(text.substr(tag.size(), text.find('\n') - tag.size()));
  std::string name;
  while (std::getline(line, name, ',')) {
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(" \r") + 1);
    if (!name.empty()) options.passes.push_back(name);
  }
  return options;
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, MatchesExpectedText) {
  const std::string text = read_file(testdata() / (GetParam() + ".onnxtext"));
  Report report;
  const common::Graph g = testing::slim_text(text, options_of(text), &report);
  const std::string got = testing::graph_text(g);
  const fs::path golden = testdata() / (GetParam() + ".golden");
  const char* update = std::getenv("SLIMONNX_UPDATE_GOLDENS");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(golden, std::ios::binary) << got;
    GTEST_SKIP() << "golden rewritten: " << golden;
  }
  ASSERT_TRUE(fs::exists(golden)) << "missing " << golden << "; run SLIMONNX_UPDATE_GOLDENS=1";
  EXPECT_EQ(read_file(golden), got);
  EXPECT_LE(report.nodes_after, report.nodes_before);
  // Idempotent: slimming the result again changes nothing.
  common::Graph again = g;
  common::Result<Report> second = run(again, options_of(text));
  ASSERT_TRUE(second.ok()) << second.error().str();
  EXPECT_EQ(testing::graph_text(again), got);
}

INSTANTIATE_TEST_SUITE_P(Slimonnx, Golden, ::testing::ValuesIn(golden_cases()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace slimonnx

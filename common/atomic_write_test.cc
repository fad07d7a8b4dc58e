#include "common/atomic_write.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/testing.h"

namespace common {
namespace {

namespace fs = std::filesystem;

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(AtomicWriteTest, ReplacesAnOldFileAndLeavesNoTemporary) {
  const std::string dir = testing::temp_dir("atomic_replace");
  std::ofstream(dir + "/out.onnx") << "old contents, longer than the new";
  ASSERT_TRUE(write_output_atomic(dir + "/out.onnx", "new").ok());
  EXPECT_EQ(read(dir + "/out.onnx"), "new");
  EXPECT_EQ(names(dir), std::vector<std::string>{"out.onnx"});
}

// The temporary is created 0666 less the umask, as a plain file would be (not mkstemp's 0600).
TEST(AtomicWriteTest, OutputGetsTheUsualPermissions) {
  const std::string dir = testing::temp_dir("atomic_mode");
  const mode_t old = ::umask(022);
  const Status s = write_output_atomic(dir + "/r.txt", "unsat\n");
  ::umask(old);
  ASSERT_TRUE(s.ok());
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/r.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(AtomicWriteTest, WritesSeveralFilesTogether) {
  const std::string dir = testing::temp_dir("atomic_pair");
  std::ofstream(dir + "/m.py") << "old py";
  ASSERT_TRUE(write_outputs_atomic({{dir + "/m.pth", "weights"}, {dir + "/m.py", "code"}}).ok());
  EXPECT_EQ(read(dir + "/m.pth"), "weights");
  EXPECT_EQ(read(dir + "/m.py"), "code");
  EXPECT_EQ(names(dir), (std::vector<std::string>{"m.pth", "m.py"}));
}

// The second file cannot be written (its folder is missing): the first keeps its old contents
// and no temporary is left.
TEST(AtomicWriteTest, AFailedFileLeavesTheOthersUntouched) {
  const std::string dir = testing::temp_dir("atomic_fail");
  std::ofstream(dir + "/m.pth") << "old";
  const Status s = write_outputs_atomic({{dir + "/m.pth", "new"}, {dir + "/no/m.py", "code"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().file, dir + "/no/m.py");
  EXPECT_EQ(read(dir + "/m.pth"), "old");
  EXPECT_EQ(names(dir), std::vector<std::string>{"m.pth"});
}

TEST(AtomicWriteTest, DevicesAreWrittenInPlace) {
  EXPECT_TRUE(write_output_atomic("/dev/null", "discarded").ok());
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

}  // namespace
}  // namespace common

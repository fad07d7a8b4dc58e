// The slimonnx command line: bad input gives one line on stderr, exit 2 and no output file;
// --stats prints one JSON line; - reads stdin; a slimmed model slims to the same bytes again.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/onnx_io.h"
#include "common/testing.h"

namespace {

namespace fs = std::filesystem;

struct Outcome {
  int code = -1;
  std::string err;
};

// Runs the slimonnx binary with `args` (a shell fragment); stderr is captured.
Outcome slimonnx(const std::string& args) {
  const std::string dir = common::testing::temp_dir("slim_cli_err");
  const std::string err = dir + "/stderr";
  const std::string cmd =
      std::string(SUITE_BINARY_DIR) + "/slimonnx/slimonnx " + args + " 2>" + err;
  const int status = std::system(cmd.c_str());
  Outcome r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  fs::remove_all(dir);
  return r;
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char* kModel = R"(<ir_version: 7, opset_import: ["" : 13]>
g (float[1,2] X) => (float[1,2] Y)
<float[2,2] W = {1,2,3,4}, float[2] B = {1,1}>
{
  I = Identity(X)
  M = MatMul(I, W)
  Y = Add(M, B)
}
)";

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = common::testing::temp_dir("slim_cli");
    model_ = dir_ + "/m.onnx";
    ASSERT_TRUE(common::write_output_atomic(model_, common::testing::text_to_bytes(kModel)).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_, model_;
};

void expect_one_line_error(const Outcome& r) {
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("slimonnx: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(Cli, StatsIsOneJsonLineAndSlimmingIsIdempotent) {
  const std::string out = dir_ + "/out.onnx", again = dir_ + "/again.onnx";
  Outcome r = slimonnx(model_ + " -o " + out + " --stats");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::regex json(
      R"(\{"nodes_before": 3, "nodes_after": 1, "ms": [0-9.]+, "passes": \{("[a-z-]+": [0-9]+(, )?)+\}\}\n)");
  EXPECT_TRUE(std::regex_match(r.err, json)) << r.err;
  r = slimonnx(out + " -o " + again + " --stats");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("\"nodes_before\": 1, \"nodes_after\": 1"), std::string::npos) << r.err;
  EXPECT_EQ(read(out), read(again));
}

TEST_F(Cli, ReadsStdinAndWritesStdout) {
  const std::string out = dir_ + "/out.onnx";
  Outcome r = slimonnx("- -o - < " + model_ + " > " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  auto g = common::load_graph(out);
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_EQ(g->nodes.size(), 1u);
  EXPECT_EQ(g->nodes[0].op_type, "Gemm");
}

TEST_F(Cli, PassSelection) {
  const std::string out = dir_ + "/out.onnx";
  Outcome r = slimonnx(model_ + " -o " + out + " --passes identity --stats");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("\"nodes_after\": 2, "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\"passes\": {\"identity\": 1}"), std::string::npos) << r.err;
  r = slimonnx(model_ + " -o " + out +
               " --disable matmul-add-to-gemm,affine-after-linear,identity,linear-region --stats");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("\"nodes_after\": 3, "), std::string::npos) << r.err;
}

TEST_F(Cli, ListPasses) {
  const std::string out = dir_ + "/list.txt";
  Outcome r = slimonnx("--list-passes > " + out);
  ASSERT_EQ(r.code, 0);
  const std::string text = read(out);
  for (const char* name : {"constant-folding", "dead-code", "identity", "batchnorm-fold",
                           "matmul-add-to-gemm", "linear-chain", "pad-into-conv", "conv-to-gemm"}) {
    EXPECT_NE(text.find(name), std::string::npos) << name;
  }
}

TEST_F(Cli, BadInputIsOneLineExitTwoAndNoOutput) {
  const std::string out = dir_ + "/out.onnx";
  const std::string empty = dir_ + "/empty.onnx", junk = dir_ + "/junk.onnx";
  std::ofstream(empty).close();
  std::ofstream(junk) << "this is not a protobuf\n";
  for (const std::string& args :
       {empty + " -o " + out, junk + " -o " + out, dir_ + "/missing.onnx -o " + out,
        model_ + " -o " + out + " --passes no-such-pass",
        model_ + " -o " + out + " --disable no-such-pass"}) {
    SCOPED_TRACE(args);
    expect_one_line_error(slimonnx(args));
    EXPECT_FALSE(fs::exists(out));
  }
}

}  // namespace

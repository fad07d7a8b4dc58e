// Every VNN-COMP model converts in one process, and the generated files compile and are clean
// for pyflakes (no unused imports or variables). Numerical agreement with onnxruntime, vmap,
// tracing and export are checked by the harness: scripts/vnncomp.sh --benchmarks DIR.
#include <gtest/gtest.h>

#include "common/onnx_io.h"
#include "common/testing.h"
#include "torchonnx/convert.h"
#include "torchonnx/stems.h"
#include "torchonnx/test_util.h"
#include "torchonnx/weights.h"

namespace torchonnx {
namespace {

TEST(VnncompModels, AllConvertAndGeneratedCodeIsClean) {
  const std::vector<std::string> models = common::testing::vnncomp_models();
  if (models.empty()) GTEST_SKIP() << "VNN-COMP benchmarks not found";
  const std::string dir = common::testing::temp_dir("torchonnx_models");
  StemAllocator stems;
  std::string files;
  for (const std::string& path : models) {
    auto converted = convert_file(path, {});
    if (!converted.ok()) {
      ADD_FAILURE() << converted.error().str();
      continue;
    }
    EXPECT_TRUE(torch_save_bytes(state_dict(converted->module)).ok()) << path;
    const std::string py = dir + "/" + stems.make(path, "Model") + ".py";
    ASSERT_TRUE(common::write_output_atomic(py, converted->python).ok());
    files += " " + py;
  }
  std::string out;
  const std::string py = testing::python();
  EXPECT_EQ(testing::run_command(py + " -m py_compile" + files, &out), 0) << out;
  if (testing::run_command(py + " -c 'import pyflakes'", &out) != 0) {
    GTEST_SKIP() << "pyflakes not installed (Debian python3-pyflakes)";
  }
  EXPECT_EQ(testing::run_command(py + " -m pyflakes" + files, &out), 0) << out;
}

}  // namespace
}  // namespace torchonnx

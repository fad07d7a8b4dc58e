// LibTorch's threads against the BLAS in the process: OpenBLAS's sequential build is not safe to
// call from two threads at once, so creating an engine sets one thread with it; bounds with the
// threads it leaves equal the Eigen engine's.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "propdag/test_util.h"
#include "propdag/torch/torch_engine_impl.h"
#include "propdag/torch/torch_test_util.h"

namespace propdag::torch_engine {
namespace {

// The path of the OpenBLAS library mapped into this process, from /proc/self/maps.
std::string mapped_openblas() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find("libopenblas") != std::string::npos) return line.substr(line.rfind(' ') + 1);
  return "";
}

TEST(TorchThreads, OneThreadOnASequentialOpenBlas) {
  const std::string blas = mapped_openblas();
  // Debian installs each OpenBLAS build in its own folder.
  if (blas.find("openblas-serial") != std::string::npos) {
    EXPECT_TRUE(internal::sequential_openblas()) << blas;
  } else if (blas.find("openblas-pthread") != std::string::npos ||
             blas.find("openblas-openmp") != std::string::npos || blas.empty()) {
    EXPECT_FALSE(internal::sequential_openblas()) << blas;
  }
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  Model model = test::build(test::kNet1);
  std::unique_ptr<Engine> engine = torch_test::engine_for(model);
  EXPECT_EQ(at::get_num_threads(), internal::sequential_openblas() ? 1 : 2) << blas;
  // Bounds of 8 boxes in one call, in chunks side by side where threads are left, equal the
  // Eigen engine's box by box.
  Options crown;
  Boxes boxes{Mat(8, 2), Mat(8, 2)};
  for (int i = 0; i < 8; ++i) {
    boxes.lo.row(i) << -1.0 + 0.1 * i, -1.0;
    boxes.hi.row(i) << 1.0, 1.0 - 0.05 * i;
  }
  auto got = engine->output_bounds(boxes, crown);
  at::set_num_threads(threads);
  ASSERT_TRUE(got.ok()) << got.error().str();
  for (int i = 0; i < 8; ++i) {
    auto ref =
        output_bounds(model, {boxes.lo.row(i).transpose(), boxes.hi.row(i).transpose()}, crown);
    ASSERT_TRUE(ref.ok());
    EXPECT_NEAR((*got)[0].lo(i, 0), (*ref)[0].lo(0), 1e-12) << "box " << i;
    EXPECT_NEAR((*got)[0].hi(i, 0), (*ref)[0].hi(0), 1e-12) << "box " << i;
  }
}

}  // namespace
}  // namespace propdag::torch_engine

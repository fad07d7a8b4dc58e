// LibTorch's threads against the BLAS in the process: OpenBLAS's sequential build is not safe to
// call from two threads at once, so creating an engine sets one thread with it; bounds with the
// threads it leaves equal the Eigen engine's, whether chunks of boxes or one box's chunks of rows
// run side by side.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <filesystem>
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

// Each box's output bounds in `got` equal the Eigen engine's for that box alone.
void expect_eigen_bounds(const Model& model, const Boxes& boxes, const Options& o,
                         const std::vector<Boxes>& got) {
  for (Eigen::Index i = 0; i < boxes.lo.rows(); ++i) {
    auto ref = output_bounds(model, {boxes.lo.row(i).transpose(), boxes.hi.row(i).transpose()}, o);
    ASSERT_TRUE(ref.ok());
    for (Eigen::Index j = 0; j < ref->back().lo.size(); ++j) {
      EXPECT_NEAR(got.back().lo(i, j), ref->back().lo(j), 1e-12) << "box " << i;
      EXPECT_NEAR(got.back().hi(i, j), ref->back().hi(j), 1e-12) << "box " << i;
    }
  }
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
  expect_eigen_bounds(model, boxes, crown, *got);
}

// All boxes in one chunk, as on CUDA (box_chunk's largest index; $PROPDAG_TORCH_CHUNK_ENTRIES=inf
// asks for it on the CPU), on one thread: 5 boxes in one call equal the Eigen engine's box by
// box. (Counting the chunks as (5 + chunk - 1) / chunk overflowed: every multi-box call on CUDA
// failed or crashed.)
TEST(TorchThreads, OneChunkOfAllBoxesAsOnCuda) {
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  setenv("PROPDAG_TORCH_CHUNK_ENTRIES", "inf", 1);
  Model model = test::build(test::kNet1);
  std::unique_ptr<Engine> engine = torch_test::engine_for(model);
  unsetenv("PROPDAG_TORCH_CHUNK_ENTRIES");
  Boxes boxes{Mat(5, 2), Mat(5, 2)};
  for (int i = 0; i < 5; ++i) {
    boxes.lo.row(i) << -1.0 + 0.3 * i, -0.5;
    boxes.hi.row(i) << 1.0, 0.5 + 0.2 * i;
  }
  Options crown;
  auto got = engine->output_bounds(boxes, crown);
  at::set_num_threads(threads);
  ASSERT_TRUE(got.ok()) << got.error().str();
  expect_eigen_bounds(model, boxes, crown, *got);
}

// One box whose passes take their rows in chunks of one (Options::chunk_entries), on the
// threads Device::threads asks for: every chunk but the first on its own thread, with its own
// copy of the lines' cache. The bounds equal the Eigen engine's, on a hand-worked net and on a
// shared conv net's property box (skipped without ../shared).
void expect_row_chunks_equal(const Model& model, const Boxes& box, double tol) {
  const int threads = at::get_num_threads();
  auto e = create(model, {"cpu", false, 2});
  ASSERT_TRUE(e.ok()) << e.error().str();
  EXPECT_EQ(at::get_num_threads(), internal::sequential_openblas() ? 1 : 2);
  for (Method m : {Method::kCrown, Method::kAlpha}) {
    Options o;
    o.method = m;
    o.refine_budget = torch_test::kBudget;
    auto ref = (*e)->output_bounds(box, o);  // chunks as large as the default allows
    o.chunk_entries = 1;
    auto got = (*e)->output_bounds(box, o);
    ASSERT_TRUE(ref.ok()) << ref.error().str();
    ASSERT_TRUE(got.ok()) << got.error().str();
    for (size_t out = 0; out < ref->size(); ++out) {
      torch_test::expect_close((*ref)[out].lo.row(0).transpose(), (*got)[out].lo.row(0).transpose(),
                               tol, "lo");
      torch_test::expect_close((*ref)[out].hi.row(0).transpose(), (*got)[out].hi.row(0).transpose(),
                               tol, "hi");
    }
    if (m == Method::kCrown) {
      auto eigen = output_bounds(model, {box.lo.row(0).transpose(), box.hi.row(0).transpose()}, o);
      ASSERT_TRUE(eigen.ok()) << eigen.error().str();
      torch_test::expect_close(eigen->back().lo, got->back().lo.row(0).transpose(), tol, "lo");
      torch_test::expect_close(eigen->back().hi, got->back().hi.row(0).transpose(), tol, "hi");
    }
  }
  at::set_num_threads(threads);
}

TEST(TorchThreads, RowChunksOfOneBoxSideBySide) {
  Model model = test::build(test::kThreeReluNet);
  Boxes box{Mat(1, 2), Mat(1, 2)};
  box.lo << -1.0, -2.0;
  box.hi << 2.0, 1.5;
  expect_row_chunks_equal(model, box, 1e-12);
}

TEST(TorchThreads, RowChunksOfOneBoxSideBySideOnAConvNet) {
  const std::filesystem::path bench =
      std::filesystem::path(VNNCOMP_BENCHMARKS) / "collins_rul_cnn_2023";
  auto loaded = torch_test::load_shared(
      bench / "onnx/NN_rul_small_window_20.onnx",
      bench / "vnnlib/robustness_2perturbations_delta5_epsilon10_w20.vnnlib");
  if (!loaded) GTEST_SKIP() << "shared benchmarks absent";
  expect_row_chunks_equal(loaded->first, torch_test::one(loaded->second.hull()), 1e-9);
}

}  // namespace
}  // namespace propdag::torch_engine

// matmul with B read in blocks must give, bit for bit, the product of the whole matrices.
#include "slimonnx/affine.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace slimonnx {
namespace {

// Float32 values (as weights are) of mixed sign and magnitude.
std::vector<double> random_matrix(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<double> out(rows * cols);
  for (double& v : out) v = dist(gen) * (gen() % 4 == 0 ? 1e-3f : 1.0f);
  return out;
}

void expect_same_bits(int64_t k, int64_t m, int64_t n) {
  const std::vector<double> a = random_matrix(k, m, 1), b = random_matrix(m, n, 2);
  int64_t reads = 0;
  const auto entry = [&](int64_t r, int64_t c) {
    ++reads;
    return b[r * n + c];
  };
  const std::vector<double> whole = matmul(a, b, k, m, n);
  const std::vector<double> blocked = matmul(a, entry, k, m, n);
  ASSERT_EQ(blocked.size(), whole.size());
  EXPECT_EQ(std::memcmp(blocked.data(), whole.data(), whole.size() * sizeof(double)), 0)
      << k << " x " << m << " x " << n;
  EXPECT_EQ(reads, m * n);  // every element of B read once
}

TEST(BlockedMatmul, ColumnBlocksMatchTheWholeProduct) {
  expect_same_bits(2, 4096, 1100);  // the first two layers of tllverifybench, merged
  expect_same_bits(7, 1000, 4500);
  expect_same_bits(3, 3000, 1601);  // a width that is no multiple of 4
}

TEST(BlockedMatmul, RowBlocksMatchTheWholeVectorProduct) {
  expect_same_bits(1, 4096, 1100);  // a bias through the next layer
  expect_same_bits(1, 2309, 2000);  // a depth that is no multiple of 16
  expect_same_bits(1, 5000, 900);
}

TEST(BlockedMatmul, SmallMatricesAreReadWhole) { expect_same_bits(2, 64, 64); }

}  // namespace
}  // namespace slimonnx

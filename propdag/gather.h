// Linear maps whose rows each hold at most one entry, W(i, col(i)) = scale(i), kept as index
// arithmetic instead of a sparse matrix: the terms of data movement (Reshape, Transpose, Slice,
// Concat, Expand, Pad, Gather) and of elementwise affine ops (Add, Sub, Mul and Div by a
// constant, Neg, BatchNormalization), numpy broadcasting included. Identity and broadcasting
// maps hold no per-element data; other maps 4 bytes per row (and 8 for a scale per row).
#pragma once

#include <Eigen/Dense>
#include <Eigen/SparseCore>
#include <array>
#include <cstdint>
#include <vector>

namespace propdag {

/// Row i -> index j for i in [0, size()): j = sum_d coord_d(i) * stride_d over row-major dims
/// (identity, broadcasting), or a listed index (j < 0: none).
class IndexMap {
 public:
  IndexMap() = default;
  static IndexMap identity(int64_t n);
  /// Element i of a tensor of dims `out` -> the element of `in` that broadcasts to it (numpy
  /// rules; `in` must broadcast to `out`).
  static IndexMap broadcast(const std::vector<int64_t>& in, const std::vector<int64_t>& out);
  /// j = j_of[i] (4 bytes a row; the identity is recognized and stored as such).
  static IndexMap list(const std::vector<int64_t>& j_of);
  int64_t size() const { return size_; }
  bool listed() const { return listed_; }
  /// Rows with an index (j >= 0).
  int64_t count() const { return count_; }
  /// Writes j for rows [begin, begin + n) to `out`.
  void fill(int64_t begin, int64_t n, int64_t* out) const;

 private:
  int64_t size_ = 0, count_ = 0;
  bool listed_ = false;
  std::vector<int64_t> dims_, strides_;  // strided form, dims merged where contiguous
  std::vector<int32_t> list_;
};

/// W(i, col(i)) = scale(i) for each row i with col(i) >= 0: scale(i) = coef when `values` is
/// empty, else values[scale_at(i)] (e.g. a broadcast constant, read at its own size).
struct Gather {
  int64_t rows = 0, cols = 0;
  IndexMap col;
  double coef = 1.0;
  std::vector<double> values;
  IndexMap scale_at;

  /// Stored entries (rows with a column), as the sparse matrix would hold.
  int64_t entries() const { return col.count(); }
  /// Calls f(i, j, v) for every row i with an entry, ascending.
  template <class F>
  void for_each(F&& f) const {
    constexpr int64_t kBlock = 1024;
    std::array<int64_t, kBlock> j, s;
    for (int64_t b = 0; b < rows; b += kBlock) {
      const int64_t n = std::min(kBlock, rows - b);
      col.fill(b, n, j.data());
      if (!values.empty()) scale_at.fill(b, n, s.data());
      for (int64_t k = 0; k < n; ++k)
        if (j[k] >= 0) f(b + k, j[k], values.empty() ? coef : values[s[k]]);
    }
  }
};

/// a W and a W^T, each as Eigen's row-major sparse products compute them (the same sums in the
/// same order, so the same bits).
Eigen::MatrixXd gather_left(const Eigen::MatrixXd& a, const Gather& g);
Eigen::MatrixXd gather_left_transposed(const Eigen::MatrixXd& a, const Gather& g);
/// The map as a sparse matrix.
Eigen::SparseMatrix<double, Eigen::RowMajor> gather_sparse(const Gather& g);

}  // namespace propdag

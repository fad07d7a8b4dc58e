#include "propdag/gather.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace propdag {

IndexMap IndexMap::identity(int64_t n) {
  IndexMap m;
  m.size_ = m.count_ = n;
  m.dims_ = {n};
  m.strides_ = {1};
  return m;
}

IndexMap IndexMap::broadcast(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  IndexMap m;
  m.size_ = 1;
  for (int64_t d : out) m.size_ *= d;
  // Strides of `in` aligned to the right of `out`, 0 along broadcast dims; size-1 dims dropped
  // and neighbours merged where one stride continues the other (the identity becomes one dim).
  const size_t off = out.size() - in.size();
  std::vector<int64_t> st(out.size(), 0);
  int64_t stride = 1;
  for (size_t k = in.size(); k-- > 0;) {
    st[off + k] = in[k] == 1 ? 0 : stride;
    stride *= in[k];
  }
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    if (!m.dims_.empty() && m.strides_.back() == st[d] * out[d]) {
      m.dims_.back() *= out[d];
      m.strides_.back() = st[d];
      continue;
    }
    m.dims_.push_back(out[d]);
    m.strides_.push_back(st[d]);
  }
  if (m.dims_.empty()) m.dims_ = {m.size_}, m.strides_ = {0};
  m.count_ = m.size_;
  return m;
}

IndexMap IndexMap::list(const std::vector<int64_t>& j_of) {
  const auto n = static_cast<int64_t>(j_of.size());
  bool same = true;
  for (int64_t i = 0; i < n && same; ++i) same = j_of[i] == i;
  if (same) return identity(n);
  IndexMap m;
  m.size_ = n;
  m.listed_ = true;
  // Indices stay below 2^31: propdag refuses values of more than 2^28 elements.
  m.list_.assign(j_of.begin(), j_of.end());
  m.count_ = std::count_if(j_of.begin(), j_of.end(), [](int64_t j) { return j >= 0; });
  return m;
}

void IndexMap::fill(int64_t begin, int64_t n, int64_t* out) const {
  if (listed_) {
    std::copy(list_.begin() + begin, list_.begin() + begin + n, out);
    return;
  }
  const size_t rank = dims_.size();
  // No allocation for the usual ranks: CROWN's passes over small networks call this per step.
  std::array<int64_t, 8> small{};
  std::vector<int64_t> large(rank > small.size() ? rank : 0);
  int64_t* coord = rank > small.size() ? large.data() : small.data();
  int64_t j = 0;
  int64_t rest = begin;
  for (size_t d = rank; d-- > 0;) {
    coord[d] = rest % dims_[d];
    rest /= dims_[d];
    j += coord[d] * strides_[d];
  }
  const int64_t inner = dims_.back(), step = strides_.back();
  for (int64_t k = 0; k < n;) {
    const int64_t run = std::min(n - k, inner - coord[rank - 1]);
    for (int64_t r = 0; r < run; ++r) out[k + r] = j + r * step;
    k += run;
    coord[rank - 1] += run;
    j += run * step;
    for (size_t d = rank - 1; d > 0 && coord[d] == dims_[d]; --d) {  // carry
      j += strides_[d - 1] - dims_[d] * strides_[d];
      coord[d] = 0;
      ++coord[d - 1];
    }
  }
}

Eigen::MatrixXd gather_left(const Eigen::MatrixXd& a, const Gather& g) {
  // Row i of W adds v times column i of a to column j, rows in ascending order, as Eigen's
  // dense-times-row-major-sparse product does.
  Eigen::MatrixXd y = Eigen::MatrixXd::Zero(a.rows(), g.cols);
  if (a.rows() == 1) {  // one row (CROWN's passes over large nodes): plain scalars
    double* out = y.data();
    const double* in = a.data();
    g.for_each([&](int64_t i, int64_t j, double v) { out[j] += v * in[i]; });
    return y;
  }
  const Eigen::Index rows = a.rows();
  g.for_each([&](int64_t i, int64_t j, double v) {
    double* to = y.col(j).data();
    const double* from = a.col(i).data();
    for (Eigen::Index r = 0; r < rows; ++r) to[r] += v * from[r];
  });
  return y;
}

Eigen::MatrixXd gather_left_transposed(const Eigen::MatrixXd& a, const Gather& g) {
  Eigen::MatrixXd y = Eigen::MatrixXd::Zero(a.rows(), g.rows);
  if (a.rows() == 1) {
    double* out = y.data();
    const double* in = a.data();
    g.for_each([&](int64_t i, int64_t j, double v) { out[i] += v * in[j]; });
    return y;
  }
  const Eigen::Index rows = a.rows();
  g.for_each([&](int64_t i, int64_t j, double v) {
    double* to = y.col(i).data();
    const double* from = a.col(j).data();
    for (Eigen::Index r = 0; r < rows; ++r) to[r] += v * from[r];
  });
  return y;
}

Eigen::SparseMatrix<double, Eigen::RowMajor> gather_sparse(const Gather& g) {
  Eigen::SparseMatrix<double, Eigen::RowMajor> s(g.rows, g.cols);
  s.reserve(g.entries());
  int64_t next = 0;  // rows before it have been started
  g.for_each([&](int64_t i, int64_t j, double v) {
    for (; next <= i; ++next) s.startVec(next);
    s.insertBack(i, j) = v;
  });
  for (; next < g.rows; ++next) s.startVec(next);
  s.finalize();
  return s;
}

}  // namespace propdag

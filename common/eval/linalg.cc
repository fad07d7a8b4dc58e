// MatMul and Gemm.
#include <algorithm>
#include <numeric>
#include <vector>

#include "common/eval/kernels.h"

namespace common::eval {
namespace {

/// Wide accumulator: double for floats, 64-bit for integers (narrowed back = wrap-around).
template <class T>
using Wide = std::conditional_t<std::is_floating_point_v<T>, double,
                                std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

/// MatMul with numpy semantics: 1-D operands are promoted and the promoted dim removed again;
/// batch dims broadcast.
Result<Outputs> matmul_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* a, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* b, c.need(1));
  if (a->dtype != b->dtype) return c.error("input types differ");
  if (a->dims.empty() || b->dims.empty()) return c.error("MatMul inputs must have rank >= 1");
  Dims ad = a->dims, bd = b->dims;
  bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
  if (a_vec) ad.insert(ad.begin(), 1);
  if (b_vec) bd.push_back(1);
  int64_t n = ad[ad.size() - 2], k = ad.back(), m = bd.back();
  if (bd[bd.size() - 2] != k)
    return c.error("cannot multiply " + dims_str(a->dims) + " by " + dims_str(b->dims));
  Dims ab(ad.begin(), ad.end() - 2), bb(bd.begin(), bd.end() - 2);
  auto batch = broadcast_shapes(ab, bb);
  if (!batch)
    return c.error("batch dims of " + dims_str(a->dims) + " and " + dims_str(b->dims) +
                   " do not broadcast");
  auto ma = broadcast_map(ab, *batch), mb = broadcast_map(bb, *batch);
  Dims dims = *batch;
  if (!a_vec) dims.push_back(n);
  if (!b_vec) dims.push_back(m);
  RETURN_IF_ERROR(check_size(c, dims));
  return visit_numeric(c, a->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    Tensor out = make_tensor(a->dtype, dims);
    auto pa = a->span<T>(), pb = b->span<T>();
    auto o = out.mutable_span<T>();
    for (size_t s = 0; s < ma.size(); ++s) {
      const T* x = pa.data() + ma[s] * n * k;
      const T* y = pb.data() + mb[s] * k * m;
      T* z = o.data() + s * n * m;
      for (int64_t i = 0; i < n; ++i) {
        // Row i of the product, y read row by row (not down its columns); each z[i][j] still
        // sums its k products in order l = 0, 1, ..., so results are unchanged.
        std::vector<Wide<T>> acc(static_cast<size_t>(m), 0);
        for (int64_t l = 0; l < k; ++l) {
          const auto xv = static_cast<Wide<T>>(x[i * k + l]);
          const T* yr = y + l * m;
          for (int64_t j = 0; j < m; ++j) acc[j] += xv * static_cast<Wide<T>>(yr[j]);
        }
        for (int64_t j = 0; j < m; ++j) z[i * m + j] = static_cast<T>(acc[j]);
      }
    }
    return Outputs{std::move(out)};
  });
}

/// Gemm: Y = alpha * A' * B' + beta * C, A' = transA ? A^T : A (2-D), C broadcast to [M, N].
Result<Outputs> gemm_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* a, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* b, c.need(1));
  const Tensor* cc = c.in(2);
  if (a->dims.size() != 2 || b->dims.size() != 2) return c.error("Gemm needs 2-D A and B");
  bool ta = c.node().attr_int("transA", 0) != 0, tb = c.node().attr_int("transB", 0) != 0;
  int64_t m = ta ? a->dims[1] : a->dims[0], k = ta ? a->dims[0] : a->dims[1];
  int64_t kb = tb ? b->dims[1] : b->dims[0], n = tb ? b->dims[0] : b->dims[1];
  if (k != kb) return c.error("cannot multiply " + dims_str(a->dims) + " by " + dims_str(b->dims));
  Dims dims{m, n};
  std::vector<int64_t> mc;
  if (cc) {
    auto bc = broadcast_shapes(cc->dims, dims);
    if (!bc || *bc != dims) return c.error("C " + dims_str(cc->dims) + " does not broadcast to Y");
    mc = broadcast_map(cc->dims, dims);
  }
  double alpha = c.node().attr_float("alpha", 1.0f), beta = c.node().attr_float("beta", 1.0f);
  return visit_numeric(c, a->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    Tensor out = make_tensor(a->dtype, dims);
    auto pa = a->span<T>(), pb = b->span<T>();
    auto o = out.mutable_span<T>();
    // Each Y[i][j] sums its k products in order l = 0, 1, ...; B is walked along its rows (a
    // row of Y at a time when B is not transposed).
    std::vector<Wide<T>> acc(static_cast<size_t>(n));
    for (int64_t i = 0; i < m; ++i) {
      std::fill(acc.begin(), acc.end(), Wide<T>{0});
      for (int64_t j = 0; tb && j < n; ++j) {
        for (int64_t l = 0; l < k; ++l) {
          acc[j] += static_cast<Wide<T>>(ta ? pa[l * m + i] : pa[i * k + l]) *
                    static_cast<Wide<T>>(pb[j * k + l]);
        }
      }
      for (int64_t l = 0; !tb && l < k; ++l) {
        const auto x = static_cast<Wide<T>>(ta ? pa[l * m + i] : pa[i * k + l]);
        const T* row = pb.data() + l * n;
        for (int64_t j = 0; j < n; ++j) acc[j] += x * static_cast<Wide<T>>(row[j]);
      }
      for (int64_t j = 0; j < n; ++j) {
        double v = alpha * static_cast<double>(acc[j]);
        if (cc) v += beta * static_cast<double>(cc->span<T>()[mc[i * n + j]]);
        o[i * n + j] = static_cast<T>(v);
      }
    }
    return Outputs{std::move(out)};
  });
}

}  // namespace

void register_linalg(KernelRegistry& r) {
  r.add("MatMul", {matmul_kernel, true});
  r.add("Gemm", {gemm_kernel, true});
}

}  // namespace common::eval

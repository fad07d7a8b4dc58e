// Pools over any number of spatial dims: MaxPool, AveragePool (the window of window.h),
// GlobalAveragePool and GlobalMaxPool. Sums accumulate in double.
#include <algorithm>
#include <cmath>
#include <utility>

#include "common/eval/kernels.h"
#include "common/eval/window.h"
#include "common/op_params.h"

namespace common::eval {
namespace {

/// A row-major offset within dims re-expressed as a column-major one (MaxPool storage_order=1).
int64_t to_column_major(int64_t offset, const Dims& dims) {
  int64_t out = 0, stride = 1;
  Dims st = strides_of(dims);
  for (size_t d = 0; d < dims.size(); ++d) {
    out += (offset / st[d]) % dims[d] * stride;
    stride *= dims[d];
  }
  return out;
}

/// MaxPool (with the optional Indices output, row-major flat indices) and AveragePool.
template <bool kMax>
Result<Outputs> pool_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  if (x->dims.size() < 3) return c.error("input must have rank >= 3");
  Dims kernel = c.node().attr_ints("kernel_shape");
  Dims in(x->dims.begin() + 2, x->dims.end());
  if (kernel.size() != in.size()) return c.error("kernel_shape does not match the spatial rank");
  bool include_pad = c.node().attr_int("count_include_pad", 0) != 0;
  bool column_major = c.node().attr_int("storage_order", 0) != 0;
  ASSIGN_OR_RETURN(Window w, plan_window(c, in, kernel));
  Dims dims{x->dims[0], x->dims[1]};
  dims.insert(dims.end(), w.out.begin(), w.out.end());
  RETURN_IF_ERROR(check_size(c, dims));
  int64_t planes = x->dims[0] * x->dims[1], in_sz = num_elements(in);
  int64_t out_sz = num_elements(w.out);
  return visit_numeric(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    Tensor y = make_tensor(x->dtype, dims), idx = make_tensor(DType::kInt64, dims);
    auto px = x->span<T>();
    auto o = y.mutable_span<T>();
    auto oi = idx.mutable_span<int64_t>();
    std::vector<int64_t> pos(w.out.size(), 0);
    for (int64_t pl = 0; pl < planes; ++pl) {
      const T* xs = px.data() + pl * in_sz;
      std::fill(pos.begin(), pos.end(), 0);
      for (int64_t p = 0; p < out_sz; ++p, next_index(pos, w.out)) {
        double acc = kMax ? -INFINITY : 0;
        int64_t count = 0, arg = 0;
        bool found = false;
        for_each_tap(w, pos, [&](int64_t off, bool inside, bool padded) {
          if (inside && kMax && (!found || xs[off] > acc)) acc = xs[off], arg = off, found = true;
          if (inside && !kMax) acc += xs[off];
          count += (inside || (include_pad && padded)) ? 1 : 0;
        });
        o[pl * out_sz + p] = static_cast<T>(kMax ? acc : acc / std::max<int64_t>(count, 1));
        oi[pl * out_sz + p] = pl * in_sz + (column_major ? to_column_major(arg, in) : arg);
      }
    }
    Outputs outs{std::move(y)};
    if (kMax && c.num_outputs() > 1) outs.push_back(std::move(idx));
    return outs;
  });
}

/// GlobalAveragePool / GlobalMaxPool: over every dim after the first two, kept as 1.
template <bool kMax>
Result<Outputs> global_pool_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  if (x->dims.size() < 2) return c.error("input must have rank >= 2");
  int64_t inner = prod(x->dims, 2, x->dims.size()), groups = x->dims[0] * x->dims[1];
  Dims dims = x->dims;
  for (size_t d = 2; d < dims.size(); ++d) dims[d] = 1;
  return visit_floating(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    Tensor y = make_tensor(x->dtype, dims);
    auto in = x->span<T>();
    for (int64_t g = 0; g < groups; ++g) {
      double acc = kMax ? -INFINITY : 0;
      for (int64_t i = 0; i < inner; ++i) {
        double v = in[g * inner + i];
        acc = kMax ? std::max(acc, v) : acc + v;
      }
      y.mutable_span<T>()[g] = static_cast<T>(kMax ? acc : acc / static_cast<double>(inner));
    }
    return Outputs{std::move(y)};
  });
}

}  // namespace

void register_pool(KernelRegistry& r) {
  r.add("MaxPool", {pool_kernel<true>, true});
  r.add("AveragePool", {pool_kernel<false>, true});
  r.add("GlobalAveragePool", {global_pool_kernel<false>, true});
  r.add("GlobalMaxPool", {global_pool_kernel<true>, true});
}

}  // namespace common::eval

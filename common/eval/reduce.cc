// Reductions: Reduce*, ArgMax/ArgMin, CumSum, TopK. Sums of float/double accumulate in
// double and round once (closest to the exact result, which any reference approximates).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "common/eval/kernels.h"

namespace common::eval {
namespace {

/// Which axes to reduce and the output shape.
struct ReducePlan {
  std::vector<bool> reduced;  // per input axis
  Dims out_dims;
  bool noop = false;
};

/// Axes from the `axes` input (ReduceSum from 13, the others from 18) or attribute; empty means
/// all axes unless noop_with_empty_axes.
Result<ReducePlan> plan_reduce(const Ctx& c, const Tensor& x) {
  auto rank = static_cast<int64_t>(x.dims.size());
  ASSIGN_OR_RETURN(auto axes_in, ints_input_or_attr(c, 1, "axes"));
  ReducePlan p;
  p.reduced.assign(rank, axes_in == std::nullopt || axes_in->empty());
  if ((!axes_in || axes_in->empty()) && c.node().attr_int("noop_with_empty_axes", 0) != 0) {
    p.noop = true;
    p.out_dims = x.dims;
    return p;
  }
  if (axes_in) {
    ASSIGN_OR_RETURN(auto axes, c.at(normalize_axes(*axes_in, rank)));
    for (int64_t a : axes) p.reduced[a] = true;
  }
  bool keep = c.node().attr_int("keepdims", 1) != 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (!p.reduced[d])
      p.out_dims.push_back(x.dims[d]);
    else if (keep)
      p.out_dims.push_back(1);
  }
  return p;
}

/// For each input element, the offset of its output element.
std::vector<int64_t> reduce_map(const Dims& in, const std::vector<bool>& reduced) {
  Dims kept = in;
  for (size_t d = 0; d < in.size(); ++d)
    if (reduced[d]) kept[d] = 1;
  Dims kst = strides_of(kept), st(in.size());
  for (size_t d = 0; d < in.size(); ++d) st[d] = reduced[d] ? 0 : kst[d];
  std::vector<int64_t> map(std::max<int64_t>(num_elements(in), 0));
  std::vector<int64_t> idx(in.size(), 0);
  for (size_t i = 0; i < map.size(); ++i, next_index(idx, in)) {
    int64_t off = 0;
    for (size_t d = 0; d < in.size(); ++d) off += idx[d] * st[d];
    map[i] = off;
  }
  return map;
}

enum class RKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

template <RKind K>
Result<Outputs> reduce_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(ReducePlan p, plan_reduce(c, *x));
  if (p.noop) return Outputs{*x};
  return visit_numeric(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    using A = std::conditional_t<std::is_floating_point_v<T>, double,
                                 std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;
    int64_t n_out = num_elements(p.out_dims);
    A init = 0;
    if constexpr (K == RKind::kProd) init = 1;
    if constexpr (K == RKind::kMax) init = std::numeric_limits<T>::lowest();
    if constexpr (K == RKind::kMin) init = std::numeric_limits<T>::max();
    if constexpr (std::is_floating_point_v<T> && K == RKind::kMax) init = -INFINITY;
    if constexpr (std::is_floating_point_v<T> && K == RKind::kMin) init = INFINITY;
    std::vector<A> acc(n_out, init), shift(n_out, 0);
    auto in = x->span<T>();
    auto map = reduce_map(x->dims, p.reduced);
    if constexpr (K == RKind::kLogSumExp) {  // subtract the max for stability
      std::vector<A> mx(n_out, std::numeric_limits<A>::lowest());
      for (size_t i = 0; i < in.size(); ++i) mx[map[i]] = std::max<A>(mx[map[i]], in[i]);
      for (int64_t o = 0; o < n_out; ++o) shift[o] = std::isfinite(double(mx[o])) ? mx[o] : 0;
    }
    for (size_t i = 0; i < in.size(); ++i) {
      A v = static_cast<A>(in[i]);
      A& a = acc[map[i]];
      if constexpr (K == RKind::kSum || K == RKind::kMean || K == RKind::kLogSum) a += v;
      if constexpr (K == RKind::kMax) a = v > a || v != v ? v : a;
      if constexpr (K == RKind::kMin) a = v < a || v != v ? v : a;
      if constexpr (K == RKind::kProd) a *= v;
      if constexpr (K == RKind::kL1) a += v < 0 ? A(0) - v : v;
      if constexpr (K == RKind::kL2 || K == RKind::kSumSquare) a += v * v;
      if constexpr (K == RKind::kLogSumExp)
        a += static_cast<A>(std::exp(double(v - shift[map[i]])));
    }
    int64_t count = n_out > 0 ? x->numel() / n_out : 0;
    Tensor out = make_tensor(x->dtype, p.out_dims);
    auto o = out.mutable_span<T>();
    for (int64_t j = 0; j < n_out; ++j) {
      A a = acc[j];
      if constexpr (K == RKind::kMean) a = count ? static_cast<A>(a / static_cast<A>(count)) : a;
      if constexpr (K == RKind::kL2) a = static_cast<A>(std::sqrt(double(a)));
      if constexpr (K == RKind::kLogSum) a = static_cast<A>(std::log(double(a)));
      if constexpr (K == RKind::kLogSumExp) a = static_cast<A>(std::log(double(a)) + shift[j]);
      o[j] = static_cast<T>(a);
    }
    return Outputs{std::move(out)};
  });
}

/// ArgMax / ArgMin along one axis; ties pick the first index unless select_last_index.
template <bool kMax>
Result<Outputs> arg_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  auto rank = static_cast<int64_t>(x->dims.size());
  ASSIGN_OR_RETURN(int64_t axis, c.at(normalize_axis(c.node().attr_int("axis", 0), rank)));
  bool keep = c.node().attr_int("keepdims", 1) != 0;
  bool last = c.node().attr_int("select_last_index", 0) != 0;
  int64_t outer = prod(x->dims, 0, axis), n = x->dims[axis];
  int64_t inner = prod(x->dims, axis + 1, rank);
  if (n == 0) return c.error("cannot take the arg of an empty axis");
  Dims dims = x->dims;
  if (keep)
    dims[axis] = 1;
  else
    dims.erase(dims.begin() + axis);
  return visit_numeric(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    auto in = x->span<T>();
    Tensor out = make_tensor(DType::kInt64, dims);
    auto o = out.mutable_span<int64_t>();
    for (int64_t a = 0; a < outer; ++a) {
      for (int64_t b = 0; b < inner; ++b) {
        const T* p = in.data() + a * n * inner + b;
        int64_t best = 0;
        for (int64_t k = 1; k < n; ++k) {
          T v = p[k * inner], w = p[best * inner];
          bool better = kMax ? (v > w || (last && v == w)) : (v < w || (last && v == w));
          if (better) best = k;
        }
        o[a * inner + b] = best;
      }
    }
    return Outputs{std::move(out)};
  });
}

/// CumSum(x, axis): running sums in the element type; exclusive and reverse attributes.
Result<Outputs> cumsum_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* axis_t, c.need(1));
  auto rank = static_cast<int64_t>(x->dims.size());
  ASSIGN_OR_RETURN(int64_t axis, c.at(normalize_axis(scalar_int(*axis_t), rank)));
  bool exclusive = c.node().attr_int("exclusive", 0) != 0;
  bool reverse = c.node().attr_int("reverse", 0) != 0;
  Dims st = strides_of(x->dims);
  int64_t n = x->dims[axis], inner = st[axis];
  int64_t outer = n == 0 ? 0 : x->numel() / (n * inner);
  return visit_numeric(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    Tensor out = *x;
    auto in = x->span<T>();
    auto o = out.mutable_span<T>();
    for (int64_t a = 0; a < outer; ++a) {
      for (int64_t b = 0; b < inner; ++b) {
        T acc = 0;
        for (int64_t s = 0; s < n; ++s) {
          int64_t k = reverse ? n - 1 - s : s;
          int64_t off = (a * n + k) * inner + b;
          if (exclusive) o[off] = acc;
          acc = static_cast<T>(acc + in[off]);
          if (!exclusive) o[off] = acc;
        }
      }
    }
    return Outputs{std::move(out)};
  });
}

/// TopK: the k largest (or smallest) along axis, sorted; ties keep the lower index first.
Result<Outputs> topk_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  int64_t k = c.in(1) ? scalar_int(*c.in(1)) : c.node().attr_int("k", -1);
  auto rank = static_cast<int64_t>(x->dims.size());
  ASSIGN_OR_RETURN(int64_t axis, c.at(normalize_axis(c.node().attr_int("axis", -1), rank)));
  bool largest = c.node().attr_int("largest", 1) != 0;
  int64_t n = x->dims[axis];
  if (k < 0 || k > n) return c.error("k=" + std::to_string(k) + " is out of range");
  Dims dims = x->dims;
  dims[axis] = k;
  Dims st = strides_of(x->dims);
  int64_t inner = st[axis], outer = n == 0 ? 0 : x->numel() / (n * inner);
  return visit_numeric(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    Tensor vals = make_tensor(x->dtype, dims), idxs = make_tensor(DType::kInt64, dims);
    auto in = x->span<T>();
    auto ov = vals.mutable_span<T>();
    auto oi = idxs.mutable_span<int64_t>();
    std::vector<int64_t> order(n);
    for (int64_t a = 0; a < outer; ++a) {
      for (int64_t b = 0; b < inner; ++b) {
        auto at = [&](int64_t j) { return in[(a * n + j) * inner + b]; };
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
          return largest ? at(p) > at(q) : at(p) < at(q);
        });
        for (int64_t j = 0; j < k; ++j) {
          ov[(a * k + j) * inner + b] = at(order[j]);
          oi[(a * k + j) * inner + b] = order[j];
        }
      }
    }
    return Outputs{std::move(vals), std::move(idxs)};
  });
}

}  // namespace

void register_reduce(KernelRegistry& r) {
  r.add("ReduceSum", {reduce_kernel<RKind::kSum>, true});
  r.add("ReduceMean", {reduce_kernel<RKind::kMean>, true});
  r.add("ReduceMax", {reduce_kernel<RKind::kMax>, true});
  r.add("ReduceMin", {reduce_kernel<RKind::kMin>, true});
  r.add("ReduceProd", {reduce_kernel<RKind::kProd>, true});
  r.add("ReduceL1", {reduce_kernel<RKind::kL1>, true});
  r.add("ReduceL2", {reduce_kernel<RKind::kL2>, true});
  r.add("ReduceLogSum", {reduce_kernel<RKind::kLogSum>, true});
  r.add("ReduceLogSumExp", {reduce_kernel<RKind::kLogSumExp>, true});
  r.add("ReduceSumSquare", {reduce_kernel<RKind::kSumSquare>, true});
  r.add("ArgMax", {arg_kernel<true>, true});
  r.add("ArgMin", {arg_kernel<false>, true});
  r.add("CumSum", {cumsum_kernel, true});
  r.add("TopK", {topk_kernel, true});
}

}  // namespace common::eval

// Indexing ops: Gather, GatherElements, GatherND, Slice, Compress, NonZero, OneHot; Pad,
// CenterCropPad, ScatterND, ScatterElements (index_scatter.cc).
// Negative indices count from the end; indices out of range are errors.
#include <algorithm>
#include <cstring>

#include "common/eval/kernels.h"

namespace common::eval {
namespace {

/// Index of `idx` into a dim of size n after wrapping negatives, or an error.
Result<int64_t> fix_index(const Ctx& c, int64_t idx, int64_t n) {
  if (idx < -n || idx >= n)
    return c.error("index " + std::to_string(idx) + " is out of range for a dim of " +
                   std::to_string(n));
  return idx < 0 ? idx + n : idx;
}

Result<Outputs> gather_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* ind, c.need(1));
  auto rank = static_cast<int64_t>(x->dims.size());
  ASSIGN_OR_RETURN(int64_t axis, c.at(normalize_axis(c.node().attr_int("axis", 0), rank)));
  Dims dims(x->dims.begin(), x->dims.begin() + axis);
  dims.insert(dims.end(), ind->dims.begin(), ind->dims.end());
  dims.insert(dims.end(), x->dims.begin() + axis + 1, x->dims.end());
  RETURN_IF_ERROR(check_size(c, dims));
  size_t es = dtype_size(x->dtype);
  int64_t outer = prod(x->dims, 0, axis), n = x->dims[axis];
  size_t inner = prod(x->dims, axis + 1, rank) * es;
  auto idx = ints_of(*ind);
  for (int64_t& i : idx) {
    ASSIGN_OR_RETURN(i, fix_index(c, i, n));
  }
  Tensor out = make_tensor(x->dtype, dims);
  char* dst = out.raw.data();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i : idx) {
      std::memcpy(dst, x->raw.data() + (o * n + i) * inner, inner);
      dst += inner;
    }
  }
  return Outputs{std::move(out)};
}

/// GatherElements: out[i...] = x[i... with the axis coordinate replaced by indices[i...]].
Result<Outputs> gather_elements_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* ind, c.need(1));
  auto rank = static_cast<int64_t>(x->dims.size());
  ASSIGN_OR_RETURN(int64_t axis, c.at(normalize_axis(c.node().attr_int("axis", 0), rank)));
  if (ind->dims.size() != x->dims.size()) return c.error("indices rank differs from data rank");
  Tensor out = make_tensor(x->dtype, ind->dims);
  size_t es = dtype_size(x->dtype);
  Dims st = strides_of(x->dims);
  std::vector<int64_t> pos(rank, 0);
  auto idx = ints_of(*ind);
  for (size_t i = 0; i < idx.size(); ++i, next_index(pos, ind->dims)) {
    ASSIGN_OR_RETURN(int64_t k, fix_index(c, idx[i], x->dims[axis]));
    int64_t off = 0;
    for (int64_t d = 0; d < rank; ++d) off += (d == axis ? k : pos[d]) * st[d];
    std::memcpy(out.raw.data() + i * es, x->raw.data() + off * es, es);
  }
  return Outputs{std::move(out)};
}

/// GatherND with batch_dims b: indices [B..., M..., k] pick slices x[B..., i1..ik, ...].
Result<Outputs> gather_nd_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* ind, c.need(1));
  auto b = static_cast<size_t>(c.node().attr_int("batch_dims", 0));
  if (ind->dims.empty()) return c.error("indices must have rank >= 1");
  auto k = static_cast<size_t>(ind->dims.back());
  if (b >= ind->dims.size() || b + k > x->dims.size())
    return c.error("indices last dim plus batch_dims exceeds data rank");
  for (size_t i = 0; i < b; ++i)
    if (ind->dims[i] != x->dims[i]) return c.error("batch dims of data and indices differ");
  Dims dims(ind->dims.begin(), ind->dims.end() - 1);
  dims.insert(dims.end(), x->dims.begin() + b + k, x->dims.end());
  size_t es = dtype_size(x->dtype);
  size_t slice = prod(x->dims, b + k, x->dims.size()) * es;
  int64_t batch_size = prod(x->dims, b, x->dims.size());  // elements per batch
  int64_t per_batch = prod(ind->dims, b, ind->dims.size() - 1);
  Dims st = strides_of(x->dims);
  auto idx = ints_of(*ind);
  Tensor out = make_tensor(x->dtype, dims);
  char* dst = out.raw.data();
  int64_t tuples = prod(ind->dims, 0, ind->dims.size() - 1);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = (t / std::max<int64_t>(per_batch, 1)) * batch_size;
    for (size_t j = 0; j < k; ++j) {
      ASSIGN_OR_RETURN(int64_t v, fix_index(c, idx[t * k + j], x->dims[b + j]));
      off += v * st[b + j];
    }
    std::memcpy(dst, x->raw.data() + off * es, slice);
    dst += slice;
  }
  return Outputs{std::move(out)};
}

/// Slice: starts/ends/axes/steps are inputs from opset 10, attributes before. Bounds are clamped
/// to [0, dim] (step > 0) or [-1, dim - 1] (step < 0) after adding dim to negatives.
Result<Outputs> slice_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  auto rank = static_cast<int64_t>(x->dims.size());
  ASSIGN_OR_RETURN(auto starts, ints_input_or_attr(c, 1, "starts"));
  ASSIGN_OR_RETURN(auto ends, ints_input_or_attr(c, 2, "ends"));
  if (!starts || !ends || starts->size() != ends->size())
    return c.error("starts and ends must be given with equal lengths");
  std::vector<int64_t> axes(starts->size());
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  ASSIGN_OR_RETURN(auto axes_in, ints_input_or_attr(c, 3, "axes"));
  if (axes_in) axes = *axes_in;
  std::vector<int64_t> steps(starts->size(), 1);
  if (c.in(4)) steps = ints_of(*c.in(4));
  if (axes.size() != starts->size() || steps.size() != starts->size())
    return c.error("axes and steps must match starts in length");
  ASSIGN_OR_RETURN(axes, c.at(normalize_axes(axes, rank)));
  Dims begin(rank, 0), step(rank, 1), dims = x->dims;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i], n = x->dims[a], s = steps[i];
    if (s == 0) return c.error("slice step is zero");
    int64_t lo = (*starts)[i], hi = (*ends)[i];
    if (lo < 0) lo += n;
    if (hi < 0) hi += n;
    lo = s > 0 ? std::clamp<int64_t>(lo, 0, n) : std::clamp<int64_t>(lo, 0, n - 1);
    hi = s > 0 ? std::clamp<int64_t>(hi, 0, n) : std::clamp<int64_t>(hi, -1, n - 1);
    int64_t len = s > 0 ? (hi - lo + s - 1) / s : (lo - hi + (-s) - 1) / (-s);
    begin[a] = lo;
    step[a] = s;
    dims[a] = std::max<int64_t>(len, 0);
  }
  Tensor out = make_tensor(x->dtype, dims);
  size_t es = dtype_size(x->dtype);
  Dims st = strides_of(x->dims);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < out.numel(); ++i, next_index(idx, dims)) {
    int64_t off = 0;
    for (int64_t d = 0; d < rank; ++d) off += (begin[d] + idx[d] * step[d]) * st[d];
    std::memcpy(out.raw.data() + i * es, x->raw.data() + off * es, es);
  }
  return Outputs{std::move(out)};
}

/// Compress: keeps the slices along `axis` (or of the flattened input) where condition is true.
Result<Outputs> compress_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x0, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* cond, c.need(1));
  Tensor x = *x0;
  int64_t axis = 0;
  if (c.node().has_attr("axis")) {
    ASSIGN_OR_RETURN(axis, c.at(normalize_axis(c.node().attr_int("axis", 0), x.dims.size())));
  } else {
    x.dims = {x.numel()};
  }
  auto keep = ints_of(*cond);
  if (static_cast<int64_t>(keep.size()) > x.dims[axis]) return c.error("condition is too long");
  std::vector<int64_t> kept;
  for (size_t i = 0; i < keep.size(); ++i)
    if (keep[i]) kept.push_back(static_cast<int64_t>(i));
  size_t es = dtype_size(x.dtype);
  int64_t outer = prod(x.dims, 0, axis), n = x.dims[axis];
  size_t inner = prod(x.dims, axis + 1, x.dims.size()) * es;
  Dims dims = x.dims;
  dims[axis] = static_cast<int64_t>(kept.size());
  Tensor out = make_tensor(x.dtype, dims);
  char* dst = out.raw.data();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i : kept) {
      std::memcpy(dst, x.raw.data() + (o * n + i) * inner, inner);
      dst += inner;
    }
  }
  return Outputs{std::move(out)};
}

/// NonZero: int64 [rank, count] coordinates in row-major order (a scalar counts as rank 1).
Result<Outputs> nonzero_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  Dims dims = x->dims.empty() ? Dims{1} : x->dims;
  std::vector<std::vector<int64_t>> coords;
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t i = 0; i < x->numel(); ++i, next_index(idx, dims))
    if (scalar_double(*x, i) != 0) coords.push_back(idx);
  auto count = static_cast<int64_t>(coords.size());
  Tensor out = make_tensor(DType::kInt64, {static_cast<int64_t>(dims.size()), count});
  auto o = out.mutable_span<int64_t>();
  for (int64_t j = 0; j < count; ++j)
    for (size_t d = 0; d < dims.size(); ++d) o[d * count + j] = coords[j][d];
  return Outputs{std::move(out)};
}

/// OneHot(indices, depth, values[off, on]): a new axis of size depth; negative indices wrap.
Result<Outputs> one_hot_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* ind, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* depth_t, c.need(1));
  ASSIGN_OR_RETURN(const Tensor* values, c.need(2));
  if (depth_t->numel() != 1 || values->numel() != 2)
    return c.error("depth must be a scalar and values a pair");
  const int64_t depth = saturating_int64(scalar_double(*depth_t));
  if (depth <= 0) return c.error("depth must be positive");
  auto out_rank = static_cast<int64_t>(ind->dims.size() + 1);
  ASSIGN_OR_RETURN(int64_t axis, c.at(normalize_axis(c.node().attr_int("axis", -1), out_rank)));
  Dims dims = ind->dims;
  dims.insert(dims.begin() + axis, depth);
  RETURN_IF_ERROR(check_size(c, dims));
  size_t es = dtype_size(values->dtype);
  const char* off = values->raw.data();
  const char* on = off + es;
  Tensor out = make_tensor(values->dtype, dims);
  for (int64_t i = 0; i < out.numel(); ++i) std::memcpy(out.raw.data() + i * es, off, es);
  int64_t outer = prod(ind->dims, 0, axis);
  int64_t inner = prod(ind->dims, axis, ind->dims.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t v = saturating_int64(scalar_double(*ind, o * inner + i));
      if (v < 0) v += depth;
      if (v < 0 || v >= depth) continue;
      std::memcpy(out.raw.data() + ((o * depth + v) * inner + i) * es, on, es);
    }
  }
  return Outputs{std::move(out)};
}

}  // namespace

Result<Outputs> pad_kernel(const Ctx& c);
Result<Outputs> center_crop_pad_kernel(const Ctx& c);
Result<Outputs> scatter_nd_kernel(const Ctx& c);
Result<Outputs> scatter_elements_kernel(const Ctx& c);

void register_index(KernelRegistry& r) {
  r.add("Gather", {gather_kernel});
  r.add("GatherElements", {gather_elements_kernel});
  r.add("GatherND", {gather_nd_kernel});
  r.add("Slice", {slice_kernel});
  r.add("Compress", {compress_kernel});
  r.add("NonZero", {nonzero_kernel});
  r.add("OneHot", {one_hot_kernel});
  r.add("Pad", {pad_kernel});
  r.add("CenterCropPad", {center_crop_pad_kernel});
  r.add("ScatterND", {scatter_nd_kernel, true});
  r.add("ScatterElements", {scatter_elements_kernel, true});
  r.add("Scatter", {scatter_elements_kernel, true});
}

}  // namespace common::eval

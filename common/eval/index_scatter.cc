// Pad, ScatterND and ScatterElements.
#include <algorithm>
#include <cstring>

#include "common/eval/kernels.h"

namespace common::eval {
namespace {

/// Source coordinate for output coordinate i along a dim of size n with `before` padding, or -1
/// when it falls in the constant border.
int64_t pad_source(int64_t i, int64_t before, int64_t n, std::string_view mode) {
  int64_t s = i - before;
  if (s >= 0 && s < n) return s;
  if (mode == "constant" || n == 0) return -1;
  if (mode == "edge") return std::clamp<int64_t>(s, 0, n - 1);
  if (mode == "wrap") return ((s % n) + n) % n;
  if (n == 1) return 0;  // reflect
  int64_t period = 2 * (n - 1);
  s = ((s % period) + period) % period;
  return s < n ? s : period - s;
}

/// The pad value as one element of x's dtype.
Result<Tensor> pad_value(const Ctx& c, const Tensor& x) {
  Tensor v = Tensor::from_double({c.node().attr_float("value", 0.0f)}, {}, DType::kDouble);
  if (const Tensor* t = c.in(2); t && t->numel() > 0) {
    v = *t;
    v.raw.resize(dtype_size(v.dtype));
    v.dims = {};
  }
  return cast_tensor(c, v, x.dtype);
}

/// Per-axis [begin, end] padding amounts from pads (+ axes, opset 18).
Result<std::pair<Dims, Dims>> pad_amounts(const Ctx& c, int64_t rank) {
  ASSIGN_OR_RETURN(auto pads, ints_input_or_attr(c, 1, c.opset() < 11 ? "pads" : ""));
  if (!pads && c.opset() < 11 && c.node().has_attr("paddings"))
    pads = c.node().attr_ints("paddings");
  if (!pads) return c.error("missing pads");
  std::vector<int64_t> axes(rank);
  for (int64_t i = 0; i < rank; ++i) axes[i] = i;
  if (const Tensor* a = c.in(3)) {
    ASSIGN_OR_RETURN(axes, c.at(normalize_axes(ints_of(*a), rank)));
  }
  if (pads->size() != 2 * axes.size())
    return c.error("pads has " + std::to_string(pads->size()) + " values for " +
                   std::to_string(axes.size()) + " axes");
  Dims before(rank, 0), after(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    before[axes[i]] = (*pads)[i];
    after[axes[i]] = (*pads)[i + axes.size()];
  }
  return std::make_pair(before, after);
}

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Result<Reduction> reduction_of(const Ctx& c) {
  std::string r = c.node().attr_string("reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  return c.error("unknown reduction '" + r + "'");
}

template <class T>
void apply(T& dst, T v, Reduction r) {
  switch (r) {
    case Reduction::kNone:
      dst = v;
      break;
    case Reduction::kAdd:
      dst = static_cast<T>(dst + v);
      break;
    case Reduction::kMul:
      dst = static_cast<T>(dst * v);
      break;
    case Reduction::kMax:
      dst = std::max(dst, v);
      break;
    case Reduction::kMin:
      dst = std::min(dst, v);
      break;
  }
}

}  // namespace

/// x padded by `before` and `after` per axis (negative amounts crop) in `mode` with `value`.
Result<Outputs> pad_by(const Ctx& c, const Tensor& x, const Dims& before, const Dims& after,
                       const std::string& mode, const Tensor& value) {
  auto rank = static_cast<int64_t>(x.dims.size());
  Dims dims(rank);
  for (int64_t d = 0; d < rank; ++d) {
    dims[d] = x.dims[d] + before[d] + after[d];
    if (dims[d] < 0) return c.error("pads remove more than the whole axis " + std::to_string(d));
    if (mode != "constant" && x.dims[d] == 0 && dims[d] > 0)
      return c.error("cannot pad an empty axis in mode " + mode);
  }
  RETURN_IF_ERROR(check_size(c, dims));
  Tensor out = make_tensor(x.dtype, dims);
  size_t es = dtype_size(x.dtype);
  Dims st = strides_of(x.dims);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < out.numel(); ++i, next_index(idx, dims)) {
    int64_t off = 0;
    for (int64_t d = 0; d < rank && off >= 0; ++d) {
      int64_t s = pad_source(idx[d], before[d], x.dims[d], mode);
      off = s < 0 ? -1 : off + s * st[d];
    }
    const char* src = off < 0 ? value.raw.data() : x.raw.data() + off * es;
    std::memcpy(out.raw.data() + i * es, src, es);
  }
  return Outputs{std::move(out)};
}

/// Pad: pads/value attributes before opset 11; pads, constant_value (and axes, opset 18) inputs
/// after. Modes constant, reflect, edge, wrap; negative pads crop.
Result<Outputs> pad_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  auto rank = static_cast<int64_t>(x->dims.size());
  ASSIGN_OR_RETURN(auto amounts, pad_amounts(c, rank));
  auto [before, after] = amounts;
  std::string mode = c.node().attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return c.error("unknown pad mode '" + mode + "'");
  ASSIGN_OR_RETURN(Tensor value, pad_value(c, *x));
  return pad_by(c, *x, before, after, mode, value);
}

/// CenterCropPad(input, shape) over `axes` (all by default): each axis cropped or zero-padded to
/// its new length about its centre; an odd difference leaves the extra element at the end.
Result<Outputs> center_crop_pad_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* shape, c.need(1));
  auto rank = static_cast<int64_t>(x->dims.size());
  std::vector<int64_t> axes = c.node().attr_ints("axes");
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  ASSIGN_OR_RETURN(axes, c.at(normalize_axes(axes, rank)));
  const std::vector<int64_t> lengths = ints_of(*shape);
  if (lengths.size() != axes.size()) return c.error("shape length does not match the axes");
  Dims before(rank, 0), after(rank, 0);
  for (size_t j = 0; j < axes.size(); ++j) {
    const int64_t a = axes[j], diff = lengths[j] - x->dims[a];
    if (lengths[j] < 0) return c.error("negative length in shape");
    before[a] = diff >= 0 ? diff / 2 : -(-diff / 2);
    after[a] = diff - before[a];
  }
  return pad_by(c, *x, before, after, "constant", make_tensor(x->dtype, {}));
}

/// ScatterND(data, indices [..., k], updates): slices data[i1..ik] replaced or reduced.
Result<Outputs> scatter_nd_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* ind, c.need(1));
  ASSIGN_OR_RETURN(const Tensor* upd, c.need(2));
  ASSIGN_OR_RETURN(Reduction red, reduction_of(c));
  if (ind->dims.empty()) return c.error("indices must have rank >= 1");
  auto k = static_cast<size_t>(ind->dims.back());
  if (k > x->dims.size()) return c.error("indices last dim exceeds data rank");
  if (upd->dtype != x->dtype) return c.error("updates type differs from data type");
  int64_t slice = 1;
  for (size_t d = k; d < x->dims.size(); ++d) slice *= x->dims[d];
  int64_t tuples = num_elements(Dims(ind->dims.begin(), ind->dims.end() - 1));
  if (upd->numel() != tuples * slice) return c.error("updates shape does not match indices");
  Dims st = strides_of(x->dims);
  auto idx = ints_of(*ind);
  Tensor out = *x;
  return visit_numeric(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    auto o = out.mutable_span<T>();
    auto u = upd->span<T>();
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (size_t j = 0; j < k; ++j) {
        int64_t v = idx[t * k + j], n = x->dims[j];
        if (v < -n || v >= n) return c.error("index " + std::to_string(v) + " is out of range");
        off += (v < 0 ? v + n : v) * st[j];
      }
      for (int64_t e = 0; e < slice; ++e) apply(o[off + e], u[t * slice + e], red);
    }
    return Outputs{std::move(out)};
  });
}

/// ScatterElements(data, indices, updates, axis): out[pos with axis = indices[pos]] = updates[pos].
Result<Outputs> scatter_elements_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* ind, c.need(1));
  ASSIGN_OR_RETURN(const Tensor* upd, c.need(2));
  ASSIGN_OR_RETURN(Reduction red, reduction_of(c));
  auto rank = static_cast<int64_t>(x->dims.size());
  ASSIGN_OR_RETURN(int64_t axis, c.at(normalize_axis(c.node().attr_int("axis", 0), rank)));
  if (ind->dims != upd->dims || ind->dims.size() != x->dims.size())
    return c.error("indices and updates must have the data's rank and the same shape");
  if (upd->dtype != x->dtype) return c.error("updates type differs from data type");
  Dims st = strides_of(x->dims);
  auto idx = ints_of(*ind);
  Tensor out = *x;
  return visit_numeric(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    auto o = out.mutable_span<T>();
    auto u = upd->span<T>();
    std::vector<int64_t> pos(rank, 0);
    for (size_t i = 0; i < idx.size(); ++i, next_index(pos, ind->dims)) {
      int64_t v = idx[i], n = x->dims[axis];
      if (v < -n || v >= n) return c.error("index " + std::to_string(v) + " is out of range");
      int64_t off = 0;
      for (int64_t d = 0; d < rank; ++d) off += (d == axis ? (v < 0 ? v + n : v) : pos[d]) * st[d];
      apply(o[off], u[i], red);
    }
    return Outputs{std::move(out)};
  });
}

}  // namespace common::eval

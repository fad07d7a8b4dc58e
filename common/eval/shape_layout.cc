// Layout ops that move blocks of bytes: Concat, Split, Transpose, DepthToSpace, SpaceToDepth.
#include <cstring>
#include <numeric>

#include "common/eval/kernels.h"

namespace common::eval {

namespace {

/// y = x with axes permuted: y.dims[k] = x.dims[perm[k]].
Tensor permute(const Tensor& x, const std::vector<int64_t>& perm) {
  size_t rank = perm.size();
  Dims dims(rank), src_st(rank);
  Dims st = strides_of(x.dims);
  for (size_t k = 0; k < rank; ++k) {
    dims[k] = x.dims[perm[k]];
    src_st[k] = st[perm[k]];
  }
  Tensor out = make_tensor(x.dtype, dims);
  size_t es = dtype_size(x.dtype);
  int64_t n = out.numel();
  std::vector<int64_t> idx(rank, 0);
  int64_t pos = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(out.raw.data() + i * es, x.raw.data() + pos * es, es);
    for (size_t k = rank; k-- > 0;) {
      pos += src_st[k];
      if (++idx[k] < dims[k]) break;
      pos -= src_st[k] * dims[k];
      idx[k] = 0;
    }
  }
  return out;
}

}  // namespace

Result<Outputs> concat_kernel(const Ctx& c) {
  if (c.inputs().empty()) return c.error("needs at least one input");
  ASSIGN_OR_RETURN(const Tensor* first, c.need(0));
  auto rank = static_cast<int64_t>(first->dims.size());
  ASSIGN_OR_RETURN(int64_t axis, c.at(normalize_axis(c.node().attr_int("axis", 0), rank)));
  Dims dims = first->dims;
  dims[axis] = 0;
  for (size_t i = 0; i < c.inputs().size(); ++i) {
    ASSIGN_OR_RETURN(const Tensor* t, c.need(i));
    bool same = t->dtype == first->dtype && t->dims.size() == first->dims.size();
    for (int64_t k = 0; same && k < rank; ++k) same = k == axis || t->dims[k] == first->dims[k];
    if (!same)
      return c.error("input " + std::to_string(i) + " " + dims_str(t->dims) + " does not match " +
                     dims_str(first->dims) + " outside axis " + std::to_string(axis));
    dims[axis] += t->dims[axis];
  }
  Tensor out = make_tensor(first->dtype, dims);
  size_t es = dtype_size(first->dtype);
  int64_t outer = prod(dims, 0, axis);
  char* dst = out.raw.data();
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor* t : c.inputs()) {
      size_t chunk = prod(t->dims, axis, t->dims.size()) * es;
      std::memcpy(dst, t->raw.data() + o * chunk, chunk);
      dst += chunk;
    }
  }
  return Outputs{std::move(out)};
}

/// Split sizes: the `split` input (opset 13) or attribute (before), else num_outputs (opset 18,
/// last chunk smaller), else equal parts over the declared outputs.
Result<std::vector<int64_t>> split_sizes(const Ctx& c, int64_t dim) {
  ASSIGN_OR_RETURN(auto s, ints_input_or_attr(c, 1, "split"));
  if (s) {
    int64_t total = 0;
    for (int64_t v : *s) {
      if (v < 0) return c.error("negative split size");
      total += v;
    }
    if (total != dim) return c.error("split sizes do not add up to " + std::to_string(dim));
    return *s;
  }
  if (c.node().has_attr("num_outputs")) {
    int64_t n = c.node().attr_int("num_outputs", 1);
    if (n <= 0) return c.error("num_outputs must be positive");
    int64_t part = (dim + n - 1) / n;
    std::vector<int64_t> sizes;
    for (int64_t left = dim; static_cast<int64_t>(sizes.size()) < n; left -= part)
      sizes.push_back(std::clamp<int64_t>(left, 0, part));
    return sizes;
  }
  auto n = static_cast<int64_t>(c.num_outputs());
  if (dim % n != 0)
    return c.error("cannot split " + std::to_string(dim) + " into " + std::to_string(n) +
                   " equal parts");
  return std::vector<int64_t>(n, dim / n);
}

Result<Outputs> split_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  auto rank = static_cast<int64_t>(x->dims.size());
  ASSIGN_OR_RETURN(int64_t axis, c.at(normalize_axis(c.node().attr_int("axis", 0), rank)));
  ASSIGN_OR_RETURN(auto sizes, split_sizes(c, x->dims[axis]));
  size_t es = dtype_size(x->dtype);
  int64_t outer = prod(x->dims, 0, axis);
  size_t inner = prod(x->dims, axis + 1, rank) * es;
  size_t row = x->dims[axis] * inner;
  Outputs outs;
  int64_t begin = 0;
  for (int64_t s : sizes) {
    Dims dims = x->dims;
    dims[axis] = s;
    Tensor t = make_tensor(x->dtype, dims);
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(t.raw.data() + o * s * inner, x->raw.data() + o * row + begin * inner, s * inner);
    begin += s;
    outs.push_back(std::move(t));
  }
  return outs;
}

Result<Outputs> transpose_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  auto rank = static_cast<int64_t>(x->dims.size());
  std::vector<int64_t> perm(rank);
  std::iota(perm.rbegin(), perm.rend(), 0);
  if (c.node().has_attr("perm")) perm = c.node().attr_ints("perm");
  if (static_cast<int64_t>(perm.size()) != rank) return c.error("perm length does not match rank");
  ASSIGN_OR_RETURN(perm, c.at(normalize_axes(perm, rank)));
  return Outputs{permute(*x, perm)};
}

/// DepthToSpace: [N, C, H, W] -> [N, C/(b*b), H*b, W*b]; DCR (default) or CRD channel order.
Result<Outputs> depth_to_space_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  int64_t b = c.node().attr_int("blocksize", 0);
  if (x->dims.size() != 4 || b <= 0 || x->dims[1] % (b * b) != 0)
    return c.error("needs a 4-D input whose channels divide by blocksize^2");
  int64_t n = x->dims[0], ch = x->dims[1], h = x->dims[2], w = x->dims[3];
  bool crd = c.node().attr_string("mode", "DCR") == "CRD";
  Tensor t = *x;
  if (crd) {
    t.dims = {n, ch / (b * b), b, b, h, w};
    t = permute(t, {0, 1, 4, 2, 5, 3});
  } else {
    t.dims = {n, b, b, ch / (b * b), h, w};
    t = permute(t, {0, 3, 4, 1, 5, 2});
  }
  t.dims = {n, ch / (b * b), h * b, w * b};
  return Outputs{std::move(t)};
}

/// SpaceToDepth: [N, C, H, W] -> [N, C*b*b, H/b, W/b].
Result<Outputs> space_to_depth_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  int64_t b = c.node().attr_int("blocksize", 0);
  if (x->dims.size() != 4 || b <= 0 || x->dims[2] % b != 0 || x->dims[3] % b != 0)
    return c.error("needs a 4-D input whose spatial dims divide by blocksize");
  int64_t n = x->dims[0], ch = x->dims[1], h = x->dims[2], w = x->dims[3];
  Tensor t = *x;
  t.dims = {n, ch, h / b, b, w / b, b};
  t = permute(t, {0, 3, 5, 1, 2, 4});
  t.dims = {n, ch * b * b, h / b, w / b};
  return Outputs{std::move(t)};
}

}  // namespace common::eval

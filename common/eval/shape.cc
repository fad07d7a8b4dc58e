// Shape and layout ops: they move element bytes and never look at values (any dtype works).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/eval/kernels.h"

namespace common::eval {
namespace {

/// out[i] = in[map[i]] element-wise on bytes.
Tensor gather_elements_bytes(const Tensor& in, Dims dims, const std::vector<int64_t>& map) {
  Tensor out = make_tensor(in.dtype, std::move(dims));
  size_t es = dtype_size(in.dtype);
  for (size_t i = 0; i < map.size(); ++i)
    std::memcpy(out.raw.data() + i * es, in.raw.data() + map[i] * es, es);
  return out;
}

Tensor reshaped(const Tensor& t, Dims dims) {
  Tensor out = t;
  out.dims = std::move(dims);
  return out;
}

Result<Outputs> identity_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  return Outputs{*x};
}

/// Reshape: 0 copies the input dim (unless allowzero), one -1 is inferred.
Result<Outputs> reshape_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(auto shape, ints_input_or_attr(c, 1, "shape"));
  if (!shape) return c.error("missing target shape");
  bool allow_zero = c.node().attr_int("allowzero", 0) != 0;
  Dims dims = *shape;
  int64_t infer_at = -1, known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && !allow_zero) {
      if (i >= x->dims.size())
        return c.error("shape has 0 at " + std::to_string(i) + " beyond rank");
      dims[i] = x->dims[i];
    }
    if (dims[i] == -1) {
      if (infer_at >= 0) return c.error("shape has more than one -1");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (dims[i] < 0) return c.error("invalid dim " + std::to_string(dims[i]) + " in shape");
    known *= dims[i];
  }
  if (infer_at >= 0) {
    if (known == 0 || x->numel() % known != 0)
      return c.error("cannot infer -1 reshaping " + dims_str(x->dims) + " to " + dims_str(*shape));
    dims[infer_at] = x->numel() / known;
  }
  if (num_elements(dims) != x->numel())
    return c.error("cannot reshape " + dims_str(x->dims) + " to " + dims_str(*shape));
  return Outputs{reshaped(*x, dims)};
}

Result<Outputs> flatten_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  auto rank = static_cast<int64_t>(x->dims.size());
  ASSIGN_OR_RETURN(int64_t axis, c.at(normalize_flatten_axis(c.node().attr_int("axis", 1), rank)));
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x->dims[i];
  int64_t inner = 1;
  for (int64_t i = axis; i < rank; ++i) inner *= x->dims[i];
  return Outputs{reshaped(*x, {outer, inner})};
}

/// Squeeze: axes attribute before opset 13, optional input from 13; none means every 1.
Result<Outputs> squeeze_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  auto rank = static_cast<int64_t>(x->dims.size());
  ASSIGN_OR_RETURN(auto axes_in, ints_input_or_attr(c, 1, "axes"));
  std::vector<bool> drop(rank, false);
  if (axes_in) {
    ASSIGN_OR_RETURN(auto axes, c.at(normalize_axes(*axes_in, rank)));
    for (int64_t a : axes) {
      if (x->dims[a] != 1)
        return c.error("cannot squeeze axis " + std::to_string(a) + " of size " +
                       std::to_string(x->dims[a]));
      drop[a] = true;
    }
  } else {
    for (int64_t a = 0; a < rank; ++a) drop[a] = x->dims[a] == 1;
  }
  Dims dims;
  for (int64_t a = 0; a < rank; ++a)
    if (!drop[a]) dims.push_back(x->dims[a]);
  return Outputs{reshaped(*x, dims)};
}

Result<Outputs> unsqueeze_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(auto axes_in, ints_input_or_attr(c, 1, "axes"));
  if (!axes_in) return c.error("missing axes");
  auto out_rank = static_cast<int64_t>(x->dims.size() + axes_in->size());
  ASSIGN_OR_RETURN(auto axes, c.at(normalize_axes(*axes_in, out_rank)));
  std::vector<bool> inserted(out_rank, false);
  for (int64_t a : axes) inserted[a] = true;
  Dims dims;
  size_t k = 0;
  for (int64_t a = 0; a < out_rank; ++a) dims.push_back(inserted[a] ? 1 : x->dims[k++]);
  return Outputs{reshaped(*x, dims)};
}

Result<Outputs> expand_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* s, c.need(1));
  Dims shape = ints_of(*s);
  auto dims = broadcast_shapes(x->dims, shape);
  if (!dims) return c.error("cannot expand " + dims_str(x->dims) + " to " + dims_str(shape));
  RETURN_IF_ERROR(check_size(c, *dims));
  return Outputs{gather_elements_bytes(*x, *dims, broadcast_map(x->dims, *dims))};
}

Result<Outputs> tile_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* r, c.need(1));
  auto reps = ints_of(*r);
  if (reps.size() != x->dims.size()) return c.error("repeats length does not match rank");
  Dims dims = x->dims;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (reps[k] < 0) return c.error("negative repeat");
    dims[k] *= reps[k];
  }
  RETURN_IF_ERROR(check_size(c, dims));
  std::vector<int64_t> map(std::max<int64_t>(num_elements(dims), 0));
  Dims st = strides_of(x->dims);
  std::vector<int64_t> idx(dims.size(), 0);
  for (size_t i = 0; i < map.size(); ++i, next_index(idx, dims)) {
    int64_t off = 0;
    for (size_t k = 0; k < dims.size(); ++k) off += (idx[k] % x->dims[k]) * st[k];
    map[i] = off;
  }
  return Outputs{gather_elements_bytes(*x, dims, map)};
}

/// Dropout in inference: Y = X, mask all true (bool from opset 10, X's type before).
Result<Outputs> dropout_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  const Tensor* training = c.in(2);
  bool train = training && training->numel() == 1 && scalar_int(*training, 0) != 0;
  double ratio = c.in(1) ? scalar_double(*c.in(1)) : c.node().attr_float("ratio", 0.5f);
  if (train && ratio != 0) return c.error("Dropout in training mode is random");
  Outputs outs{*x};
  if (c.num_outputs() < 2) return outs;
  Tensor mask = Tensor::from_int64({1}, {}, DType::kInt64);
  ASSIGN_OR_RETURN(mask, cast_tensor(c, mask, c.opset() < 10 ? x->dtype : DType::kBool));
  Tensor full = make_tensor(mask.dtype, x->dims);
  size_t es = dtype_size(mask.dtype);
  for (int64_t i = 0; i < full.numel(); ++i)
    std::memcpy(full.raw.data() + i * es, mask.raw.data(), es);
  outs.push_back(std::move(full));
  return outs;
}

}  // namespace

Result<Outputs> concat_kernel(const Ctx& c);
Result<Outputs> split_kernel(const Ctx& c);
Result<Outputs> transpose_kernel(const Ctx& c);
Result<Outputs> depth_to_space_kernel(const Ctx& c);
Result<Outputs> space_to_depth_kernel(const Ctx& c);

void register_shape(KernelRegistry& r) {
  r.add("Identity", {identity_kernel});
  r.add("Reshape", {reshape_kernel});
  r.add("Flatten", {flatten_kernel});
  r.add("Squeeze", {squeeze_kernel});
  r.add("Unsqueeze", {unsqueeze_kernel});
  r.add("Expand", {expand_kernel});
  r.add("Tile", {tile_kernel});
  r.add("Dropout", {dropout_kernel});
  r.add("Concat", {concat_kernel});
  r.add("Split", {split_kernel});
  r.add("Transpose", {transpose_kernel});
  r.add("DepthToSpace", {depth_to_space_kernel});
  r.add("SpaceToDepth", {space_to_depth_kernel});
}

}  // namespace common::eval

// Indexing ops: Slice, Gather, GatherElements, GatherND, Scatter*, OneHot, NonZero, Compress,
// Unique, ReverseSequence, Pad, CenterCropPad.
#include <algorithm>
#include <set>
#include <string>
#include <string_view>

#include "shapeonnx/rules/rules.h"
#include "shapeonnx/rules/util.h"

namespace shapeonnx {
namespace {

using common::Dims;
using common::DType;
using common::Result;
using common::Status;

// Number of elements selected along one dim of size `dim` by start:end:step (ONNX clamping).
int64_t slice_length(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return std::max<int64_t>(0, ceil_div(end - start, step));
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  return std::max<int64_t>(0, ceil_div(start - end, -step));
}

struct SliceArgs {
  std::vector<int64_t> starts, ends, axes, steps;
};

// Inputs starts, ends, axes, steps (opset >= 10) or attributes starts, ends, axes (opset < 10).
Result<SliceArgs> slice_args(const InferContext& ctx) {
  SliceArgs a;
  ASSIGN_OR_RETURN(auto starts, ints_from_input_or_attr(ctx, 1, "starts", "Slice starts"));
  ASSIGN_OR_RETURN(auto ends, ints_from_input_or_attr(ctx, 2, "ends", "Slice ends"));
  ASSIGN_OR_RETURN(auto axes, ints_from_input_or_attr(ctx, 3, "axes", "Slice axes"));
  ASSIGN_OR_RETURN(auto steps, ints_from_input_or_attr(ctx, 4, "", "Slice steps"));
  a.starts = starts.value_or(std::vector<int64_t>{});
  a.ends = ends.value_or(std::vector<int64_t>{});
  a.steps = steps.value_or(std::vector<int64_t>{});
  const size_t n = a.starts.size();
  if (axes) {
    a.axes = *std::move(axes);
  } else {
    for (size_t i = 0; i < n; ++i) a.axes.push_back(static_cast<int64_t>(i));
  }
  if (a.steps.empty()) a.steps.assign(n, 1);
  if (a.ends.size() != n || a.axes.size() != n || a.steps.size() != n) {
    return ctx.error("Slice starts, ends, axes and steps differ in length");
  }
  return a;
}

Status slice_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(SliceArgs a, slice_args(ctx));
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, normalize_axes(ctx, a.axes, ctx.rank(0)));
  Dims out = ctx.shape(0);
  for (size_t i = 0; i < axes.size(); ++i) {
    if (a.steps[i] == 0) return ctx.error("Slice step is 0");
    out[axes[i]] = slice_length(out[axes[i]], a.starts[i], a.ends[i], a.steps[i]);
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// Gather: data[:axis] + indices.shape + data[axis+1:].
Status gather_rule(InferContext& ctx) {
  const Dims& data = ctx.shape(0);
  ASSIGN_OR_RETURN(int64_t axis, ctx.axis(ctx.node().attr_int("axis", 0), ctx.rank(0)));
  Dims out(data.begin(), data.begin() + axis);
  const Dims& idx = ctx.shape(1);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// GatherElements: the shape of the indices (same rank as the data).
Status gather_elements_rule(InferContext& ctx) {
  if (ctx.rank(0) != ctx.rank(1)) return ctx.error("indices rank differs from data rank");
  RETURN_IF_ERROR(ctx.axis(ctx.node().attr_int("axis", 0), ctx.rank(0)));
  ctx.set_output(0, ctx.dtype(0), ctx.shape(1));
  return {};
}

// GatherND: indices.shape[:-1] + data.shape[batch_dims + indices.shape[-1]:].
Status gather_nd_rule(InferContext& ctx) {
  const Dims& data = ctx.shape(0);
  const Dims& idx = ctx.shape(1);
  const int64_t b = ctx.node().attr_int("batch_dims", 0);
  if (idx.empty()) return ctx.error("GatherND indices must have rank >= 1");
  const int64_t last = idx.back();
  if (b < 0 || b >= static_cast<int64_t>(idx.size()) ||
      b + last > static_cast<int64_t>(data.size())) {
    return ctx.error("GatherND indices do not fit the data rank");
  }
  Dims out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), data.begin() + b + last, data.end());
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// Scatter, ScatterElements: the data's shape; indices and updates match each other and the
// data's rank.
Status scatter_rule(InferContext& ctx) {
  if (ctx.num_inputs() < 3) return ctx.error("expects data, indices and updates");
  const Dims& data = ctx.shape(0);
  if (ctx.shape(1) != ctx.shape(2) || ctx.shape(1).size() != data.size()) {
    return ctx.error("indices and updates must have the same shape, of the data's rank");
  }
  return same_as_input(ctx);
}

// ScatterND: the data's shape; indices [..., k] with k <= rank(data) and updates of shape
// indices[:-1] + data[k:].
Status scatter_nd_rule(InferContext& ctx) {
  if (ctx.num_inputs() < 3) return ctx.error("expects data, indices and updates");
  const Dims& data = ctx.shape(0);
  const Dims& idx = ctx.shape(1);
  if (idx.empty() || idx.back() < 1 || idx.back() > static_cast<int64_t>(data.size())) {
    return ctx.error("indices must have rank >= 1 and a last dim between 1 and the data's rank");
  }
  Dims updates(idx.begin(), idx.end() - 1);
  updates.insert(updates.end(), data.begin() + idx.back(), data.end());
  if (ctx.shape(2) != updates)
    return ctx.error("updates do not have the shape indices[:-1] + data[k:]");
  return same_as_input(ctx);
}

// OneHot(indices, depth, values): indices' shape with `depth` inserted at axis; values' dtype.
Status one_hot_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(std::vector<double> depth, known_doubles(ctx, 1, "OneHot depth"));
  if (depth.size() != 1 || depth[0] < 1) return ctx.error("OneHot depth must be one value >= 1");
  const Dims& in = ctx.shape(0);
  ASSIGN_OR_RETURN(int64_t axis, ctx.axis(ctx.node().attr_int("axis", -1), ctx.rank(0) + 1));
  Dims out = in;
  out.insert(out.begin() + axis, static_cast<int64_t>(depth[0]));
  ctx.set_output(0, ctx.dtype(2), std::move(out));
  return {};
}

// NonZero: [rank, count of non-zeros]; data-dependent, so the input's value must be known.
Status non_zero_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(std::vector<double> v, known_doubles(ctx, 0, "NonZero input (data-dependent)"));
  const int64_t count = std::count_if(v.begin(), v.end(), [](double x) { return x != 0; });
  ctx.set_output(0, DType::kInt64, {ctx.rank(0), count});
  return {};
}

// Compress(input, condition): the selected count along axis (or of the flattened input).
Status compress_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(std::vector<int64_t> cond,
                   known_ints(ctx, 1, "Compress condition (data-dependent)"));
  const int64_t count = std::count_if(cond.begin(), cond.end(), [](int64_t x) { return x != 0; });
  if (!ctx.node().has_attr("axis")) {
    ctx.set_output(0, ctx.dtype(0), {count});
    return {};
  }
  ASSIGN_OR_RETURN(int64_t axis, ctx.axis(ctx.node().attr_int("axis", 0), ctx.rank(0)));
  Dims out = ctx.shape(0);
  out[axis] = count;
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// Number of distinct slices along `axis` (or distinct elements when axis < 0) of known values.
int64_t count_unique(const std::vector<double>& v, const Dims& dims, int64_t axis) {
  if (axis < 0) return static_cast<int64_t>(std::set<double>(v.begin(), v.end()).size());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= dims[i];
  for (size_t i = axis + 1; i < dims.size(); ++i) inner *= dims[i];
  const int64_t n = dims[axis];
  std::set<std::vector<double>> slices;
  for (int64_t k = 0; k < n; ++k) {
    std::vector<double> slice;
    for (int64_t o = 0; o < outer; ++o) {
      const auto begin = v.begin() + (o * n + k) * inner;
      slice.insert(slice.end(), begin, begin + inner);
    }
    slices.insert(std::move(slice));
  }
  return static_cast<int64_t>(slices.size());
}

// Unique(X): data-dependent, so X's value must be known. Y has k distinct elements (flattened) or
// k distinct slices along `axis`; indices and counts are [k], inverse_indices one per element
// (or slice), all int64.
Status unique_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(std::vector<double> v, known_doubles(ctx, 0, "Unique input (data-dependent)"));
  const Dims& in = ctx.shape(0);
  int64_t axis = -1;
  if (ctx.node().has_attr("axis")) {
    ASSIGN_OR_RETURN(axis, ctx.axis(ctx.node().attr_int("axis", 0), ctx.rank(0)));
  }
  const int64_t k = count_unique(v, in, axis);
  Dims y = {k};
  if (axis >= 0) {
    y = in;
    y[axis] = k;
  }
  const int64_t per = axis >= 0 ? in[axis] : static_cast<int64_t>(v.size());
  ctx.set_output(0, ctx.dtype(0), std::move(y));
  ctx.set_output(1, DType::kInt64, {k});
  ctx.set_output(2, DType::kInt64, {per});
  ctx.set_output(3, DType::kInt64, {k});
  return {};
}

// Pad: out[axis] = in[axis] + pad_begin + pad_end (pads from the input since opset 11,
// `pads`/`paddings` attribute before; optional axes input since opset 18).
Status pad_rule(InferContext& ctx) {
  const Dims& in = ctx.shape(0);
  const int64_t r = ctx.rank(0);
  const std::string_view attr = ctx.node().has_attr("pads") ? "pads" : "paddings";  // opset 1
  ASSIGN_OR_RETURN(auto listed, ints_from_input_or_attr(ctx, 1, attr, "Pad pads"));
  std::vector<int64_t> pads = listed.value_or(std::vector<int64_t>{});
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) {
    ASSIGN_OR_RETURN(std::vector<int64_t> listed, known_ints(ctx, 3, "Pad axes"));
    ASSIGN_OR_RETURN(axes, normalize_axes(ctx, listed, r));
  } else {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  if (pads.size() != 2 * axes.size()) return ctx.error("Pad pads length is not twice the axes");
  Dims out = in;
  for (size_t k = 0; k < axes.size(); ++k) {
    out[axes[k]] += pads[k] + pads[k + axes.size()];
    if (out[axes[k]] < 0) return ctx.error("Pad makes a negative dim");
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// CenterCropPad: out[axes[k]] = shape[k] (all axes when `axes` is absent).
Status center_crop_pad_rule(InferContext& ctx) {
  const int64_t r = ctx.rank(0);
  ASSIGN_OR_RETURN(std::vector<int64_t> lengths, known_ints(ctx, 1, "CenterCropPad shape"));
  std::vector<int64_t> axes = ctx.node().attr_ints("axes");
  if (axes.empty()) {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  ASSIGN_OR_RETURN(axes, normalize_axes(ctx, axes, r));
  if (lengths.size() != axes.size()) return ctx.error("shape length does not match the axes");
  Dims out = ctx.shape(0);
  for (size_t k = 0; k < axes.size(); ++k) {
    if (lengths[k] < 0) return ctx.error("negative length in shape");
    out[axes[k]] = lengths[k];
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
  return {};
}

// ReverseSequence: the input's shape and dtype.
Status reverse_sequence_rule(InferContext& ctx) { return same_as_input(ctx); }

}  // namespace

void register_index_rules(ShapeRegistry& table) {
  table.add("Slice", &slice_rule);
  table.add("Gather", &gather_rule);
  table.add("GatherElements", &gather_elements_rule);
  table.add("GatherND", &gather_nd_rule);
  table.add("Scatter", &scatter_rule);
  table.add("ScatterElements", &scatter_rule);
  table.add("ScatterND", &scatter_nd_rule);
  table.add("OneHot", &one_hot_rule);
  table.add("NonZero", &non_zero_rule);
  table.add("Compress", &compress_rule);
  table.add("Pad", &pad_rule);
  table.add("CenterCropPad", &center_crop_pad_rule);
  table.add("Unique", &unique_rule);
  table.add("ReverseSequence", &reverse_sequence_rule);
}

}  // namespace shapeonnx

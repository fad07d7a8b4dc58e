// Indexing ops: Slice, Gather, GatherElements, GatherND, Scatter*, Split, OneHot, NonZero,
// Compress.
#include <algorithm>
#include <set>
#include <string>

#include "shapeonnx/rules.h"
#include "shapeonnx/rules_util.h"

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

// Split sizes: from the `split` input (opset >= 13) or attribute, else `num_outputs` (opset 18,
// the last chunk may be smaller), else equal parts, one per output.
Result<std::vector<int64_t>> split_sizes(const InferContext& ctx, int64_t dim) {
  ASSIGN_OR_RETURN(auto listed, ints_from_input_or_attr(ctx, 1, "split", "Split sizes"));
  const int64_t n = static_cast<int64_t>(ctx.num_outputs());
  if (listed && !listed->empty()) {
    int64_t sum = 0;
    for (int64_t s : *listed) sum += s;
    if (static_cast<int64_t>(listed->size()) != n || sum != dim) {
      return ctx.error("Split sizes do not match the outputs or the dim " + std::to_string(dim));
    }
    return *listed;
  }
  if (ctx.node().has_attr("num_outputs")) {
    if (ctx.node().attr_int("num_outputs", 0) != n) {
      return ctx.error("Split num_outputs differs from the number of outputs");
    }
    const int64_t chunk = ceil_div(dim, n);
    std::vector<int64_t> sizes(n, chunk);
    sizes.back() = dim - chunk * (n - 1);
    if (sizes.back() < 0)
      return ctx.error("Split of " + std::to_string(dim) + " into " + std::to_string(n) +
                       " leaves an empty tail");
    return sizes;
  }
  if (n == 0 || dim % n != 0) {
    return ctx.error("dim " + std::to_string(dim) + " does not split into " + std::to_string(n) +
                     " equal parts");
  }
  return std::vector<int64_t>(n, dim / n);
}

Status split_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, ctx.axis(ctx.node().attr_int("axis", 0), ctx.rank(0)));
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes, split_sizes(ctx, ctx.shape(0)[axis]));
  for (size_t i = 0; i < sizes.size(); ++i) {
    Dims out = ctx.shape(0);
    out[axis] = sizes[i];
    ctx.set_output(i, ctx.dtype(0), std::move(out));
  }
  return {};
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

// TfIdfVectorizer(X [C] or [B, C]) -> float [max(ngram_indexes) + 1] or [B, that].
Status tfidf_rule(InferContext& ctx) {
  const std::vector<int64_t> indexes = ctx.node().attr_ints("ngram_indexes", {});
  if (indexes.empty()) return ctx.error("TfIdfVectorizer needs ngram_indexes");
  if (ctx.rank(0) < 1 || ctx.rank(0) > 2)
    return ctx.error("TfIdfVectorizer input must be 1-D or 2-D");
  for (int64_t i : indexes) {
    if (i < 0 || i >= (int64_t{1} << 24)) return ctx.error("ngram_indexes out of range");
  }
  const int64_t size = *std::max_element(indexes.begin(), indexes.end()) + 1;
  Dims out{size};
  if (ctx.rank(0) == 2) out.insert(out.begin(), ctx.shape(0)[0]);
  ctx.set_output(0, DType::kFloat, std::move(out));
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

}  // namespace

void register_index_rules(ShapeRegistry& table) {
  table.add("Slice", &slice_rule);
  table.add("Gather", &gather_rule);
  table.add("GatherElements", &gather_elements_rule);
  table.add("GatherND", &gather_nd_rule);
  table.add("Scatter", &scatter_rule);
  table.add("ScatterElements", &scatter_rule);
  table.add("ScatterND", &scatter_nd_rule);
  table.add("Split", &split_rule);
  table.add("OneHot", &one_hot_rule);
  table.add("NonZero", &non_zero_rule);
  table.add("Compress", &compress_rule);
  table.add("Unique", &unique_rule);
  table.add("TfIdfVectorizer", &tfidf_rule);
}

}  // namespace shapeonnx

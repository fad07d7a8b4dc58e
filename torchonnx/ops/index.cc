// Indexing: Slice (constant or data-dependent starts), Gather, GatherElements, GatherND,
// Compress, ReverseSequence; ScatterND and ScatterElements in index_scatter.cc, Pad and
// CenterCropPad in index_pad.cc, OneHot in index_onehot.cc. Data-dependent indices become
// tensor indexing and scatter, never Python control flow.
#include <algorithm>
#include <string>

#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::Dims;
using common::DType;
using common::Status;
using common::Tensor;

// "x[:, :, " prefix pieces for indexing dim `axis` with `what`.
std::string index_at(const std::string& x, int64_t axis, const std::string& what) {
  std::vector<std::string> parts(axis, ":");
  parts.push_back(what);
  return x + "[" + join(parts) + "]";
}

// `x[:, :, what]`: dim `axis` indexed with `what`.
py::Expr index_at(const py::Expr& x, int64_t axis, py::Expr what) {
  std::vector<py::Expr> parts(axis, py::lit(":"));
  parts.push_back(std::move(what));
  return x.index(std::move(parts));
}

struct SliceSpec {
  std::vector<int64_t> starts, ends, axes, steps;
  bool constant = true;
};

common::Result<SliceSpec> slice_spec(Context& ctx) {
  SliceSpec s;
  // Attributes starts, ends, axes before opset 10; inputs 1-4 (steps new) from it on.
  s.constant = !ctx.has_input(1) || (ctx.constant(1) && ctx.constant(2));
  if (s.constant) {
    ASSIGN_OR_RETURN(s.starts, ints_from(ctx, 1, "starts"));
    ASSIGN_OR_RETURN(s.ends, ints_from(ctx, 2, "ends"));
  } else {
    s.starts.assign(ctx.shape(1).empty() ? 1 : ctx.shape(1)[0], 0);
  }
  ASSIGN_OR_RETURN(s.axes, ints_from(ctx, 3, "axes"));
  ASSIGN_OR_RETURN(s.steps, ints_from(ctx, 4, ""));
  if (s.axes.empty()) {
    for (size_t i = 0; i < s.starts.size(); ++i) s.axes.push_back(static_cast<int64_t>(i));
  }
  if (s.steps.empty()) s.steps.assign(s.starts.size(), 1);
  ASSIGN_OR_RETURN(s.axes, axes_at(ctx, s.axes, ctx.rank(0)));
  if (s.axes.size() != s.starts.size() || s.steps.size() != s.starts.size() ||
      std::count(s.steps.begin(), s.steps.end(), 0)) {
    return ctx.error("inconsistent starts, axes or steps");
  }
  return s;
}

// A value marking elements that ONNX would not have produced (an out-of-range Slice start gives
// ONNX an empty tensor); ScatterND skips index tuples holding it.
std::string poison(common::DType dtype) {
  return dtype == DType::kInt64 ? "-(2 ** 62)" : "-(2 ** 30)";
}

// A constant int64 vector holding 0, 1, 2, ...: indexing it at a valid index gives the index.
bool is_iota(const Tensor* t) {
  if (t == nullptr || t->dtype != DType::kInt64 || t->dims.size() != 1) return false;
  const std::vector<int64_t> v = t->to_int64();
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// Data-dependent starts: x indexed along each axis with start + arange(len) * step, where len is
// the (static) output extent. Indices past the axis are clamped; for integer data (index
// arithmetic, as in cctsdb_yolo) such elements hold the poison value instead. One start of a
// one-element slice is used as it is (no offsets to add), and a slice of the constant 0, 1, 2,
// ... (cctsdb_yolo's position tables) is the index itself where it is valid.
Status dynamic_slice(Context& ctx, const SliceSpec& s) {
  if (ctx.out_shape().size() != ctx.shape(0).size() || s.axes.size() != s.steps.size()) {
    return ctx.error("data-dependent Slice needs a static output shape and constant axes/steps");
  }
  std::string expr = ctx.in(0);
  const std::string starts = ctx.in(1);
  const bool mark = ctx.dtype(0) == DType::kInt64 || ctx.dtype(0) == DType::kInt32;
  const bool iota = mark && is_iota(ctx.constant(0));
  const int64_t rank = ctx.rank(0);
  for (size_t j = 0; j < s.axes.size(); ++j) {
    const int64_t axis = s.axes[j], step = s.steps[j];
    const int64_t dim = ctx.shape(0)[axis], len = ctx.out_shape()[axis];
    if (step < 0) return ctx.error("data-dependent Slice with negative steps");
    const bool whole = s.axes.size() == 1 && ctx.shape(1) == Dims{1} && len == 1;
    const std::string st = as_long(ctx, 1, whole ? starts : starts + "[" + std::to_string(j) + "]");
    const std::string d = std::to_string(dim);
    std::string idx = st + " + (" + st + " < 0) * " + d;
    if (!whole) {
      std::vector<int64_t> offsets;
      for (int64_t i = 0; i < len; ++i) offsets.push_back(i * step);
      idx += " + " + ctx.buffer(Tensor::from_int64(offsets, {len}), "offsets");
    }
    idx = ctx.local(py::Expr::raw(idx, long_uses(ctx, 1)), "index");
    const std::string gathered =
        index_at(expr, axis, idx + ".clamp(0, " + std::to_string(dim - 1) + ")");
    if (!mark) {
      expr = gathered;
      continue;
    }
    std::vector<int64_t> vshape{len};
    for (int64_t k = axis + 1; k < rank; ++k) vshape.push_back(1);
    const std::string valid = "(" + idx + " >= 0) & (" + idx + " < " + d + ")";
    expr = "torch.where(" +
           (vshape.size() == 1 ? valid : "(" + valid + ").reshape" + py_tuple(vshape)) + ", " +
           (iota ? idx : gathered) + ", " + poison(ctx.dtype(0)) + ")";
  }
  const bool batched = ctx.batched(0) && std::find(s.axes.begin(), s.axes.end(), 0) == s.axes.end();
  return ctx.emit(py::Expr::raw(expr, mark ? py::Namespaces{py::Ns::kTorch} : py::Namespaces{}),
                  "slice", batched);
}

Status slice(Context& ctx) {
  ASSIGN_OR_RETURN(SliceSpec s, slice_spec(ctx));
  if (!s.constant) return dynamic_slice(ctx, s);
  const Dims& in = ctx.shape(0);
  std::vector<std::string> parts(in.size(), ":");
  std::vector<int64_t> flips;
  int batch_axis = ctx.batch_axis(0);  // kept unless the slice cuts or flips that dim
  for (size_t j = 0; j < s.axes.size(); ++j) {
    const int64_t axis = s.axes[j], dim = in[axis], step = s.steps[j];
    const int64_t len = ctx.out_shape()[axis];
    int64_t start = s.starts[j] < 0 ? s.starts[j] + dim : s.starts[j];
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      parts[axis] = slice_text(start, start + (len - 1) * step + 1, step, dim);
    } else {
      // Negative steps: flip the axis and slice forward from the mirrored start.
      start = std::clamp<int64_t>(start, 0, dim - 1);
      const int64_t mirrored = dim - 1 - start;
      flips.push_back(axis);
      parts[axis] = slice_text(mirrored, mirrored + (len - 1) * -step + 1, -step, dim);
    }
    if (len == 0) parts[axis] = "0:0";
    if (axis == batch_axis && (parts[axis] != ":" || step < 0)) batch_axis = -1;
  }
  if (index_suffix(parts).empty() && flips.empty()) {
    ctx.alias(0, Operand{ctx.in(0), batch_axis == 0, batch_axis > 0 ? batch_axis : -1});
    if (ctx.has_view(0)) ctx.set_view(0, ctx.input_view(0));
    return {};
  }
  if (!flips.empty()) {
    py::Expr flipped =
        py::Expr::name(ctx.in(0)).method("flip", {py::lit(int_or_tuple(flips, flips.size() == 1))});
    std::vector<py::Expr> index;
    index.reserve(parts.size());
    for (const std::string& part : parts) index.push_back(py::lit(part));
    return ctx.emit_at(subscript(flipped, std::move(index)), "slice", batch_axis);
  }
  // Forward steps only: a view of the input, and so of whatever the input is a view of.
  View view = ctx.input_view(0);
  for (size_t j = 0; j < s.axes.size(); ++j) {
    const int64_t axis = s.axes[j], dim = in[axis], len = ctx.out_shape()[axis];
    const int64_t start =
        std::clamp<int64_t>(s.starts[j] < 0 ? s.starts[j] + dim : s.starts[j], 0, dim);
    view_slice(view, axis, len == 0 ? 0 : start, s.steps[j], len);
  }
  RETURN_IF_ERROR(ctx.emit_at(view_of(view), "slice", batch_axis));
  ctx.set_view(0, std::move(view));
  return {};
}

Status gather(Context& ctx) {
  ASSIGN_OR_RETURN(const int64_t axis, axis_at(ctx, ctx.node().attr_int("axis", 0), ctx.rank(0)));
  const int64_t dim = ctx.shape(0)[axis];
  const py::Expr x = py::Expr::name(ctx.in(0));
  const bool batched =
      (ctx.batched(0) && axis != 0) || (axis == 0 && ctx.batched(1) && !ctx.batched(0));
  const Tensor* idx = ctx.constant(1);
  if (!idx) {
    py::Expr computed = as_long(ctx, 1, py::Expr::name(ctx.in(1)));
    return ctx.emit(index_at(x, axis, computed), "gather", batched);
  }
  Tensor wrapped = wrapped_indices(*idx, dim);
  const std::vector<int64_t> v = wrapped.to_int64();
  // Constant indices keep the data's batch in any other dim; the index dims replace `axis`.
  const int in_axis = ctx.batch_axis(0);
  const int rank_change = static_cast<int>(idx->dims.size()) - 1;
  const int out_axis = in_axis < 0 || in_axis == axis ? -1
                       : in_axis < axis               ? in_axis
                                                      : in_axis + rank_change;
  bool contiguous = idx->dims.size() == 1 && !v.empty();
  for (size_t i = 1; contiguous && i < v.size(); ++i) contiguous = v[i] == v[i - 1] + 1;
  if (idx->dims.empty() || contiguous) {
    // One element, or a range: a view of the input (and of what the input is a view of).
    View view = ctx.input_view(0);
    if (idx->dims.empty()) {
      view_select(view, axis, v[0]);
    } else {
      view_slice(view, axis, v[0], 1, static_cast<int64_t>(v.size()));
    }
    RETURN_IF_ERROR(ctx.emit_at(view_of(view), "gather", out_axis));
    ctx.set_view(0, std::move(view));
    return {};
  }
  py::Expr indices = py::Expr::name(ctx.buffer(std::move(wrapped), "indices"));
  return ctx.emit_at(index_at(x, axis, indices), "gather", out_axis);
}

Status gather_elements(Context& ctx) {
  ASSIGN_OR_RETURN(const int64_t axis, axis_at(ctx, ctx.node().attr_int("axis", 0), ctx.rank(0)));
  const int64_t dim = ctx.shape(0)[axis];
  const Tensor* idx = ctx.constant(1);
  py::Expr index = idx ? py::Expr::name(ctx.buffer(wrapped_indices(*idx, dim), "indices"))
                       : py::call(py::torch("remainder"),
                                  {as_long(ctx, 1, py::Expr::name(ctx.in(1))), py::lit(dim)});
  py::Expr x = py::Expr::name(ctx.in(0));
  return ctx.emit(py::call(py::torch("gather"), {x, py::lit(axis), index}), "gather",
                  ctx.batched(0) && ctx.batched(1) && axis != 0);
}

// GatherND: data[idx[..., 0], ..., idx[..., k-1]]; each of the first batch_dims dims is indexed
// by an arange broadcast along the index tuples' dims.
Status gather_nd(Context& ctx) {
  const int64_t batch_dims = ctx.node().attr_int("batch_dims", 0);
  const Dims& is = ctx.shape(1);
  const int64_t k = is.empty() ? 0 : is.back();
  if (batch_dims < 0 || batch_dims >= ctx.rank(1) || batch_dims + k > ctx.rank(0)) {
    return ctx.error("batch_dims out of range");
  }
  const py::Expr idx = as_long(ctx, 1, py::Expr::name(ctx.in(1)));
  const py::Expr x = py::Expr::name(ctx.in(0));
  std::vector<py::Expr> parts;
  // A batch dim of any size that both inputs share stays one (batch_dims >= 1).
  const bool batched = batch_dims > 0 && ctx.batched(0) && ctx.batched(1);
  for (int64_t j = 0; j < batch_dims; ++j) {
    std::vector<int64_t> shape(is.size() - 1, 1);
    shape[j] = j == 0 && batched ? -1 : is[j];
    const py::Expr size = j == 0 && batched ? x.attr("shape")[py::lit(0)] : py::lit(is[j]);
    py::Expr arange = py::call(py::torch("arange"), {size}, {{"device", x.attr("device")}});
    if (shape.size() > 1) arange = arange.method("reshape", py::ints(shape));
    parts.push_back(arange);
  }
  for (int64_t j = 0; j < k; ++j) parts.push_back(idx.index({py::lit("..."), py::lit(j)}));
  return ctx.emit(x.index(std::move(parts)), "gather", batched);
}

// Compress with a constant condition: the selected positions along the axis (or of the flattened
// input) are known, so it is a Gather. A condition computed at run time would make the output
// shape depend on the data.
Status compress(Context& ctx) {
  const Tensor* cond = ctx.constant(1);
  if (!cond) return ctx.error("the condition must be a constant (the output shape depends on it)");
  const bool has_axis = ctx.node().has_attr("axis");
  int64_t axis = 0;
  if (has_axis) {
    ASSIGN_OR_RETURN(axis, axis_at(ctx, ctx.node().attr_int("axis", 0), ctx.rank(0)));
  }
  std::vector<int64_t> picked;
  const std::vector<double> flags = cond->to_double();
  for (size_t i = 0; i < flags.size(); ++i) {
    if (flags[i] != 0) picked.push_back(static_cast<int64_t>(i));
  }
  const py::Expr in = py::Expr::name(ctx.in(0));
  const py::Expr x = has_axis ? in : in.method("flatten");
  const int64_t n = static_cast<int64_t>(picked.size());
  const py::Expr idx = py::Expr::name(ctx.buffer(Tensor::from_int64(picked, {n}), "indices"));
  return ctx.emit(index_at(x, axis, idx), "compress", has_axis && ctx.batched(0) && axis != 0);
}

// ReverseSequence: a gather along the time axis with index lens[b] - 1 - t for the first
// lens[b] steps of batch entry b and t after them.
Status reverse_sequence(Context& ctx) {
  const common::Node& node = ctx.node();
  const int64_t batch_axis = node.attr_int("batch_axis", 1);
  const int64_t time_axis = node.attr_int("time_axis", 0);
  const bool axes_ok = (batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0);
  if (ctx.rank(0) < 2 || !axes_ok) {
    return ctx.error("batch_axis and time_axis must be 0 and 1 on an input of rank >= 2");
  }
  const int64_t steps = ctx.shape(0)[time_axis];
  std::vector<int64_t> step_values(steps);
  for (int64_t t = 0; t < steps; ++t) step_values[t] = t;
  // Steps along the time axis, lens along the batch axis: they broadcast to [time, batch] or
  // [batch, time].
  const common::Dims step_dims = time_axis == 0 ? common::Dims{steps, 1} : common::Dims{steps};
  const py::Expr t =
      py::Expr::name(ctx.buffer(common::Tensor::from_int64(step_values, step_dims), "steps"));
  py::Expr lens;
  if (const common::Tensor* c = ctx.constant(1)) {
    const int64_t n = c->numel();
    lens = py::Expr::name(
        ctx.buffer(common::Tensor::from_int64(
                       c->to_int64(), batch_axis == 0 ? common::Dims{n, 1} : common::Dims{n}),
                   "lengths"));
  } else {
    lens = py::Expr::name(ctx.in(1));
    if (ctx.dtype(1) != DType::kInt64) lens = lens.method("long");
    if (batch_axis == 0) lens = lens.method("unsqueeze", {py::lit(1)});
  }
  py::Expr index = py::call(
      py::torch("where"),
      {py::binary("<", t, lens), py::binary("-", py::binary("-", lens, py::lit(1)), t), t});
  const py::Expr x = py::Expr::name(ctx.in(0));
  if (ctx.rank(0) > 2) {  // unit dims for the trailing axes, expanded to x's shape
    std::vector<py::Expr> parts{py::lit(":"), py::lit(":")};
    parts.resize(ctx.rank(0), py::lit("None"));
    index = index.index(std::move(parts)).method("expand_as", {x});
  }
  return ctx.emit(py::call(py::torch("gather"), {x, py::lit(time_axis), index}), "reversed",
                  ctx.batched(0) && batch_axis == 0);
}

}  // namespace

void register_index_pad(HandlerRegistry& t);      // Pad, CenterCropPad (index_pad.cc)
void register_index_onehot(HandlerRegistry& t);   // OneHot (index_onehot.cc)
void register_index_scatter(HandlerRegistry& t);  // ScatterND, ScatterElements, Scatter

void register_index(HandlerRegistry& t) {
  t.add("Slice", slice);
  t.add("Gather", gather);
  t.add("GatherElements", gather_elements);
  t.add("GatherND", gather_nd);
  t.add("Compress", compress);
  t.add("ReverseSequence", reverse_sequence);
  register_index_pad(t);
  register_index_onehot(t);
  register_index_scatter(t);
}

}  // namespace torchonnx

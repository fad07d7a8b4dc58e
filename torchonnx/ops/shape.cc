// Layout ops: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Expand, Tile,
// DepthToSpace, SpaceToDepth. Output shapes come from shape inference; a batched dim 0 is
// written as -1 so that any batch size works.
#include <algorithm>
#include <string>

#include "common/op_params.h"
#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::Dims;
using common::Status;

int64_t product(Dims::const_iterator begin, Dims::const_iterator end) {
  int64_t p = 1;
  for (auto it = begin; it != end; ++it) p *= *it;
  return p;
}

// A reshape of a batched input keeps the batch when dim 0 is unchanged and the per-sample
// element count is the same.
bool keeps_batch(const Context& ctx) {
  const Dims& in = ctx.shape(0);
  const Dims& out = ctx.out_shape();
  return ctx.batched(0) && !out.empty() && out[0] == in[0] &&
         product(in.begin() + 1, in.end()) == product(out.begin() + 1, out.end());
}

// The output's batch dim: where the probe at twice the batch size finds it (a batch moved out of
// dim 0 or merged with another dim), else dim 0 when the reshape keeps it there; -1 gives it up.
int reshaped_batch_axis(const Context& ctx) {
  const int in_axis = ctx.batch_axis(0);
  if (in_axis < 0) return -1;
  const int probed = ctx.probed_axis();
  if (probed >= 0) return probed;
  return in_axis == 0 && keeps_batch(ctx) ? 0 : -1;
}

// `dims` as call arguments, -1 for dim `axis` (none when negative).
std::vector<py::Expr> dims_at(Dims dims, int axis) {
  if (axis >= 0 && axis < static_cast<int>(dims.size())) dims[axis] = -1;
  return py::ints(dims);
}

// `<x>.shape[0]`, the batch size of a batched input.
py::Expr batch_size(const std::string& x) { return py::Expr::name(x).attr("shape")[py::lit(0)]; }

Status reshape_to_output(Context& ctx, std::string_view hint) {
  const Dims& out = ctx.out_shape();
  const int axis = reshaped_batch_axis(ctx);
  if (out == ctx.shape(0) && axis == ctx.batch_axis(0)) {
    ctx.alias(0, ctx.operand(0));
    return {};
  }
  std::vector<py::Expr> args = out.empty() ? std::vector{py::tuple({})} : dims_at(out, axis);
  return ctx.emit_at(py::Expr::name(ctx.in(0)).method("reshape", std::move(args)), hint, axis);
}

Status reshape(Context& ctx) { return reshape_to_output(ctx, "reshape"); }

Status flatten(Context& ctx) {
  const int64_t rank = ctx.rank(0);
  auto normalized = common::normalize_flatten_axis(ctx.node().attr_int("axis", 1), rank);
  if (!normalized.ok()) return ctx.error(normalized.error().message);
  if (*normalized == 1 && rank >= 2) {
    if (rank == 2) {
      ctx.alias(0, ctx.operand(0));
      return {};
    }
    if (ctx.batch_axis(0) <= 0)
      return ctx.emit(py::Expr::name(ctx.in(0)).method("flatten", {py::lit(1)}), "flatten",
                      ctx.batched(0));
  }
  return reshape_to_output(ctx, "flatten");
}

// The one axis an Unsqueeze inserts, normalized to its output rank; -1 if not exactly one.
int64_t inserted_axis(const common::Graph& g, const common::Node& u, int64_t out_rank) {
  const common::Tensor* t = u.has_input(1) ? g.constant(u.inputs[1]) : nullptr;
  const auto listed = common::ints_input_or_attr(u, 1, t, "axes", "axes");
  if (!listed.ok() || !listed->has_value()) return -1;
  const std::vector<int64_t>& axes = **listed;
  if (axes.size() != 1) return -1;
  const common::Result<int64_t> axis = common::normalize_axis(axes[0], out_rank);
  return axis.ok() ? *axis : -1;
}

// Concat of Unsqueezes that each insert the concat's axis, are read by nothing else and take
// inputs of one shape: torch.stack of those inputs (PyTorch exports torch.stack this way, and
// unrolled Scan/Loop outputs are built this way).
bool is_stack(const common::Graph& g, const common::Node& concat) {
  if (concat.op_type != "Concat" || !concat.domain.empty() || concat.inputs.size() < 2)
    return false;
  const common::Value* out = g.find(concat.outputs[0]);
  if (!out || !out->is_static()) return false;
  const int64_t rank = static_cast<int64_t>(out->shape->size());
  const common::Result<int64_t> normalized =
      common::normalize_axis(concat.attr_int("axis", 0), rank);
  if (!normalized.ok()) return false;
  const int64_t axis = *normalized;
  const Dims* first = nullptr;
  for (size_t i = 0; i < concat.inputs.size(); ++i) {
    const std::string& in = concat.inputs[i];
    if (in.empty() || std::count(concat.inputs.begin(), concat.inputs.end(), in) != 1) return false;
    const common::Value* v = g.find(in);
    // A value with known content is read as a buffer of that content, not through the alias.
    if (!v || v->producer < 0 || v->consumers.size() != 1 || g.constant(in) ||
        std::find(g.outputs.begin(), g.outputs.end(), in) != g.outputs.end()) {
      return false;
    }
    const common::Node& u = g.nodes[v->producer];
    if (u.op_type != "Unsqueeze" || !u.domain.empty() || inserted_axis(g, u, rank) != axis) {
      return false;
    }
    const common::Value* x = g.find(u.inputs[0]);
    if (!x || !x->is_static() || (first && *x->shape != *first)) return false;
    first = &*x->shape;
  }
  return true;
}

Status squeeze_like(Context& ctx) {
  const Dims& in = ctx.shape(0);
  const Dims& out = ctx.out_shape();
  const bool unsqueeze = ctx.node().op_type == "Unsqueeze";
  if (const common::Node* c = ctx.sole_consumer(); unsqueeze && c && is_stack(ctx.graph(), *c)) {
    ctx.alias(0, Operand{ctx.in(0), ctx.batched(0)});  // the Concat stacks the inputs themselves
    return {};
  }
  // One axis at a time reads best; the axis is where the shapes first differ.
  if (out.size() + 1 == in.size() || in.size() + 1 == out.size()) {
    const Dims& longer = unsqueeze ? out : in;
    const Dims& shorter = unsqueeze ? in : out;
    size_t axis = 0;
    while (axis < shorter.size() && shorter[axis] == longer[axis]) ++axis;
    // Size-1 dims make that ambiguous (a batch of 1 among them): the node's own axis decides.
    bool present = false;
    auto axes = ints_from(ctx, 1, "axes", &present);
    if (axes.ok() && axes->size() == 1) {
      auto a = common::normalize_axis((*axes)[0], static_cast<int64_t>(longer.size()));
      if (a.ok()) axis = static_cast<size_t>(*a);
    }
    const int in_axis = ctx.batch_axis(0), at = static_cast<int>(axis);
    const int batch_axis = in_axis < 0 || (!unsqueeze && in_axis == at) ? -1
                           : in_axis < at                               ? in_axis
                                          : in_axis + (unsqueeze ? 1 : -1);
    const std::string fn = unsqueeze ? "unsqueeze" : "squeeze";
    return ctx.emit_at(py::Expr::name(ctx.in(0)).method(fn, {py::lit(static_cast<int64_t>(axis))}),
                       fn, batch_axis);
  }
  return reshape_to_output(ctx, unsqueeze ? "unsqueeze" : "squeeze");
}

Status transpose(Context& ctx) {
  const int64_t rank = ctx.rank(0);
  std::vector<int64_t> perm = ctx.node().attr_ints("perm");
  if (perm.empty()) {
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  ASSIGN_OR_RETURN(perm, axes_at(ctx, perm, rank));
  bool identity = true;
  for (size_t d = 0; d < perm.size(); ++d) identity = identity && perm[d] == int64_t(d);
  if (identity) {
    ctx.alias(0, ctx.operand(0));
    return {};
  }
  // The batch dim moves with its dim.
  const int in_axis = ctx.batch_axis(0);
  int axis = -1;
  for (size_t d = 0; d < perm.size() && in_axis >= 0; ++d) {
    if (perm[d] == in_axis) axis = static_cast<int>(d);
  }
  return ctx.emit_at(py::Expr::name(ctx.in(0)).method("permute", py::ints(perm)), "permute", axis);
}

// `x.expand(<batch_ref>.shape[0], -1, ...)` to `rank` dims.
py::Expr expanded(const py::Expr& x, const std::string& batch_ref, int64_t rank) {
  std::vector<py::Expr> dims{batch_size(batch_ref)};
  for (int64_t d = 1; d < rank; ++d) dims.push_back(py::lit(-1));
  return x.method("expand", std::move(dims));
}

// Inputs that are not batched but have size 1 in dim 0 are expanded to the batch.
// Inputs are the Unsqueezes' inputs (aliased); mixed batching falls back to unsqueeze + cat.
Status stack(Context& ctx, int64_t axis) {
  bool all = true, none = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    all = all && ctx.batched(i);
    none = none && !ctx.batched(i);
  }
  std::vector<py::Expr> parts;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) parts.push_back(py::Expr::name(ctx.in(i)));
  const py::Expr ax = py::lit(axis);
  if (all || none) {
    return ctx.emit(py::call(py::torch("stack"), {py::list(std::move(parts)), ax}), "stack",
                    all && axis != 0);
  }
  std::string batch_ref;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.batched(i)) batch_ref = ctx.in(i);
  }
  const int64_t rank = ctx.out_shape().size();
  for (size_t i = 0; i < parts.size(); ++i) {
    parts[i] = parts[i].method("unsqueeze", {ax});
    if (!ctx.batched(i) && axis != 0) parts[i] = expanded(parts[i], batch_ref, rank);
  }
  return ctx.emit(py::call(py::torch("cat"), {py::list(std::move(parts)), ax}), "cat", axis != 0);
}

Status concat(Context& ctx) {
  const int64_t rank = ctx.out_shape().size();
  ASSIGN_OR_RETURN(const int64_t axis, axis_at(ctx, ctx.node().attr_int("axis", 0), rank));
  if (is_stack(ctx.graph(), ctx.node())) return stack(ctx, axis);
  // Inputs that all carry the batch in the same dim other than dim 0 and `axis` join as they are.
  const int first = ctx.batch_axis(0);
  bool same = first > 0 && first != axis;
  std::vector<py::Expr> all;
  for (size_t i = 0; i < ctx.num_inputs() && same; ++i) {
    same = ctx.batch_axis(i) == first;
    all.push_back(py::Expr::name(ctx.in(i)));
  }
  if (same) {
    return ctx.emit_at(py::call(py::torch("cat"), {py::list(std::move(all)), py::lit(axis)}), "cat",
                       first);
  }
  const bool batched = ctx.any_batched() && axis != 0;
  std::string batch_ref;
  for (size_t i = 0; i < ctx.num_inputs() && batched; ++i) {
    if (ctx.batched(i)) batch_ref = ctx.in(i);
  }
  std::vector<py::Expr> parts;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.has_input(i) && product(ctx.shape(i).begin(), ctx.shape(i).end()) == 0) continue;
    py::Expr part = py::Expr::name(ctx.in(i));
    if (batched && !ctx.batched(i) && ctx.rank(i) == rank && ctx.shape(i)[0] == 1) {
      part = expanded(part, batch_ref, rank);
    }
    parts.push_back(part);
  }
  if (parts.size() == 1) return ctx.emit(parts[0], "cat", batched);
  return ctx.emit(py::call(py::torch("cat"), {py::list(std::move(parts)), py::lit(axis)}), "cat",
                  batched);
}

Status split(Context& ctx) {
  const int64_t rank = ctx.rank(0);
  ASSIGN_OR_RETURN(const int64_t axis, axis_at(ctx, ctx.node().attr_int("axis", 0), rank));
  if (ctx.num_outputs() == 1) {
    ctx.alias(0, ctx.operand(0));
    if (ctx.has_view(0)) ctx.set_view(0, ctx.input_view(0));
    return {};
  }
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < ctx.num_outputs(); ++i) sizes.push_back(ctx.out_shape(i)[axis]);
  const int in_axis = ctx.batch_axis(0);
  // Each part is a view of the input (and of what the input is a view of): indexing it later
  // indexes that base directly.
  const View view = ctx.input_view(0);
  ctx.emit_tuple_at(py::call(py::torch("split"), {py::Expr::name(view_expr(view)),
                                                  py::list(py::ints(sizes)), py::lit(axis)}),
                    "split", in_axis == axis ? -1 : in_axis);
  int64_t offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    View part = view;
    view_slice(part, axis, offset, 1, sizes[i]);
    offset += sizes[i];
    ctx.set_view(i, std::move(part));
  }
  return {};
}

Status expand(Context& ctx) {
  const Dims& out = ctx.out_shape();
  if (out == ctx.shape(0)) {
    ctx.alias(0, ctx.operand(0));
    return {};
  }
  // A size-1 dim 0 expanded to a larger size is not a batch dim any more.
  const bool batched = ctx.batched(0) && ctx.rank(0) == static_cast<int64_t>(out.size()) &&
                       ctx.shape(0)[0] == out[0];
  return ctx.emit(py::Expr::name(ctx.in(0)).method("expand", dims_at(out, batched ? 0 : -1)),
                  "expand", batched);
}

Status tile(Context& ctx) {
  ASSIGN_OR_RETURN(std::vector<int64_t> reps, ints_from(ctx, 1, ""));
  const bool batched = ctx.batched(0) && !reps.empty() && reps[0] == 1;
  return ctx.emit(py::Expr::raw(ctx.in(0) + ".repeat" + py_tuple(reps), {}), "tile", batched);
}

// DepthToSpace (DCR or CRD) and SpaceToDepth as reshape-permute-reshape.
Status depth_space(Context& ctx) {
  const Dims& s = ctx.shape(0);
  if (s.size() != 4) return ctx.error("input must be 4-D");
  const int64_t b = ctx.node().attr_int("blocksize", 1);
  const int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  const bool batched = ctx.batched(0);
  const int64_t nb = batched ? -1 : n;
  Dims blocks;
  std::vector<int64_t> perm;
  if (ctx.node().op_type == "SpaceToDepth") {
    blocks = {nb, c, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
  } else {
    const bool crd = ctx.node().attr_string("mode", "DCR") == "CRD";
    blocks = crd ? Dims{nb, c / (b * b), b, b, h, w} : Dims{nb, b, b, c / (b * b), h, w};
    perm = crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
  }
  py::Expr expr = py::Expr::name(ctx.in(0))
                      .method("reshape", py::ints(blocks))
                      .method("permute", py::ints(perm))
                      .method("reshape", dims_at(ctx.out_shape(), batched ? 0 : -1));
  return ctx.emit(expr, "space", batched);
}

// Identity and Dropout (inference): the input itself.
Status identity(Context& ctx) {
  ctx.alias(0, ctx.operand(0));
  for (size_t i = 1; i < ctx.num_outputs(); ++i) {
    if (ctx.output_used(i)) return ctx.error("the training-mode mask output is not supported");
  }
  return {};
}

}  // namespace

void register_shape(HandlerRegistry& t) {
  t.add("Reshape", reshape);
  t.add("Flatten", flatten);
  t.add("Squeeze", squeeze_like);
  t.add("Unsqueeze", squeeze_like);
  t.add("Transpose", transpose);
  t.add("Concat", concat);
  t.add("Split", split);
  t.add("Expand", expand);
  t.add("Tile", tile);
  t.add("DepthToSpace", depth_space);
  t.add("SpaceToDepth", depth_space);
  t.add("Identity", identity);
  t.add("Dropout", identity);
}

}  // namespace torchonnx

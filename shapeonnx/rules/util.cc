#include "shapeonnx/rules/util.h"

#include <algorithm>
#include <limits>
#include <string>

#include "common/eval/eval.h"

namespace shapeonnx {

using common::Dims;
using common::Result;
using common::Status;

void add_rules(ShapeRegistry& table, std::string_view ops, ShapeRule rule) {
  while (!ops.empty()) {
    const size_t space = ops.find(' ');
    const std::string_view op = ops.substr(0, space);
    if (!op.empty()) table.add(op, rule);
    if (space == std::string_view::npos) break;
    ops.remove_prefix(space + 1);
  }
}

Status same_as_input(InferContext& ctx, size_t out, size_t in) {
  ctx.set_output(out, ctx.dtype(in), ctx.shape(in));
  return {};
}

Result<Dims> broadcast_inputs(const InferContext& ctx, size_t first) {
  std::optional<Dims> dims;
  for (size_t i = first; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    if (!dims) {
      dims = ctx.shape(i);
      continue;
    }
    std::optional<Dims> next = common::broadcast_shapes(*dims, ctx.shape(i));
    if (!next) return ctx.error("input shapes do not broadcast");
    dims = std::move(next);
  }
  if (!dims) return ctx.error("no input");
  return *dims;
}

namespace {

// Input i's value, which must be present and known statically.
Result<const common::Tensor*> known_input(const InferContext& ctx, size_t i,
                                          std::string_view what) {
  if (!ctx.has_input(i))
    return ctx.error(std::string(what) + " (input " + std::to_string(i) + ") is missing");
  const common::Tensor* t = ctx.constant(i);
  if (t == nullptr) {
    return ctx.error(std::string(what) + " (input " + std::to_string(i) + ", '" +
                     ctx.node().inputs[i] + "') is not known statically");
  }
  return t;
}

}  // namespace

Result<std::vector<int64_t>> known_ints(const InferContext& ctx, size_t i, std::string_view what) {
  ASSIGN_OR_RETURN(const common::Tensor* t, known_input(ctx, i, what));
  return t->to_int64();
}

Result<std::vector<double>> known_doubles(const InferContext& ctx, size_t i,
                                          std::string_view what) {
  ASSIGN_OR_RETURN(const common::Tensor* t, known_input(ctx, i, what));
  return t->to_double();
}

Result<std::optional<std::vector<int64_t>>> ints_from_input_or_attr(const InferContext& ctx,
                                                                    size_t i, std::string_view attr,
                                                                    std::string_view what) {
  const common::Tensor* value = ctx.has_input(i) ? ctx.constant(i) : nullptr;
  auto ints = common::ints_input_or_attr(ctx.node(), i, value, attr, what);
  if (!ints.ok()) return ctx.error(ints.error().message);
  return ints;
}

Result<std::vector<int64_t>> normalize_axes(const InferContext& ctx,
                                            const std::vector<int64_t>& axes, int64_t rank) {
  Result<std::vector<int64_t>> out = common::normalize_axes(axes, rank);
  if (!out.ok()) return ctx.error(out.error().message);
  return out;
}

Result<int64_t> checked_mul(const InferContext& ctx, int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    return ctx.error("dimension " + std::to_string(a) + " * " + std::to_string(b) +
                     " overflows int64");
  }
  return r;
}

Result<int64_t> checked_product(const InferContext& ctx, const Dims& dims, size_t begin,
                                size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) {
    ASSIGN_OR_RETURN(p, checked_mul(ctx, p, dims[i]));
  }
  return p;
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

int64_t ceil_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a > 0) ? q + 1 : q;
}

Result<Window> read_window(const InferContext& ctx, size_t spatial,
                           const std::vector<int64_t>& kernel) {
  Result<Window> w = common::read_window(ctx.node(), spatial, kernel);
  if (!w.ok()) return ctx.error(w.error().message);
  return w;
}

Result<int64_t> window_output(const InferContext& ctx, const Window& w, size_t i, int64_t in) {
  Result<common::WindowDim> d = common::window_dim(w, i, in);
  if (!d.ok()) return ctx.error(d.error().message);
  return d->out;
}

}  // namespace shapeonnx

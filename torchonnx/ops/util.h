// Helpers shared by the op handler families.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/tensor.h"
#include "torchonnx/context.h"

namespace torchonnx {

/// The output's batch dim under numpy broadcasting: where the batched inputs' batch dims line up
/// (-1 when they do not, or when an operand without the batch spans that dim with size > 1).
int broadcast_batch_axis(const Context& ctx);
/// Output 0 keeps a batch dim when some batched input has the output's rank and dim 0 (numpy
/// broadcasting aligns trailing dims, so that input's dim 0 is the output's dim 0; a size-1 dim 0
/// broadcast to a larger one is not a batch dim any more).
bool broadcast_batched(const Context& ctx);
/// Integer list from input i (constant) or, when absent, the attribute `attr` (older opsets).
/// `present` is false when neither exists (common::ints_input_or_attr, errors placed at the node).
common::Result<std::vector<int64_t>> ints_from(Context& ctx, size_t i, std::string_view attr,
                                               bool* present = nullptr);
/// common::normalize_axis with its error placed at the node.
common::Result<int64_t> axis_at(const Context& ctx, int64_t axis, int64_t rank);
/// common::normalize_axes with its error placed at the node.
common::Result<std::vector<int64_t>> axes_at(const Context& ctx, std::vector<int64_t> axes,
                                             int64_t rank);
/// `expr` cast to output i's element type when `from` differs (PyTorch promotes some results).
std::string cast_to_output(const Context& ctx, std::string expr, common::DType from, size_t i = 0);
py::Expr cast_to_output(const Context& ctx, py::Expr expr, common::DType from, size_t i = 0);
/// An indexing suffix "[:, :, a:b]" selecting `parts[d]` on each dim; trailing ":" dropped;
/// empty when every part is ":".
std::string index_suffix(std::vector<std::string> parts);
/// Restricts dim `axis` of the view (counting the dims it keeps) to `len` elements from `start`
/// (relative to that dim) by `step` > 0.
void view_slice(View& view, int64_t axis, int64_t start, int64_t step, int64_t len);
/// Selects element `index` of the view's dim `axis`, dropping the dim.
void view_select(View& view, int64_t axis, int64_t index);
/// The view as a subscript of its base ("x[:, 3:9, 2]"; the base alone when it keeps everything).
std::string view_expr(const View& view);
/// `view_expr` as an expression.
py::Expr view_of(const View& view);
/// `x[parts...]` with trailing `:` parts dropped; x itself when every part is `:`.
py::Expr subscript(const py::Expr& x, std::vector<py::Expr> parts);
/// Python slice text "a:b:s" with defaults omitted for a dim of size `dim`.
std::string slice_text(int64_t start, int64_t stop, int64_t step, int64_t dim);
/// Ints as a Python argument: "3" when `values` has one element and `scalar_ok`, else a tuple.
std::string int_or_tuple(const std::vector<int64_t>& values, bool scalar_ok = true);
/// Kernel, strides, dilations, group and explicit pads (begins, ends) of a Conv-like node.
struct ConvGeometry {
  std::vector<int64_t> kernel, strides, dilations, begin, end;
  int64_t group = 1;
};
/// The geometry of a Conv-like node with `kernel` over spatial input dims `in`; auto_pad SAME_*
/// is resolved to explicit pads unless `transposed` (ConvTranspose resolves it itself).
common::Result<ConvGeometry> conv_geometry(Context& ctx, const std::vector<int64_t>& kernel,
                                           const std::vector<int64_t>& in, bool transposed);
/// A copy of `t` converted to float64 values.
std::vector<double> doubles(const common::Tensor& t);

/// Input i's expression `expr` as int64 indices (a cast unless it already is int64).
std::string as_long(const Context& ctx, size_t i, const std::string& expr);
py::Expr as_long(const Context& ctx, size_t i, const py::Expr& expr);
/// What `as_long(ctx, i, ...)` uses: torch when it converts.
inline py::Namespaces long_uses(const Context& ctx, size_t i) {
  return ctx.dtype(i) == common::DType::kInt64 ? py::Namespaces{} : py::Namespaces{py::Ns::kTorch};
}
/// Constant indices as an int64 tensor, negative ones wrapped by `dim`.
common::Tensor wrapped_indices(const common::Tensor& t, int64_t dim);

}  // namespace torchonnx

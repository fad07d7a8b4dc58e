// MaxUnpool, the inverse of MaxPool with its Indices: a scatter into zeros of the unpooled size.
#include <string>
#include <vector>

#include "common/graph.h"
#include "torchonnx/context.h"
#include "torchonnx/pyexpr.h"

namespace torchonnx {

namespace {

using common::Status;

// MaxUnpool: the indices address the flattened unpooled tensor (batch and channel included) of
// the size kernel, strides and pads give; a larger output_shape pads it at the end of each dim.
Status max_unpool(Context& ctx) {
  const common::Node& n = ctx.node();
  const common::Dims& in = ctx.shape(0);
  const common::Dims& out = ctx.out_shape();
  if (in.size() < 3 || out.size() != in.size()) return ctx.error("expected [N, C, D...] tensors");
  const size_t spatial = in.size() - 2;
  const std::vector<int64_t> kernel = n.attr_ints("kernel_shape");
  const std::vector<int64_t> strides = n.attr_ints("strides", std::vector<int64_t>(spatial, 1));
  const std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  if (kernel.size() != spatial || strides.size() != spatial || pads.size() != 2 * spatial) {
    return ctx.error("kernel_shape, strides or pads do not match the input rank");
  }
  common::Dims unpooled(in.begin(), in.begin() + 2);
  std::vector<int64_t> padding;  // F.pad order: last dim first
  for (size_t d = 0; d < spatial; ++d) {
    unpooled.push_back((in[d + 2] - 1) * strides[d] + kernel[d] - pads[d] - pads[d + spatial]);
  }
  for (size_t d = in.size(); d-- > 2;) {
    if (out[d] < unpooled[d]) return ctx.error("output_shape is smaller than the unpooled size");
    padding.insert(padding.end(), {0, out[d] - unpooled[d]});
  }
  const bool batched = ctx.batched(0);
  int64_t per_sample = 1;
  for (size_t d = 1; d < unpooled.size(); ++d) per_sample *= unpooled[d];
  const py::Expr x = py::Expr::name(ctx.in(0));
  const py::Expr numel = batched ? py::binary("*", x.attr("shape")[py::lit(0)], py::lit(per_sample))
                                 : py::lit(per_sample * unpooled[0]);
  const py::Expr indices = py::Expr::name(ctx.in(1));
  common::Dims shape = unpooled;
  if (batched) shape[0] = -1;
  py::Expr expr =
      x.method("new_zeros", {numel})
          .method("scatter", {py::lit(0), indices.method("flatten"), x.method("flatten")})
          .method("reshape", py::ints(shape));
  if (unpooled != out) expr = py::call(py::fn("pad"), {expr, py::tuple(py::ints(padding))});
  return ctx.emit(expr, "unpooled", batched);
}

}  // namespace

void register_pool_unpool(HandlerRegistry& t) { t.add("MaxUnpool", max_unpool); }

}  // namespace torchonnx

// Ops on convolution columns: Col2Im (columns added back into an image) and DeformConv (columns
// sampled at offset positions, then multiplied by the weights).
#include <algorithm>
#include <string>
#include <vector>

#include "common/op_params.h"
#include "torchonnx/context.h"
#include "torchonnx/ops_util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::Status;
using common::Tensor;

// Col2Im: the columns added into a flat image with index_add through a constant table of each
// column element's image offset (common::col2im_offsets); elements in the padding go to one
// extra slot, dropped after.
Status col2im(Context& ctx) {
  ASSIGN_OR_RETURN(std::vector<int64_t> image, ints_from(ctx, 1, ""));
  ASSIGN_OR_RETURN(std::vector<int64_t> block, ints_from(ctx, 2, ""));
  common::Result<common::Window> w = common::read_window(ctx.node(), image.size(), block);
  if (!w.ok()) return ctx.error(w.error().message);
  int64_t blocks = 0;
  common::Result<std::vector<int64_t>> offsets = common::col2im_offsets(*w, image, &blocks);
  if (!offsets.ok()) return ctx.error(offsets.error().message);
  const common::Dims& x = ctx.shape(0);
  const auto size = static_cast<int64_t>(offsets->size());
  const int64_t kernel = size / std::max<int64_t>(blocks, 1);
  if (x.size() != 3 || kernel == 0 || x[1] % kernel != 0 || x[2] != blocks) {
    return ctx.error("input must be [N, C * prod(block_shape), number of blocks]");
  }
  const int64_t channels = x[1] / kernel, plane = common::num_elements(image);
  std::vector<int64_t> table = *offsets;
  std::replace(table.begin(), table.end(), int64_t{-1}, plane);
  const std::string index = ctx.buffer(Tensor::from_int64(table, {size}), "col2im_index");
  const bool batched = ctx.batched(0);
  const std::string in = ctx.in(0);
  const std::string n = batched ? in + ".shape[0]" : std::to_string(x[0]);
  const std::string c = std::to_string(channels);
  std::vector<int64_t> dims = {x[0], channels};
  dims.insert(dims.end(), image.begin(), image.end());
  const std::string expr = in + ".new_zeros(" + n + ", " + c + ", " + std::to_string(plane + 1) +
                           ").index_add(2, " + index + ", " + in + ".reshape(" + n + ", " + c +
                           ", " + std::to_string(size) + "))[:, :, :" + std::to_string(plane) +
                           "].reshape(" + shape_args(dims, batched) + ")";
  return ctx.emit(expr, "image", batched);
}

}  // namespace

void register_conv_columns(HandlerTable& t) { t.add("Col2Im", col2im); }

}  // namespace torchonnx

// Moving elementwise affine maps through layout ops: Transpose(x * s + t) = T(x) * T(s) + T(t).
#include <set>
#include <string_view>

#include "slimonnx/affine.h"

namespace slimonnx {
namespace {

using common::Dims;

// out[j] = in[k] where output index j has coordinates c and input coordinates c'[perm[i]] = c[i].
std::vector<double> permute(const std::vector<double>& in, const Dims& dims,
                            const std::vector<int64_t>& perm) {
  const size_t rank = dims.size();
  std::vector<int64_t> in_stride(rank, 1);
  for (size_t i = rank; i-- > 1;) in_stride[i - 1] = in_stride[i] * dims[i];
  Dims out_dims(rank);
  std::vector<int64_t> stride(rank);
  for (size_t i = 0; i < rank; ++i) {
    out_dims[i] = dims[perm[i]];
    stride[i] = in_stride[perm[i]];
  }
  std::vector<double> out(in.size());
  std::vector<int64_t> idx(rank, 0);
  int64_t offset = 0;
  for (double& v : out) {
    v = in[offset];
    for (size_t i = rank; i-- > 0;) {
      offset += stride[i];
      if (++idx[i] < out_dims[i]) break;
      offset -= stride[i] * out_dims[i];
      idx[i] = 0;
    }
  }
  return out;
}

std::optional<std::vector<int64_t>> valid_perm(const common::Node& op, size_t rank, bool forward) {
  std::vector<int64_t> perm = op.attr_ints("perm");
  if (perm.empty()) {
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
  }
  if (perm.size() != rank) return std::nullopt;
  std::vector<int64_t> inverse(rank, -1);
  for (size_t i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(rank) || inverse[perm[i]] >= 0) {
      return std::nullopt;
    }
    inverse[perm[i]] = static_cast<int64_t>(i);
  }
  return forward ? perm : inverse;
}

}  // namespace

bool is_layout_op(const common::Node& n) {
  static const std::set<std::string_view> ops = {"Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                                 "Transpose"};
  return is_onnx(n) && ops.count(n.op_type) != 0 && n.outputs.size() == 1 && !n.inputs.empty();
}

bool through_layout(const Editor& ed, const common::Node& op, bool forward, Affine& a) {
  if (!is_layout_op(op)) return false;
  const Dims* in = ed.shape(op.inputs[0]);
  const Dims* out = ed.shape(op.outputs[0]);
  if (in == nullptr || out == nullptr || *(forward ? in : out) != a.dims) return false;
  if (op.op_type != "Transpose") {
    a.dims = forward ? *out : *in;
    return true;
  }
  std::optional<std::vector<int64_t>> perm = valid_perm(op, a.dims.size(), forward);
  if (!perm) return false;
  a.s = permute(a.s, a.dims, *perm);
  a.t = permute(a.t, a.dims, *perm);
  a.dims = forward ? *out : *in;
  return true;
}

}  // namespace slimonnx

// Which ops the linear-region pass may collapse (affine in their non-constant inputs, sample by
// sample) and how they group into regions.
#include <algorithm>
#include <map>
#include <numeric>
#include <string_view>

#include "common/op_params.h"
#include "slimonnx/passes/region.h"

namespace slimonnx {
namespace {

using common::Dims;
using common::DType;
using common::Node;
using common::Tensor;

// Whether `axis` is an axis of rank `rank` other than the batch dim 0.
bool off_batch(int64_t axis, int64_t rank) {
  const common::Result<int64_t> a = common::normalize_axis(axis, rank);
  return a.ok() && *a != 0;
}

// The value holds one sample: static shape of rank >= 2 whose first (batch) dim is 1, float type.
const Dims* sample_shape(const Editor& ed, std::string_view v) {
  const Dims* d = ed.shape(v);
  const DType t = ed.dtype(v);
  if (d == nullptr || d->size() < 2 || (*d)[0] != 1) return nullptr;
  if (t != DType::kFloat && t != DType::kDouble) return nullptr;
  return d;
}

// Constant operand of an elementwise op that broadcasts the same way for every sample.
bool per_sample_constant(const Tensor& c, int64_t out_rank) {
  if (c.dtype != DType::kFloat && c.dtype != DType::kDouble) return false;
  return static_cast<int64_t>(c.dims.size()) < out_rank || c.dims.empty() || c.dims[0] == 1;
}

bool avoids_batch_axis(const std::optional<std::vector<int64_t>>& axes, int64_t rank) {
  if (!axes || axes->empty()) return false;
  return std::all_of(axes->begin(), axes->end(), [&](int64_t a) { return off_batch(a, rank); });
}

// The node is affine in its non-constant inputs and treats each sample (dim 0) separately.
bool region_op(const Editor& ed, const Node& n) {
  if (!is_onnx(n) || n.outputs.size() != 1 || n.inputs.empty()) return false;
  const Dims* out = sample_shape(ed, n.outputs[0]);
  if (out == nullptr) return false;
  const auto rank = static_cast<int64_t>(out->size());
  int vars = 0;
  for (size_t s = 0; s < n.inputs.size(); ++s) {
    if (n.inputs[s].empty()) continue;
    const Tensor* c = ed.initializer(n.inputs[s]);
    if (c != nullptr) continue;
    if (sample_shape(ed, n.inputs[s]) == nullptr) return false;
    if (ed.dtype(n.inputs[s]) != ed.dtype(n.outputs[0])) return false;
    ++vars;
  }
  if (vars == 0) return false;
  const std::string& op = n.op_type;
  const Tensor* c1 = n.inputs.size() > 1 ? ed.initializer(n.inputs[1]) : nullptr;
  const bool x_var = ed.initializer(n.inputs[0]) == nullptr;
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    if (n.inputs.size() != 2) return false;
    if ((op == "Mul" || op == "Div") && vars != 1) return false;
    if (op == "Div" && !x_var) return false;
    for (const std::string& in : n.inputs) {
      const Tensor* c = ed.initializer(in);
      if (c != nullptr && !per_sample_constant(*c, rank)) return false;
    }
    return true;
  }
  if (op == "Neg" || op == "Identity") return true;
  if (op == "MatMul") {
    return x_var && c1 != nullptr && c1->dims.size() == 2 &&
           (c1->dtype == DType::kFloat || c1->dtype == DType::kDouble);
  }
  if (op == "Gemm") {
    if (!x_var || c1 == nullptr || n.attr_int("transA", 0) != 0) return false;
    return n.inputs.size() < 3 || n.inputs[2].empty() || ed.initializer(n.inputs[2]) != nullptr;
  }
  if (op == "Concat") return off_batch(n.attr_int("axis", 0), rank);
  if (!x_var || !params_constant(ed, n)) return false;
  if (op == "Conv" || op == "ConvTranspose") return c1 != nullptr;
  if (op == "BatchNormalization") return n.attr_int("training_mode", 0) == 0;
  if (op == "AveragePool") return true;
  const Dims* in = ed.shape(n.inputs[0]);
  const auto in_rank = static_cast<int64_t>(in->size());
  if (op == "Pad") {  // constant padding that leaves the batch axis alone
    if (n.attr_string("mode", "constant") != "constant" || n.has_input(3)) return false;
    std::optional<std::vector<int64_t>> pads = int_param(ed, n, 1, "pads");
    return pads && static_cast<int64_t>(pads->size()) == 2 * in_rank && (*pads)[0] == 0 &&
           (*pads)[in_rank] == 0;
  }
  if (op == "Slice") {
    return avoids_batch_axis(
        ed.graph().opset() < 10 ? int_param(ed, n, 99, "axes") : int_param(ed, n, 3, "axes"),
        in_rank);
  }
  if (op == "Gather") return c1 != nullptr && off_batch(n.attr_int("axis", 0), in_rank);
  if (op == "Reshape" || op == "Expand") return true;  // batch dim 1 in and out (sample_shape)
  if (op == "Flatten") {
    const common::Result<int64_t> axis =
        common::normalize_flatten_axis(n.attr_int("axis", 1), in_rank);
    return axis.ok() && *axis >= 1;
  }
  if (op == "Squeeze") return avoids_batch_axis(int_param(ed, n, 1, "axes"), in_rank);
  if (op == "Unsqueeze") return avoids_batch_axis(int_param(ed, n, 1, "axes"), rank);
  if (op == "Transpose") {
    std::vector<int64_t> perm = n.attr_ints("perm");
    return !perm.empty() && perm[0] == 0;
  }
  if (op == "ReduceSum") {
    return avoids_batch_axis(
        ed.graph().opset() < 13 ? int_param(ed, n, 99, "axes") : int_param(ed, n, 1, "axes"),
        in_rank);
  }
  return false;
}

// Nodes upstream of a graph output that is the difference of two computed values (f(x1) - f(x2),
// as networks built for relational specs end). Where the two terms nearly cancel, computing them
// in another order changes the output by the float32 rounding of the terms, far more than the
// rounding of the difference, so their arithmetic is left as it is.
std::vector<bool> feeds_difference_output(const Editor& ed) {
  std::vector<bool> upstream(ed.size(), false);
  std::vector<int> stack;
  for (const std::string& y : ed.graph().outputs) {
    const int p = ed.producer(y);
    if (p < 0) continue;
    const Node& n = ed.node(p);
    int vars = 0;
    for (const std::string& in : n.inputs) vars += !in.empty() && ed.initializer(in) == nullptr;
    if (is_onnx(n) && n.op_type == "Sub" && vars == 2) stack.push_back(p);
  }
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    if (upstream[i]) continue;
    upstream[i] = true;
    for (const std::string& in : ed.node(i).inputs) {
      const int p = in.empty() ? -1 : ed.producer(in);
      if (p >= 0) stack.push_back(p);
    }
  }
  return upstream;
}

// Connected groups (through values) of region ops, each ascending.
}  // namespace

std::vector<std::vector<int>> linear_regions(const Editor& ed) {
  const int size = static_cast<int>(ed.size());
  std::vector<int> parent(size);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::vector<bool> member(size, false);
  const std::vector<bool> kept_order = feeds_difference_output(ed);
  for (int i = 0; i < size; ++i) {
    member[i] = ed.live(i) && !kept_order[i] && region_op(ed, ed.node(i));
  }
  // Joined through values they pass on, and through inputs they share (so that a value read by
  // several of them is flattened or concatenated once).
  std::map<std::string, int> first_reader;
  for (int i = 0; i < size; ++i) {
    if (!member[i]) continue;
    for (const std::string& in : ed.node(i).inputs) {
      if (in.empty() || ed.initializer(in) != nullptr) continue;
      const int p = ed.producer(in);
      if (p >= 0 && member[p]) parent[find(i)] = find(p);
      auto [it, added] = first_reader.emplace(in, i);
      if (!added) parent[find(i)] = find(it->second);
    }
  }
  std::map<int, std::vector<int>> groups;
  for (int i = 0; i < size; ++i) {
    if (member[i]) groups[find(i)].push_back(i);
  }
  std::vector<std::vector<int>> out;
  for (auto& [root, nodes] : groups) {
    if (nodes.size() > 1) out.push_back(std::move(nodes));
  }
  return out;
}

}  // namespace slimonnx

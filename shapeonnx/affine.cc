#include "shapeonnx/affine.h"

#include <unordered_set>

namespace shapeonnx {

namespace {

constexpr int64_t kMaxElements = 16;

// Ops whose output has the elements of input 0 in the same order.
const std::unordered_set<std::string_view> kElementPreserving = {"Unsqueeze", "Squeeze", "Reshape",
                                                                 "Flatten", "Identity"};

bool small_integer(const common::Value* v) {
  return v && v->shape && !v->known && common::is_integer(v->dtype) &&
         common::num_elements(*v->shape) <= kMaxElements && common::num_elements(*v->shape) > 0;
}

}  // namespace

const Affine* AffineValues::find(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

void AffineValues::update(const common::Graph& graph, const common::Node& node) {
  if (node.outputs.size() != 1 || node.outputs[0].empty()) return;
  const std::string& out = node.outputs[0];
  const common::Value* v = graph.find(out);
  if (!small_integer(v)) return;
  const int64_t n = common::num_elements(*v->shape);
  const Affine* in = node.inputs.empty() ? nullptr : find(node.inputs[0]);
  // x -> x, in the same element order.
  if (in && kElementPreserving.count(node.op_type)) {
    values_[out] = *in;
    return;
  }
  // Add(x, c), Add(c, x), Sub(x, c) with c a known scalar: offsets shift by c.
  if ((node.op_type == "Add" || node.op_type == "Sub") && node.inputs.size() == 2) {
    for (int side = 0; side < 2; ++side) {
      const Affine* a = find(node.inputs[side]);
      const common::Tensor* c = graph.constant(node.inputs[1 - side]);
      if (!a || !c || c->numel() != 1 || (node.op_type == "Sub" && side == 1)) continue;
      if (static_cast<int64_t>(a->offsets.size()) != n) continue;
      Affine shifted = *a;
      const int64_t k = node.op_type == "Sub" ? -c->int_at(0) : c->int_at(0);
      for (int64_t& o : shifted.offsets) o += k;
      values_[out] = std::move(shifted);
      return;
    }
  }
  // Anything else that is unknown becomes a base of its own.
  values_[out] = Affine{out, std::vector<int64_t>(static_cast<size_t>(n), 0)};
}

std::optional<std::pair<std::vector<int64_t>, std::vector<int64_t>>> AffineValues::slice_bounds(
    const common::Graph& graph, const common::Node& node) const {
  if (node.op_type != "Slice" || node.inputs.size() < 3) return std::nullopt;
  if (graph.constant(node.inputs[1]) || graph.constant(node.inputs[2])) return std::nullopt;
  const Affine* starts = find(node.inputs[1]);
  const Affine* ends = find(node.inputs[2]);
  if (!starts || !ends || starts->base != ends->base) return std::nullopt;
  if (starts->offsets.size() != ends->offsets.size()) return std::nullopt;
  return std::make_pair(starts->offsets, ends->offsets);
}

}  // namespace shapeonnx

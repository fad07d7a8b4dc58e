#include "torchonnx/add_batch.h"

#include <string>
#include <vector>

#include "common/op_params.h"

namespace torchonnx {

namespace {

bool has_batch(const common::Value& v) {
  if (v.shape->size() < 2) return false;
  const bool symbolic = (*v.shape)[0] < 0 || (!v.dim_params.empty() && !v.dim_params[0].empty());
  return symbolic || (*v.shape)[0] == 1;
}

// The axes an Unsqueeze inserts (attribute before opset 13, constant input after), or empty.
std::vector<int64_t> unsqueeze_axes(const common::Graph& graph, const common::Node& node) {
  const common::Tensor* axes = node.has_input(1) ? graph.initializer(node.inputs[1]) : nullptr;
  const auto listed = common::ints_input_or_attr(node, 1, axes, "axes", "axes");
  return listed.ok() ? listed->value_or(std::vector<int64_t>{}) : std::vector<int64_t>{};
}

// Rewrites `node`, a reader of the unbatched input `name` of `numel` elements, so that it keeps
// a leading batch dim where it added a unit dim (a Reshape to [1, rest...] or [-1, rest...]
// with rest holding every element, or an Unsqueeze at 0).
common::Status keep_batch(common::Graph& graph, common::Node& node, const std::string& name,
                          int64_t numel) {
  const bool first = !node.inputs.empty() && node.inputs[0] == name;
  if (first && node.domain.empty() && node.op_type == "Unsqueeze" &&
      unsqueeze_axes(graph, node) == std::vector<int64_t>{0}) {
    node.op_type = "Identity";  // [N, ...] already holds what [1, ...] did
    node.inputs.resize(1);
    node.attrs.clear();
    return {};
  }
  const common::Tensor* target =
      first && node.op_type == "Reshape" && node.domain.empty() && node.has_input(1)
          ? graph.initializer(node.inputs[1])
          : nullptr;
  std::vector<int64_t> dims = target ? target->to_int64() : std::vector<int64_t>{};
  int64_t rest = 1;
  for (size_t i = 1; i < dims.size(); ++i) rest = dims[i] > 0 ? rest * dims[i] : -1;
  const bool unit = !dims.empty() && (dims[0] == 1 || dims[0] == -1);
  if (!unit || rest != numel || node.attr_int("allowzero", 0) != 0) {
    return graph.error(node, "--add-batch-dim: input '" + name +
                                 "' is read here without first getting a leading unit dim "
                                 "(Reshape to [1, ...], Unsqueeze at 0); batch it with vmap");
  }
  if (dims[0] == -1) return {};  // [-1, rest...] already keeps every sample
  dims[0] = -1;
  const std::string shape = graph.fresh_name(node.inputs[1] + "_batched");
  graph.initializers[shape] = common::Tensor::from_int64(dims, {static_cast<int64_t>(dims.size())});
  node.inputs[1] = shape;
  return {};
}

}  // namespace

common::Status add_batch_dim(common::Graph& graph) {
  for (const std::string& name : graph.inputs) {
    common::Value& v = graph.value(name);
    if (!v.shape) return graph.error("--add-batch-dim: input '" + name + "' has no declared shape");
    if (has_batch(v)) continue;
    int64_t numel = 1;
    for (size_t d = 0; d < v.shape->size(); ++d) {
      const bool symbolic = d < v.dim_params.size() && !v.dim_params[d].empty();
      if ((*v.shape)[d] < 0 || symbolic) {
        return graph.error("--add-batch-dim: input '" + name + "' has a symbolic dim " +
                           std::to_string(d) + "; give --input-shape");
      }
      numel *= (*v.shape)[d];
    }
    const std::vector<int> readers = v.consumers;
    for (int c : readers) RETURN_IF_ERROR(keep_batch(graph, graph.nodes[c], name, numel));
    common::Value& in = graph.value(name);  // keep_batch may add values
    in.dim_params.resize(in.shape->size());
    in.dim_params.insert(in.dim_params.begin(), "N");
    in.shape->insert(in.shape->begin(), common::kUnknownDim);
  }
  graph.rebuild_index();
  return {};
}

}  // namespace torchonnx

#include "torchonnx/batch_probe.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "shapeonnx/control_flow/control_flow.h"

namespace torchonnx {

int64_t batch_size(const common::Graph& graph) {
  std::set<std::string, std::less<>> plain;  // tensor ports (elements of lists are not batched)
  for (const common::PackedPort& p : graph.packed_inputs) {
    if (p.kind == common::PortKind::kTensor) plain.insert(p.name);
  }
  for (const std::string& name : graph.inputs) {
    if (!graph.packed_inputs.empty() && !plain.count(name)) continue;
    const common::Value* v = graph.find(name);
    if (!v || !v->shape || v->shape->size() < 2) continue;
    const bool symbolic = !v->dim_params.empty() && !v->dim_params[0].empty();
    if (symbolic || (*v->shape)[0] == 1) return (*v->shape)[0];
  }
  return -1;
}

bool is_input_batched(const common::Graph& graph, const std::string& name, int64_t batch) {
  const common::Value* v = graph.find(name);
  return batch > 0 && v && v->shape && v->shape->size() >= 2 && (*v->shape)[0] == batch;
}

bool may_have_batch(const common::Graph& loaded) {
  for (const std::string& name : loaded.inputs) {
    const common::Value* v = loaded.find(name);
    if (!v || !v->shape) return true;
    if (v->shape->size() < 2) continue;
    const bool symbolic = !v->dim_params.empty() && !v->dim_params[0].empty();
    if (symbolic || (*v->shape)[0] <= 1) return true;
  }
  return false;
}

common::Graph copy_without_weights(common::Graph& graph) {
  std::vector<std::string> raws;
  raws.reserve(graph.initializers.size());
  for (auto& [name, t] : graph.initializers) raws.push_back(std::exchange(t.raw, {}));
  common::Graph copy = graph;
  size_t i = 0;
  for (auto& [name, t] : graph.initializers) t.raw = std::move(raws[i++]);
  return copy;
}

namespace {

size_t byte_size(const common::Tensor& t) {
  const int64_t n = t.numel();
  return n > 0 ? static_cast<size_t>(n) * common::dtype_size(t.dtype) : 0;
}

// Lends the bytes of `owner`'s initializers to the same-named initializers of `borrower` that
// have none (same dtype and dims), and gives them back when it goes out of scope.
class WeightLoan {
 public:
  WeightLoan(common::Graph& owner, common::Graph& borrower) : owner_(owner), borrower_(borrower) {
    for (auto& [name, t] : borrower.initializers) {
      if (t.raw.size() == byte_size(t)) continue;
      auto it = owner.initializers.find(name);
      if (!t.raw.empty() || it == owner.initializers.end() || it->second.dtype != t.dtype ||
          it->second.dims != t.dims || it->second.raw.size() != byte_size(t)) {
        complete_ = false;
        continue;
      }
      t.raw.swap(it->second.raw);
      names_.push_back(name);
    }
  }
  ~WeightLoan() {
    for (const std::string& name : names_) {
      auto a = owner_.initializers.find(name);
      auto b = borrower_.initializers.find(name);
      if (a != owner_.initializers.end() && b != borrower_.initializers.end())
        a->second.raw.swap(b->second.raw);
    }
  }
  WeightLoan(const WeightLoan&) = delete;
  WeightLoan& operator=(const WeightLoan&) = delete;
  /// Every initializer of the borrower has its bytes.
  bool complete() const { return complete_; }

 private:
  common::Graph& owner_;
  common::Graph& borrower_;
  std::vector<std::string> names_;
  bool complete_ = true;
};

}  // namespace

BatchAxes probe_batch_axes(common::Graph original, common::Graph& inferred,
                           shapeonnx::Options options) {
  const int64_t batch = batch_size(inferred);
  if (batch <= 0) return {};
  const WeightLoan loan(inferred, original);
  if (!loan.complete()) return {};
  options.batch_size = 2 * batch;
  for (const std::string& name : inferred.inputs) {
    if (!is_input_batched(inferred, name, batch)) continue;
    common::Dims dims = *inferred.find(name)->shape;
    dims[0] = 2 * batch;
    options.input_shapes[name] = std::move(dims);
  }
  if (!shapeonnx::infer_with_control_flow(original, options, /*unroll=*/true).ok()) return {};
  BatchAxes axes;
  for (const auto& [name, v] : inferred.values) {
    if (!v.shape || !v.is_static() || inferred.is_initializer(name)) continue;
    const common::Value* w = original.find(name);
    if (!w || !w->shape || !w->is_static() || w->shape->size() != v.shape->size()) continue;
    ProbedAxis probed{*v.shape, -1};
    for (size_t d = 0; d < v.shape->size(); ++d) {
      const int64_t a = (*v.shape)[d], b = (*w->shape)[d];
      if (a == b) continue;
      probed.axis = probed.axis == -1 && b == 2 * a ? static_cast<int>(d) : -2;
    }
    axes.emplace(name, std::move(probed));
  }
  return axes;
}

}  // namespace torchonnx

#include "propdag/torch/batch_verify.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace propdag::torch_engine {
namespace {

// verify()'s bound computations on the torch engine, `batch` boxes per engine call.
class TorchBounder : public BoxBounder {
 public:
  TorchBounder(Engine& engine, const Model& model, int batch)
      : engine_(engine), model_(model), batch_(std::max(1, batch)) {}

  int batch() const override { return batch_; }

  common::Result<std::vector<Interval>> bound(const std::vector<Interval>& boxes,
                                              const std::vector<Mat>& c, const Options& options,
                                              std::vector<Mat>* lower_coef,
                                              std::vector<std::vector<Interval>>* node_bounds,
                                              std::vector<Vec>* lower_bias) override {
    const auto k = static_cast<Eigen::Index>(boxes.size());
    const Eigen::Index n = boxes.empty() ? 0 : boxes.front().size();
    Boxes in{Mat(k, n), Mat(k, n)};
    for (Eigen::Index i = 0; i < k; ++i) {
      in.lo.row(i) = boxes[static_cast<size_t>(i)].lo.transpose();
      in.hi.row(i) = boxes[static_cast<size_t>(i)].hi.transpose();
    }
    std::vector<Boxes> nodes;
    if (node_bounds != nullptr) nodes = by_node(*node_bounds, k);
    Mat bias;
    ASSIGN_OR_RETURN(
        Boxes y, engine_.linear_bounds(in, c, options, lower_coef, node_bounds ? &nodes : nullptr,
                                       lower_bias ? &bias : nullptr));
    if (node_bounds != nullptr) by_box(nodes, k, *node_bounds);
    if (lower_bias != nullptr) {
      lower_bias->assign(boxes.size(), Vec());
      for (Eigen::Index i = 0; i < bias.rows(); ++i)
        (*lower_bias)[static_cast<size_t>(i)] = bias.row(i).transpose();
    }
    std::vector<Interval> out;
    out.reserve(boxes.size());
    for (Eigen::Index i = 0; i < k; ++i)
      out.push_back({y.lo.row(i).transpose(), y.hi.row(i).transpose()});
    return out;
  }

 private:
  // Per-box node bounds (BoundsIn::node_bounds; empty: none) as the engine's per-node K x numel
  // bounds; a box that carries none for a node gets an infinite row, which narrows nothing.
  std::vector<Boxes> by_node(const std::vector<std::vector<Interval>>& per_box,
                             Eigen::Index k) const {
    const int size = model_.dag().size();
    std::vector<Boxes> out(static_cast<size_t>(size));
    constexpr double kInf = std::numeric_limits<double>::infinity();
    for (int node = 0; node < size; ++node) {
      const Eigen::Index numel = model_.numel(node);
      Boxes& b = out[static_cast<size_t>(node)];
      bool any = false;
      for (Eigen::Index i = 0; i < k && i < static_cast<Eigen::Index>(per_box.size()); ++i) {
        const std::vector<Interval>& mine = per_box[static_cast<size_t>(i)];
        if (static_cast<int>(mine.size()) != size || mine[node].size() != numel) continue;
        if (!any) b = {Mat::Constant(k, numel, -kInf), Mat::Constant(k, numel, kInf)};
        any = true;
        b.lo.row(i) = mine[node].lo.transpose();
        b.hi.row(i) = mine[node].hi.transpose();
      }
    }
    return out;
  }

  // The engine's per-node bounds back as per-box node bounds (all empty when it gave none).
  static void by_box(const std::vector<Boxes>& nodes, Eigen::Index k,
                     std::vector<std::vector<Interval>>& per_box) {
    per_box.assign(static_cast<size_t>(k), {});
    if (nodes.empty()) return;
    for (Eigen::Index i = 0; i < k; ++i) {
      std::vector<Interval>& mine = per_box[static_cast<size_t>(i)];
      mine.reserve(nodes.size());
      for (const Boxes& b : nodes)
        mine.push_back({b.lo.row(i).transpose(), b.hi.row(i).transpose()});
    }
  }

  Engine& engine_;
  const Model& model_;
  int batch_;
};

}  // namespace

common::Result<VerifyResult> verify_batched(Engine& engine, const Model& model, const Spec& spec,
                                            const Options& options, const SplitOptions& split,
                                            int batch) {
  TorchBounder bounder(engine, model, batch);
  SplitOptions s = split;
  if (!s.full_crown) s.full_crown = [&bounder]() -> BoxBounder* { return &bounder; };
  return verify(model, spec, options, s, &bounder);
}

std::unique_ptr<BoxBounder> box_bounder(Engine& engine, const Model& model, int batch) {
  return std::make_unique<TorchBounder>(engine, model, batch);
}

}  // namespace propdag::torch_engine

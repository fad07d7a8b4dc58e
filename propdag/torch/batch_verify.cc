#include "propdag/torch/batch_verify.h"

#include <algorithm>
#include <vector>

namespace propdag::torch_engine {
namespace {

// verify()'s bound computations on the torch engine, `batch` boxes per engine call.
class TorchBounder : public BoxBounder {
 public:
  TorchBounder(Engine& engine, int batch) : engine_(engine), batch_(std::max(1, batch)) {}

  int batch() const override { return batch_; }

  common::Result<std::vector<Interval>> bound(const std::vector<Interval>& boxes,
                                              const std::vector<Mat>& c, const Options& options,
                                              std::vector<Mat>* lower_coef) override {
    const auto k = static_cast<Eigen::Index>(boxes.size());
    const Eigen::Index n = boxes.empty() ? 0 : boxes.front().size();
    Boxes in{Mat(k, n), Mat(k, n)};
    for (Eigen::Index i = 0; i < k; ++i) {
      in.lo.row(i) = boxes[static_cast<size_t>(i)].lo.transpose();
      in.hi.row(i) = boxes[static_cast<size_t>(i)].hi.transpose();
    }
    ASSIGN_OR_RETURN(Boxes y, engine_.linear_bounds(in, c, options, lower_coef));
    std::vector<Interval> out;
    out.reserve(boxes.size());
    for (Eigen::Index i = 0; i < k; ++i)
      out.push_back({y.lo.row(i).transpose(), y.hi.row(i).transpose()});
    return out;
  }

 private:
  Engine& engine_;
  int batch_;
};

}  // namespace

common::Result<VerifyResult> verify_batched(Engine& engine, const Model& model, const Spec& spec,
                                            const Options& options, const SplitOptions& split,
                                            int batch) {
  TorchBounder bounder(engine, batch);
  return verify(model, spec, options, split, &bounder);
}

}  // namespace propdag::torch_engine

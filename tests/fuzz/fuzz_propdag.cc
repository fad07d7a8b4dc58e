// propdag's model building and one IBP and one CROWN bound over the box [-1, 1]^n (models with
// up to 4,096 inputs). Bounds must come out ordered (lower <= upper) wherever they are numbers.
// CROWN runs with the budget `propdag bounds` would choose for a total of kCrownCost (the CLI's
// total, 1e10, is tens of seconds under ASan: a mutated MaxPool padded by 2^20 took 73 s).
#include <cstdlib>

#include "propdag/engine.h"
#include "propdag/model.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

constexpr double kCrownCost = 1e7;
// Models whose values hold more elements than this in all are skipped: a mutated MaxPool padded by
// 2^20 (5 million outputs) took over 60 s of IBP under ASan on a loaded machine, a libFuzzer
// timeout that is no hang (the release build bounds it in 2 s).
constexpr int64_t kMaxElements = int64_t{1} << 22;

bool small_enough(const propdag::Model& model) {
  int64_t total = 0;
  for (int n = 0; n < model.dag().size(); ++n) {
    total += model.numel(n);
    if (total > kMaxElements) return false;
  }
  return true;
}

void bound(const propdag::Model& model, const propdag::Interval& box, propdag::Method method) {
  propdag::Options options;
  options.method = method;
  options.refine_budget = propdag::default_refine_budget(model, kCrownCost);
  const auto bounds = propdag::output_bounds(model, box, options);
  if (!bounds.ok()) return;
  for (const auto& b : *bounds) {
    if ((b.lo.array() > b.hi.array()).any()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::guarded([&] {
    auto graph = fuzz::load(data, size);
    if (!graph) return;
    const auto model = propdag::Model::build(std::move(*graph));
    if (!model.ok() || model->input_size() > 4096 || !small_enough(*model)) return;
    const auto n = static_cast<Eigen::Index>(model->input_size());
    const propdag::Interval box{propdag::Vec::Constant(n, -1.0), propdag::Vec::Constant(n, 1.0)};
    bound(*model, box, propdag::Method::kIbp);
    bound(*model, box, propdag::Method::kCrown);
  });
}

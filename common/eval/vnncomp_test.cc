// The evaluator on real models: in every VNN-COMP 2024 model, each node whose inputs are all
// constant (initializers, or outputs of nodes folded before it) is evaluated, as slimonnx's
// constant folding does. Every such evaluation must succeed and produce outputs whose dtype
// matches what the model declares (when it declares one). Skips when the models are absent.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "common/eval/eval.h"
#include "common/onnx_io.h"
#include "common/testing.h"

namespace common {
namespace {

struct FoldCount {
  int folded = 0;
  std::vector<std::string> failures;
};

/// Folds the constant part of g in topological order.
FoldCount fold_constants(const Graph& g) {
  FoldCount count;
  std::map<std::string, Tensor> known;
  auto lookup = [&](const std::string& name) -> const Tensor* {
    if (const Tensor* t = g.initializer(name)) return t;
    auto it = known.find(name);
    return it == known.end() ? nullptr : &it->second;
  };
  for (const Node& n : g.nodes) {
    if (!n.domain.empty() || !can_evaluate(n.op_type)) continue;
    std::vector<const Tensor*> args;
    bool all_known = true;
    for (const std::string& in : n.inputs) {
      const Tensor* t = in.empty() ? nullptr : lookup(in);
      all_known = all_known && (in.empty() || t != nullptr);
      args.push_back(t);
    }
    if (!all_known || n.inputs.empty()) continue;
    auto outs = evaluate(g, n, args);
    if (!outs.ok()) {
      count.failures.push_back(outs.error().str());
      continue;
    }
    ++count.folded;
    for (size_t k = 0; k < n.outputs.size() && k < outs->size(); ++k) {
      const Value* v = g.find(n.outputs[k]);
      DType declared = v ? v->dtype : DType::kUndefined;
      if (declared != DType::kUndefined && declared != (*outs)[k].dtype)
        count.failures.push_back(g.error(n, "output dtype differs from the declared one").str());
      known[n.outputs[k]] = std::move((*outs)[k]);
    }
  }
  return count;
}

TEST(EvalVnncompTest, FoldsEveryConstantNodeOfRealModels) {
  auto models = testing::vnncomp_models();
  if (models.empty()) GTEST_SKIP() << "VNN-COMP models not found";
  int folded = 0, loaded = 0;
  for (const std::string& path : models) {
    auto g = load_graph(path);
    if (!g.ok()) continue;  // loading is onnx_io's business, tested there
    ++loaded;
    FoldCount c = fold_constants(*g);
    folded += c.folded;
    for (const std::string& f : c.failures) ADD_FAILURE() << f;
  }
  std::printf("vnncomp: %zu models, %d loaded, %d constant nodes evaluated\n", models.size(),
              loaded, folded);
  EXPECT_GT(loaded, 0);
}

}  // namespace
}  // namespace common

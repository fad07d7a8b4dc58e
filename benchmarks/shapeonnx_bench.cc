// shapeonnx over the VNN-COMP models: load + infer per model, and all models in one process.
// Per-process timing (one `shapeonnx` process per model) is in benchmarks/shapeonnx_processes.sh.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "benchmarks/bench_models.h"
#include "common/onnx_io.h"
#include "common/testing.h"
#include "shapeonnx/infer.h"

namespace {

// Infers shapes of all models, loaded once up front (inference only).
void BM_InferAllModels(benchmark::State& state) {
  std::vector<common::Graph> graphs = benchmarks::load_models(/*infer=*/false);
  if (graphs.empty()) {
    state.SkipWithError("VNN-COMP benchmarks not found");
    return;
  }
  for (auto _ : state) {
    for (common::Graph& g : graphs) {
      auto s = shapeonnx::infer(g);
      benchmark::DoNotOptimize(s);
    }
  }
  state.counters["models"] = static_cast<double>(graphs.size());
}
BENCHMARK(BM_InferAllModels)->Unit(benchmark::kMillisecond);

// Load (decompress + parse + convert) + infer for every model, as the CLI does, in one process.
void BM_LoadAndInferAllModels(benchmark::State& state) {
  const auto models = common::testing::vnncomp_models();
  if (models.empty()) {
    state.SkipWithError("VNN-COMP benchmarks not found");
    return;
  }
  for (auto _ : state) {
    for (const std::string& path : models) {
      auto g = common::load_graph(path);
      if (g.ok()) benchmark::DoNotOptimize(shapeonnx::infer(*g));
    }
  }
  state.counters["models"] = static_cast<double>(models.size());
}
BENCHMARK(BM_LoadAndInferAllModels)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();

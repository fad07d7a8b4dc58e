// slimonnx over the VNN-COMP models, all in one process: the passes alone (models loaded and
// shape-inferred up front), and load + infer + slim + serialize as the CLI does.
// Per-process timing (one `slimonnx` process per model) is benchmarks/slimonnx_bench.sh.
#include <benchmark/benchmark.h>
#include <onnx/onnx_pb.h>

#include "benchmarks/bench_models.h"
#include "common/onnx_io.h"
#include "common/testing.h"
#include "shapeonnx/infer.h"
#include "slimonnx/slim.h"

namespace {

// The passes only, on every model (each iteration slims fresh copies; copying is not timed).
void BM_SlimAllModels(benchmark::State& state) {
  std::vector<common::Graph> graphs = benchmarks::load_models(/*infer=*/true);
  if (graphs.empty()) {
    state.SkipWithError("VNN-COMP benchmarks not found");
    return;
  }
  int64_t before = 0, after = 0;
  for (auto _ : state) {
    for (const common::Graph& original : graphs) {
      state.PauseTiming();
      common::Graph g = original;
      state.ResumeTiming();
      auto report = slimonnx::run(g);
      if (report.ok()) {
        before += report->nodes_before;
        after += report->nodes_after;
      }
    }
  }
  state.counters["models"] = static_cast<double>(graphs.size());
  state.counters["nodes_before"] = static_cast<double>(before) / state.iterations();
  state.counters["nodes_after"] = static_cast<double>(after) / state.iterations();
}
BENCHMARK(BM_SlimAllModels)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

// Load (decompress + parse + convert) + infer + slim + serialize, as the CLI does, in one process.
void BM_LoadSlimSaveAllModels(benchmark::State& state) {
  const auto models = common::testing::vnncomp_models();
  if (models.empty()) {
    state.SkipWithError("VNN-COMP benchmarks not found");
    return;
  }
  for (auto _ : state) {
    for (const std::string& path : models) {
      auto g = common::load_graph(path);
      if (!g.ok() || !shapeonnx::infer(*g).ok() || !slimonnx::run(*g).ok()) continue;
      benchmark::DoNotOptimize(common::to_proto(*g).SerializeAsString());
    }
  }
  state.counters["models"] = static_cast<double>(models.size());
}
BENCHMARK(BM_LoadSlimSaveAllModels)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

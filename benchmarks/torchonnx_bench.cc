// torchonnx over the VNN-COMP models in one process: load + shapes + slim + lower + emit +
// weights bytes per model (what the CLI does, minus the file writes), and the lowering+emitting
// step alone on graphs prepared up front. The generated code's latency against onnxruntime is
// measured by benchmarks/torchonnx_bench.py.
#include <benchmark/benchmark.h>

#include "benchmarks/bench_models.h"
#include "common/onnx_io.h"
#include "common/testing.h"
#include "shapeonnx/infer.h"
#include "torchonnx/convert.h"
#include "torchonnx/emit.h"
#include "torchonnx/lower.h"
#include "torchonnx/weights.h"

namespace {

// The full conversion of every model, as `torchonnx ALL... -o DIR` does it.
void BM_ConvertAllModels(benchmark::State& state) {
  const auto models = common::testing::vnncomp_models();
  if (models.empty()) {
    state.SkipWithError("VNN-COMP benchmarks not found");
    return;
  }
  int64_t converted = 0;
  for (auto _ : state) {
    converted = 0;
    for (const std::string& path : models) {
      auto c = torchonnx::convert_file(path, {});
      if (!c.ok()) continue;
      auto bytes = torchonnx::torch_save_bytes(torchonnx::state_dict(c->module));
      benchmark::DoNotOptimize(bytes);
      ++converted;
    }
  }
  state.counters["models"] = static_cast<double>(models.size());
  state.counters["converted"] = static_cast<double>(converted);
}
BENCHMARK(BM_ConvertAllModels)->Unit(benchmark::kMillisecond)->Iterations(1);

// Lowering + Python emission only, on graphs loaded and inferred once.
void BM_LowerAndEmitAllModels(benchmark::State& state) {
  std::vector<common::Graph> graphs = benchmarks::load_models(/*infer=*/true);
  if (graphs.empty()) {
    state.SkipWithError("VNN-COMP benchmarks not found");
    return;
  }
  for (auto _ : state) {
    for (const common::Graph& g : graphs) {
      auto m = torchonnx::lower(g);
      if (m.ok()) benchmark::DoNotOptimize(torchonnx::emit_python(*m));
    }
  }
  state.counters["models"] = static_cast<double>(graphs.size());
}
BENCHMARK(BM_LowerAndEmitAllModels)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

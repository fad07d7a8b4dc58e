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

// A Loop of N iterations (y <- tanh(y)) unrolled and converted: the cost should grow linearly
// with N (naming every statement, renaming every copy). Reported with its fitted complexity.
void BM_ConvertUnrolledLoop(benchmark::State& state) {
  const std::string text = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3,2] x) => (float[3,2] y) <int64 n = {)" +
                           std::to_string(state.range(0)) + R"(}> {
      y = Loop(n, , x) <body = b (int64 i, bool c_in, float[3,2] v_in) => (bool c_out, float[3,2] v_out) {
        c_out = Identity(c_in)
        v_out = Tanh(v_in)
      }>
    })";
  for (auto _ : state) {
    auto g = common::testing::parse_text(text, "loop.onnx");
    if (!g.ok()) {
      state.SkipWithError(g.error().str().c_str());
      return;
    }
    auto c = torchonnx::convert(std::move(*g), {});
    if (!c.ok()) {
      state.SkipWithError(c.error().str().c_str());
      return;
    }
    benchmark::DoNotOptimize(c->python);
  }
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_ConvertUnrolledLoop)
    ->RangeMultiplier(4)
    ->Range(256, 16384)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();

}  // namespace

BENCHMARK_MAIN();

// propdag: IBP, CROWN and alpha-CROWN time per ACAS Xu network (prop_1 box) and per tllverifybench
// network (the first property listed for it in instances.csv), model loading outside the timing;
// and, per benchmark folder, the time to load its first instance's model (bound rules built) and
// to read its property (load/...). CPU time is the figure to read on a shared machine.
//   propdag_bench [--benchmark_filter=acasxu] ; VNNCOMP_BENCHMARKS overrides the model folder.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "propdag/engine.h"
#include "propdag/model.h"
#include "propdag/vnnlib.h"

namespace {

namespace fs = std::filesystem;

std::string bench_dir() {
  const char* env = std::getenv("VNNCOMP_BENCHMARKS");
  return env ? env : VNNCOMP_BENCHMARKS;
}

std::string on_disk(const std::string& path) {
  if (fs::exists(path)) return path;
  return fs::exists(path + ".gz") ? path + ".gz" : "";
}

// (model, property) pairs: the first property listed per model in a benchmark's instances.csv;
// when that file is missing (the shared folder holds only some), the first property that exists.
std::vector<std::pair<std::string, std::string>> instances(const std::string& bench) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string root = bench_dir() + "/" + bench + "/", fallback;
  std::ifstream csv(root + "instances.csv");
  std::string line;
  while (std::getline(csv, line)) {
    size_t a = line.find(','), b = line.find(',', a + 1);
    if (a == std::string::npos) continue;
    std::string model = on_disk(root + line.substr(0, a));
    std::string spec = on_disk(root + line.substr(a + 1, b - a - 1));
    if (fallback.empty()) fallback = spec;
    if (spec.empty()) spec = fallback;
    bool seen = std::any_of(out.begin(), out.end(), [&](auto& p) { return p.first == model; });
    if (!model.empty() && !spec.empty() && !seen) out.emplace_back(model, spec);
  }
  return out;
}

// A model and its box, loaded on the first run of one of its benchmarks (before the timed loop,
// so that --benchmark_filter skips loading what it does not run).
struct Instance {
  std::string model_path, spec_path;
  std::unique_ptr<propdag::Model> model;
  propdag::Interval box;
  std::string error;

  bool load() {
    if (model || !error.empty()) return error.empty();
    auto m = propdag::Model::load(model_path);
    auto spec = propdag::read_vnnlib(spec_path);
    if (!m.ok() || !spec.ok()) {
      error = !m.ok() ? m.error().str() : spec.error().str();
      return false;
    }
    model = std::make_unique<propdag::Model>(std::move(m).value());
    box = spec->hull();
    return true;
  }
};

void bounds(benchmark::State& state, const std::shared_ptr<Instance>& instance,
            propdag::Method method) {
  if (!instance->load()) {
    state.SkipWithError(instance->error.c_str());
    return;
  }
  propdag::Options options{method};
  options.refine_budget = 2e8;  // as first measured; the library's default is full CROWN
  for (auto _ : state) {
    auto r = propdag::output_bounds(*instance->model, instance->box, options);
    if (!r.ok()) {
      state.SkipWithError(r.error().str().c_str());
      return;
    }
    benchmark::DoNotOptimize(r->front().lo.data());
  }
}

void register_benchmark(const std::string& bench, const std::string& model_path,
                        const std::string& spec_path) {
  auto instance = std::make_shared<Instance>();
  instance->model_path = model_path;
  instance->spec_path = spec_path;
  std::string name = bench + "/" + fs::path(model_path).filename().string();
  for (auto [label, method] :
       {std::pair{"ibp", propdag::Method::kIbp}, std::pair{"crown", propdag::Method::kCrown},
        std::pair{"alpha", propdag::Method::kAlpha}})
    benchmark::RegisterBenchmark((name + "/" + label).c_str(), bounds, instance, method)
        ->Unit(benchmark::kMillisecond);
}

// Model::load (ONNX read, shapes, every node's bound rule) or read_vnnlib, timed whole.
void load_model(benchmark::State& state, const std::string& path) {
  for (auto _ : state) {
    auto m = propdag::Model::load(path);
    if (!m.ok()) {
      state.SkipWithError(m.error().str().c_str());
      return;
    }
    benchmark::DoNotOptimize(m->input_size());
  }
}

void read_property(benchmark::State& state, const std::string& path) {
  for (auto _ : state) {
    auto spec = propdag::read_vnnlib(path);
    if (!spec.ok()) {
      state.SkipWithError(spec.error().str().c_str());
      return;
    }
    benchmark::DoNotOptimize(spec->cases.size());
  }
}

void register_loads() {
  if (!fs::is_directory(bench_dir())) return;
  std::vector<std::string> benches;
  for (const auto& e : fs::directory_iterator(bench_dir()))
    if (fs::exists(e.path() / "instances.csv")) benches.push_back(e.path().filename());
  std::sort(benches.begin(), benches.end());
  for (const std::string& bench : benches) {
    auto found = instances(bench);
    if (found.empty()) continue;
    const auto& [model, spec] = found.front();
    const std::string name = "load/" + bench + "/" + fs::path(model).filename().string();
    benchmark::RegisterBenchmark((name + "/model").c_str(), load_model, model)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((name + "/property").c_str(), read_property, spec)
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  std::string acas = bench_dir() + "/acasxu_2023/";
  std::string prop1 = on_disk(acas + "vnnlib/prop_1.vnnlib");
  if (fs::is_directory(acas + "onnx")) {
    std::vector<std::string> nets;
    for (const auto& e : fs::directory_iterator(acas + "onnx")) nets.push_back(e.path());
    std::sort(nets.begin(), nets.end());
    for (const std::string& net : nets) register_benchmark("acasxu", net, prop1);
  }
  for (const auto& [model, spec] : instances("tllverifybench_2023"))
    register_benchmark("tllverifybench", model, spec);
  register_loads();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

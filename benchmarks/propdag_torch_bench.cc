// propdag's torch engine against its Eigen engine: boxes bounded per second (CROWN bounds of
// every output) on sub-boxes of a model's property box, the Eigen engine one box at a time and
// the torch engine K = 1, 64, 1024 boxes per call on the CPU (K = 1, 4 on the conv nets, where
// one CROWN bound takes seconds); the same for alpha (K = 1, 64 on ACAS Xu);
// and load + one CROWN bound, whole. With --device=cuda the torch engine runs on the GPU, with
// K up to 65536 on ACAS Xu (up to 64 on the conv nets); the Eigen engine stays on the CPU.
//   propdag_torch_bench [--device=cpu|cuda] [--benchmark_filter=acasxu] ; VNNCOMP_BENCHMARKS
//   overrides the folder. benchmarks/propdag_torch_ratio.sh prints the ratios of one run.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/cli.h"
#include "propdag/engine.h"
#include "propdag/model.h"
#include "propdag/torch/torch_engine.h"
#include "propdag/vnnlib.h"

namespace {

namespace fs = std::filesystem;
using propdag::torch_engine::Boxes;

std::string on_disk(const std::string& rel) {
  const char* env = std::getenv("VNNCOMP_BENCHMARKS");
  std::string path = std::string(env ? env : VNNCOMP_BENCHMARKS) + "/" + rel;
  if (fs::exists(path)) return path;
  return fs::exists(path + ".gz") ? path + ".gz" : "";
}

struct Case {
  const char* name;
  const char* onnx;
  const char* vnnlib;
};

const Case kCases[] = {
    {"acasxu", "acasxu_2023/onnx/ACASXU_run2a_1_1_batch_2000.onnx",
     "acasxu_2023/vnnlib/prop_1.vnnlib"},
    {"collins_conv", "collins_rul_cnn_2023/onnx/NN_rul_full_window_20.onnx",
     "collins_rul_cnn_2023/vnnlib/robustness_2perturbations_delta5_epsilon10_w20.vnnlib"},
    {"cgan", "cgan_2023/onnx/cGAN_imgSz32_nCh_1.onnx",
     "cgan_2023/vnnlib/cGAN_imgSz32_nCh_1_prop_0_input_eps_0.010_output_eps_0.015.vnnlib"},
    {"tinyyolo", "yolo_2023/onnx/TinyYOLO.onnx",
     "yolo_2023/vnnlib/TinyYOLO_prop_000034_eps_1_255.vnnlib"},
};

// The torch engine's device (--device=), and the sub-boxes drawn per model: as many as the
// largest K it is benchmarked with.
std::string g_device = "cpu";
std::map<std::string, int> g_pool;

// CROWN with the refinement budget these figures were first measured with (a fixed 2e8; the
// library's default is full CROWN, minutes per box on the conv nets).
propdag::Options crown(propdag::Method method = propdag::Method::kCrown) {
  propdag::Options o;
  o.refine_budget = 2e8;
  o.method = method;
  return o;
}

// A model, its property box and a pool of sub-boxes (each a random quarter-width part of it).
struct Loaded {
  std::unique_ptr<propdag::Model> model;
  propdag::Interval box;
  Boxes pool;
  std::unique_ptr<propdag::torch_engine::Engine> engine, engine32;  // float64, float32
  std::string error;
};

Loaded& loaded(const Case& c) {
  static std::map<std::string, Loaded> cache;
  Loaded& l = cache[c.name];
  if (l.model || !l.error.empty()) return l;
  auto m = propdag::Model::load(on_disk(c.onnx));
  auto s = propdag::read_vnnlib(on_disk(c.vnnlib));
  if (!m.ok() || !s.ok()) {
    l.error = !m.ok() ? m.error().str() : s.error().str();
    return l;
  }
  l.model = std::make_unique<propdag::Model>(std::move(m).value());
  l.box = s->hull();
  const Eigen::Index n = l.box.size();
  const int pool = std::max(g_pool[c.name], 2);
  l.pool = {propdag::Mat(pool, n), propdag::Mat(pool, n)};
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> u(0, 0.75);
  for (int k = 0; k < pool; ++k)
    for (Eigen::Index i = 0; i < n; ++i) {
      const double w = l.box.hi[i] - l.box.lo[i], lo = l.box.lo[i] + u(rng) * w;
      l.pool.lo(k, i) = lo, l.pool.hi(k, i) = lo + 0.25 * w;
    }
  auto e = propdag::torch_engine::create(*l.model, {g_device, false});
  auto e32 = propdag::torch_engine::create(*l.model, {g_device, true});
  if (!e.ok() || !e32.ok()) {
    l.error = !e.ok() ? e.error().str() : e32.error().str();
  } else {
    l.engine = std::move(e).value();
    l.engine32 = std::move(e32).value();
  }
  return l;
}

void eigen_boxes(benchmark::State& state, const Case& c, propdag::Method method) {
  Loaded& l = loaded(c);
  if (!l.error.empty()) return state.SkipWithError(l.error.c_str());
  int k = 0;
  {  // one untimed call, as for the torch engine
    const propdag::Interval box{l.pool.lo.row(0).transpose(), l.pool.hi.row(0).transpose()};
    if (!propdag::output_bounds(*l.model, box, crown(method)).ok())
      return state.SkipWithError("bounds failed");
  }
  for (auto _ : state) {
    propdag::Interval box{l.pool.lo.row(k).transpose(), l.pool.hi.row(k).transpose()};
    auto r = propdag::output_bounds(*l.model, box, crown(method));
    if (!r.ok()) return state.SkipWithError(r.error().str().c_str());
    k = (k + 1) % static_cast<int>(l.pool.lo.rows());
  }
  state.counters["boxes_per_s"] =
      benchmark::Counter(state.iterations(), benchmark::Counter::kIsRate);
}

void torch_boxes(benchmark::State& state, const Case& c, propdag::Method method, bool float32) {
  Loaded& l = loaded(c);
  if (!l.error.empty()) return state.SkipWithError(l.error.c_str());
  const auto k = static_cast<Eigen::Index>(state.range(0));
  Boxes in{l.pool.lo.topRows(k), l.pool.hi.topRows(k)};
  // One untimed call first: LibTorch's first use of each op and allocation size (tens of ms on
  // the conv nets, which are timed over one call) is paid once per process.
  if (!(float32 ? l.engine32 : l.engine)->output_bounds(in, crown(method)).ok())
    return state.SkipWithError("bounds failed");
  for (auto _ : state) {
    auto r = (float32 ? l.engine32 : l.engine)->output_bounds(in, crown(method));
    if (!r.ok()) return state.SkipWithError(r.error().str().c_str());
  }
  state.counters["boxes_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * k), benchmark::Counter::kIsRate);
}

// Model::load + (torch: the engine's preparation) + one CROWN bound of the property box.
void load_crown(benchmark::State& state, const Case& c, bool torch) {
  const std::string onnx = on_disk(c.onnx), spec = on_disk(c.vnnlib);
  if (onnx.empty() || spec.empty()) return state.SkipWithError("model absent");
  auto s = propdag::read_vnnlib(spec);
  if (!s.ok()) return state.SkipWithError(s.error().str().c_str());
  const propdag::Interval box = s->hull();
  for (auto _ : state) {
    auto m = propdag::Model::load(onnx);
    if (!m.ok()) return state.SkipWithError(m.error().str().c_str());
    if (torch) {
      auto e = propdag::torch_engine::create(*m, {g_device, false});
      if (!e.ok()) return state.SkipWithError(e.error().str().c_str());
      auto r = (*e)->output_bounds({box.lo.transpose(), box.hi.transpose()}, crown());
      if (!r.ok()) return state.SkipWithError(r.error().str().c_str());
    } else {
      auto r = propdag::output_bounds(*m, box, crown());
      if (!r.ok()) return state.SkipWithError(r.error().str().c_str());
    }
  }
}

// boxes/ENGINE/MODEL (CROWN) and alpha/ENGINE/MODEL, the torch engine at each of `ks`.
void register_boxes(const Case& c, propdag::Method method, const std::vector<int>& ks) {
  int& pool = g_pool[c.name];
  pool = std::max(pool, *std::max_element(ks.begin(), ks.end()));
  const std::string n = std::string(method == propdag::Method::kAlpha ? "alpha/" : "boxes/");
  const bool acas = std::string(c.name) == "acasxu";
  auto* e = benchmark::RegisterBenchmark((n + "eigen/" + c.name).c_str(), eigen_boxes, c, method)
                ->Unit(benchmark::kMillisecond);
  auto* t =
      benchmark::RegisterBenchmark((n + "torch/" + c.name).c_str(), torch_boxes, c, method, false)
          ->Unit(benchmark::kMillisecond);
  for (int k : ks) t->Arg(k);
  if (acas && method == propdag::Method::kCrown) {  // the largest K again in float32
    benchmark::RegisterBenchmark((n + "torch32/" + c.name).c_str(), torch_boxes, c, method, true)
        ->Unit(benchmark::kMillisecond)
        ->Arg(*std::max_element(ks.begin(), ks.end()))
        ->MinTime(1.0)
        ->UseRealTime();
  }
  // Boxes per second of wall time: on CUDA the host thread waits while the GPU works, and on the
  // CPU the torch engine runs chunks of boxes on LibTorch's threads ($OMP_NUM_THREADS;
  // LibTorch's default: its count of physical cores), while the Eigen engine takes one box at a
  // time on one thread.
  e->UseRealTime(), t->UseRealTime();
  if (acas) {
    e->MinTime(1.0), t->MinTime(1.0);
  } else {  // seconds per box with either engine here: a few boxes, once
    e->Iterations(2), t->Iterations(1);
  }
}

void register_all() {
  const bool gpu = g_device == "cuda";
  for (const Case& c : kCases) {
    const std::string n = c.name;
    if (n == "acasxu") {
      register_boxes(
          c, propdag::Method::kCrown,
          gpu ? std::vector<int>{1, 64, 1024, 4096, 16384, 65536} : std::vector<int>{1, 64, 1024});
      register_boxes(c, propdag::Method::kAlpha,
                     gpu ? std::vector<int>{1, 64, 1024, 16384} : std::vector<int>{1, 64});
    } else if (n != "tinyyolo") {
      register_boxes(c, propdag::Method::kCrown,
                     gpu ? std::vector<int>{1, 4, 16, 64} : std::vector<int>{1, 4});
      register_boxes(c, propdag::Method::kAlpha,
                     gpu ? std::vector<int>{1, 4, 16} : std::vector<int>{1, 4});
    }
    for (bool torch : {false, true})
      benchmark::RegisterBenchmark(
          ("load_crown/" + std::string(torch ? "torch/" : "eigen/") + n).c_str(), load_crown, c,
          torch)
          ->Unit(benchmark::kMillisecond)
          ->Iterations(1);
  }
}

// Takes --device=cpu|cuda out of argv (Google Benchmark rejects flags it does not know).
bool take_device(int* argc, char** argv) {
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    if (std::strncmp(argv[i], "--device=", 9) != 0) {
      argv[out++] = argv[i];
      continue;
    }
    g_device = argv[i] + 9;
    if (g_device != "cpu" && g_device != "cuda") {
      std::fprintf(stderr, "propdag_torch_bench: --device must be cpu or cuda, not '%s'\n",
                   g_device.c_str());
      return false;
    }
  }
  *argc = out;
  return true;
}

}  // namespace

// As the propdag CLI: freed memory is kept for the next allocations (common::keep_freed_memory),
// so that the torch engine's large tensors do not fault their pages in anew on every call.
int main(int argc, char** argv) {
  common::keep_freed_memory();
  if (!take_device(&argc, argv)) return 2;
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

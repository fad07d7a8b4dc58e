// propdag: bounds of a network's outputs over an input box, and sound verification of VNN-LIB
// properties.
//   propdag bounds MODEL (--vnnlib SPEC | --input-box LO,HI) [--method ibp|crown|alpha]
//                  [--alpha-steps N] [--alpha-intermediate] [--refine-budget C] [--json]
//                  [--stats] [ENGINE]
//   propdag verify MODEL SPEC [--method ibp|crown|alpha] [--alpha-steps N] [--alpha-warm-steps N]
//                  [--split N] [--branch input|relu] [--timeout S] [--no-carry-bounds]
//                  [--no-clip] [--no-tune-planes] [--no-alpha-intermediate] [--stats] [--result
//                  FILE] [--check-model ORIGINAL] [ENGINE]
//   MODEL may be - (stdin), e.g. `slimonnx MODEL | propdag verify - SPEC --check-model MODEL`.
//   ENGINE: --engine eigen|torch --device cpu|cuda [--dtype float64|float32] [--batch K]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#ifdef PROPDAG_MIMALLOC
#include <mimalloc.h>
#include <unistd.h>
#endif

#include "common/cli.h"
#include "common/onnx_io.h"
#include "propdag/cli_text.h"
#include "propdag/engine.h"
#include "propdag/model.h"
#include "propdag/torch/batch_verify.h"
#include "propdag/torch/loader.h"
#include "propdag/verify.h"
#include "propdag/vnnlib.h"

namespace {

// verify --engine torch bounds up to this many open boxes per call unless --batch says otherwise:
// on ACAS Xu, K = 64 and 256 bound as many boxes per CPU second as the Eigen engine, K = 1 a fifth.
constexpr int kVerifyBatch = 256;

using common::Result;
using propdag::Interval;
using propdag::cli::parse_box;
using propdag::cli::print_bounds;

struct Args {
  std::string model, spec, box, method = "crown", branch = "input", result, check_model;
  std::string engine = "eigen", device = "cpu", dtype = "float64";
  int batch = 0;  // 0: not given (bounds: 1; verify: kVerifyBatch)
  int alpha_steps = propdag::Options{}.alpha_steps;
  int alpha_warm_steps = propdag::Options{}.alpha_warm_steps;
  double refine_budget = -1;  // negative: the default (kVerifyBudget, or the model's)
  bool json = false, stats = false, verify = false, engine_named = false;
  bool alpha_intermediate = false;  // bounds --alpha-intermediate
  propdag::SplitOptions split;
};

// verify's default refinement budget per pass; bounds takes the model's (default_refine_budget).
constexpr double kVerifyBudget = 2e8;

// `box`: the box bounds is asked for (null for verify).
Result<propdag::Options> options(propdag::Method method, const Args& a, const propdag::Model& model,
                                 const Interval* box) {
  propdag::Options o;
  o.method = method;
  o.alpha_steps = a.alpha_steps;
  o.alpha_warm_steps = a.alpha_warm_steps;
  o.alpha_intermediate = a.alpha_intermediate;
  if (a.refine_budget >= 0) {
    o.refine_budget = a.refine_budget;
  } else if (a.verify || box == nullptr) {
    o.refine_budget = kVerifyBudget;
  } else if (method != propdag::Method::kIbp) {
    ASSIGN_OR_RETURN(o.refine_budget, propdag::default_refine_budget(model, *box));
  }
  return o;
}

// The --stats line on what CROWN cut short (cli::print_report).
void print_report(const Args& a, const propdag::Options& o, const propdag::BoundsReport& r,
                  const propdag::torch_engine::Engine* engine) {
  std::vector<std::string> per_box;
  if (engine != nullptr) per_box = engine->per_box_ops();
  propdag::cli::print_report(a.engine,
                             a.refine_budget >= 0 ? "option"
                             : a.verify           ? "verify"
                                                  : "model",
                             o, r, engine != nullptr ? &per_box : nullptr);
}

Result<std::unique_ptr<propdag::torch_engine::Engine>> torch_engine(const Args& a,
                                                                    const propdag::Model& model) {
  return propdag::torch_engine::load(model, {a.device, a.dtype == "float32"});
}

// The box cut into `a.batch` equal slices along its widest dimension, bounded in one call of the
// torch engine; the bounds printed hold over the whole box (the hull of the slices' bounds).
common::Status torch_bounds(const Args& a, propdag::torch_engine::Engine& engine,
                            const propdag::Model& model, const Interval& box,
                            const propdag::Options& options) {
  const Eigen::Index k = std::max(a.batch, 1);
  propdag::torch_engine::Boxes in{box.lo.transpose().replicate(k, 1),
                                  box.hi.transpose().replicate(k, 1)};
  Eigen::Index dim = 0;
  (box.hi - box.lo).maxCoeff(&dim);
  const double width = box.hi[dim] - box.lo[dim];
  for (Eigen::Index i = 0; i < k; ++i) {
    in.lo(i, dim) = box.lo[dim] + width * static_cast<double>(i) / static_cast<double>(k);
    in.hi(i, dim) = i + 1 == k
                        ? box.hi[dim]
                        : box.lo[dim] + width * static_cast<double>(i + 1) / static_cast<double>(k);
  }
  double start = common::now_ms();
  ASSIGN_OR_RETURN(auto parts, engine.output_bounds(in, options));
  std::vector<Interval> bounds;
  bounds.reserve(parts.size());
  for (const auto& p : parts)
    bounds.push_back(
        {p.lo.colwise().minCoeff().transpose(), p.hi.colwise().maxCoeff().transpose()});
  print_bounds(model, bounds, a.json, common::now_ms() - start);
  return {};
}

common::Status run_bounds(const Args& a) {
  ASSIGN_OR_RETURN(propdag::Method method, propdag::parse_method(a.method));
  ASSIGN_OR_RETURN(propdag::Model model, propdag::Model::load(a.model));
  Interval box;
  if (!a.spec.empty()) {
    ASSIGN_OR_RETURN(propdag::Spec spec, propdag::read_vnnlib(a.spec));
    box = spec.hull();
  } else {
    ASSIGN_OR_RETURN(box, parse_box(a.box, model.input_size()));
  }
  propdag::BoundsReport report;
  ASSIGN_OR_RETURN(propdag::Options o, options(method, a, model, &box));
  o.report = &report;
  std::unique_ptr<propdag::torch_engine::Engine> engine;
  if (a.engine == "torch") {
    ASSIGN_OR_RETURN(engine, torch_engine(a, model));
    RETURN_IF_ERROR(torch_bounds(a, *engine, model, box, o));
  } else {
    double start = common::now_ms();
    ASSIGN_OR_RETURN(std::vector<Interval> bounds, propdag::output_bounds(model, box, o));
    print_bounds(model, bounds, a.json, common::now_ms() - start);
  }
  if (a.stats && method != propdag::Method::kIbp) print_report(a, o, report, engine.get());
  return {};
}

common::Status run_verify(const Args& a) {
  ASSIGN_OR_RETURN(propdag::Method method, propdag::parse_method(a.method));
  ASSIGN_OR_RETURN(propdag::Model model, propdag::Model::load(a.model));
  ASSIGN_OR_RETURN(propdag::Spec spec, propdag::read_vnnlib(a.spec));
  propdag::SplitOptions split = a.split;
  split.branching = a.branch == "relu" ? propdag::Branching::kRelu : propdag::Branching::kInput;
  std::unique_ptr<propdag::torch_engine::Engine> engine;
  if (a.engine == "torch") {
    ASSIGN_OR_RETURN(engine, torch_engine(a, model));
  }
  // Unless --engine eigen is asked for by name, the Eigen engine's search bounds a large input's
  // whole box once with full CROWN on the torch engine (CPU, float64), loaded only when a case
  // asks for it (verify.h: full_crown).
  std::unique_ptr<propdag::torch_engine::Engine> full_engine;
  std::unique_ptr<propdag::BoxBounder> full_bounder;
  bool full_tried = false;
  if (!engine && !a.engine_named) {
    split.full_crown = [&]() -> propdag::BoxBounder* {
      if (!full_tried) {
        full_tried = true;
        // --threads N > 1: LibTorch's threads too (its row chunks side by side).
        const int threads = a.split.threads > 1 ? a.split.threads : 0;
        auto e = propdag::torch_engine::load(model, {"cpu", false, threads});
        if (e.ok()) full_engine = std::move(*e);
        if (e.ok()) full_bounder = propdag::torch_engine::box_bounder(*full_engine, model, 1);
      }
      return full_bounder.get();
    };
  }
  double start = common::now_ms();
  propdag::VerifyResult r;
  propdag::BoundsReport report;
  ASSIGN_OR_RETURN(propdag::Options o, options(method, a, model, nullptr));
  o.report = &report;
  if (engine) {
    ASSIGN_OR_RETURN(r, propdag::torch_engine::verify_batched(
                            *engine, model, spec, o, split, a.batch > 0 ? a.batch : kVerifyBatch));
  } else {
    ASSIGN_OR_RETURN(r, propdag::verify(model, spec, o, split));
  }
  // The crown line comes first: scripts read the last line as the verdict's statistics.
  if (a.stats && method != propdag::Method::kIbp) print_report(a, o, report, engine.get());
  if (a.stats)
    std::fprintf(stderr,
                 "{\"model\": %s, \"spec\": %s, \"cases\": %d, \"cases_proved\": %d, "
                 "\"cases_probed\": %d, \"boxes\": %lld, \"untuned\": %lld, \"ms\": %.3f}\n",
                 common::json_string(a.model).c_str(), common::json_string(a.spec).c_str(), r.cases,
                 r.cases_proved, r.cases_probed, static_cast<long long>(r.boxes),
                 static_cast<long long>(r.untuned), common::now_ms() - start);
  std::optional<propdag::Model> original;
  if (r.falsified && !a.check_model.empty()) {
    ASSIGN_OR_RETURN(original, propdag::Model::load(a.check_model));
    ASSIGN_OR_RETURN(bool confirmed,
                     propdag::confirm_counterexample(*original, spec, r.counterexample));
    if (!confirmed) {
      std::fprintf(stderr, "propdag: the point found on %s misses the property on %s: unknown\n",
                   a.model.c_str(), a.check_model.c_str());
      r.falsified = false;
    }
  }
  if (!a.result.empty()) {
    const bool timed_out = split.seconds > 0 && common::now_ms() - start >= 1000 * split.seconds;
    ASSIGN_OR_RETURN(std::string text,
                     propdag::vnncomp_result(original ? *original : model, r, timed_out));
    RETURN_IF_ERROR(common::write_output_atomic(a.result, text));
  }
  if (r.falsified) {
    std::printf("falsified\n");
    for (Eigen::Index i = 0; i < r.counterexample.size(); ++i)
      std::printf("(X_%lld %.17g)\n", static_cast<long long>(i), r.counterexample[i]);
    return {};
  }
  std::printf("%s\n", r.verified ? "verified" : "unknown");
  return {};
}

}  // namespace

static int main_body(int argc, char** argv) {
  CLI::App app{"propdag: bound propagation (IBP, CROWN) over ONNX models"};
  app.require_subcommand(1);
  Args a;
  CLI::App* bounds = app.add_subcommand("bounds", "print bounds of every output over an input box");
  bounds->add_option("MODEL", a.model, "model (.onnx, .onnx.gz)")->required();
  auto* spec = bounds->add_option("--vnnlib", a.spec, "take the input box from a VNN-LIB file");
  auto* box = bounds->add_option("--input-box", a.box, "the same LO,HI for every input element");
  spec->excludes(box);
  bounds->add_option("--method", a.method,
                     "ibp, crown (default), or alpha (CROWN with tuned ReLU lower lines and the "
                     "tangents of Sigmoid, Tanh, Exp, Softplus and Log)");
  bounds->add_flag("--json", a.json, "print JSON");
  bounds->add_flag("--stats", a.stats,
                   "crown and alpha: print one JSON line {\"crown\": {...}} on stderr: engine, "
                   "refine budget, intermediate nodes refined or left with IBP bounds and why, "
                   "cut_short");
  const CLI::Range kSteps(0, 1000000);
  const std::string steps_help =
      "gradient steps of --method alpha (default " + std::to_string(a.alpha_steps) + ")";
  bounds->add_option("--alpha-steps", a.alpha_steps, steps_help)->check(kSteps);
  bounds->add_flag("--alpha-intermediate", a.alpha_intermediate,
                   "with --method alpha on the Eigen engine: tune the bounds of every "
                   "intermediate node CROWN refines too, not only the outputs' (slower, tighter)");
  const std::string budget_help =
      "CROWN bounds the input of a nonlinear op by a backward pass when its cost (rows x "
      "elements crossed) is at most this; otherwise by IBP, which --stats reports (default: "
      "bounds: the model's, full CROWN where it fits (README); verify: 2e8)";
  bounds->add_option("--refine-budget", a.refine_budget, budget_help)
      ->check(CLI::NonNegativeNumber);
  CLI::App* verify = app.add_subcommand(
      "verify", "prove a VNN-LIB property: prints verified, unknown, or with --split falsified");
  verify->add_option("MODEL", a.model, "model (.onnx, .onnx.gz, - for stdin)")->required();
  verify->add_option("SPEC", a.spec, "property (.vnnlib, .vnnlib.gz)")->required();
  verify->add_option("--method", a.method,
                     "ibp, crown (default), or alpha (CROWN with tuned ReLU lower lines and the "
                     "tangents of Sigmoid, Tanh, Exp, Softplus and Log)");
  verify
      ->add_option(
          "--split", a.split.max_boxes,
          "up to N bound computations per case, splitting what is left open (see --branch) "
          "and checking points of each part for a counterexample (default 1: the whole box "
          "only); a counterexample prints falsified and (X_i value) lines")
      ->check(CLI::PositiveNumber);
  verify
      ->add_option("--branch", a.branch,
                   "with --split: input (default: halve input boxes) or relu (crown and alpha: "
                   "split by the sign of a ReLU's input, with beta-CROWN multipliers under alpha; "
                   "input boxes are halved where no ReLU can be split)")
      ->check(CLI::IsMember({"input", "relu"}));
  verify
      ->add_option("--timeout", a.split.seconds,
                   "seconds for the property, counted once model and property are read "
                   "(default: no limit)")
      ->check(CLI::NonNegativeNumber);
  verify->add_option("--alpha-steps", a.alpha_steps, steps_help)->check(kSteps);
  verify->add_option("--refine-budget", a.refine_budget, budget_help)
      ->check(CLI::NonNegativeNumber);
  verify
      ->add_option("--alpha-warm-steps", a.alpha_warm_steps,
                   "with --split: gradient steps for a box whose slopes start from those of the "
                   "box it was split from (default " +
                       std::to_string(a.alpha_warm_steps) + ")")
      ->check(kSteps);
  verify->add_flag_callback(
      "--no-carry-bounds", [&a] { a.split.carry_bounds = false; },
      "with --split: bound each box alone, not narrowed by the box it was split from (comparison)");
  verify->add_flag_callback(
      "--no-clip", [&a] { a.split.clip_boxes = false; },
      "with --split: boxes not cut to where a counterexample can lie (comparison)");
  verify->add_flag_callback(
      "--no-alpha-intermediate", [&a] { a.split.alpha_intermediate = false; },
      "with --method alpha: a large input's intermediate bounds stay CROWN's (comparison)");
  verify->add_flag_callback(
      "--no-tune-planes", [&a] { a.split.tune_planes = false; },
      "with --method alpha: keep CROWN's McCormick planes of products (comparison)");
  verify
      ->add_option("--threads", a.split.threads,
                   "with --split, on the Eigen engine: threads that search the parts of a small "
                   "input's box side by side, or bound a large input's halves side by side; "
                   "LibTorch's threads for a large input's full CROWN bound (default 1)")
      ->check(CLI::Range(1, 1024));
  verify->add_option("--result", a.result,
                     "also write the verdict as a VNN-COMP result file: unsat (verified), sat "
                     "and the counterexample's ((X_i v) ... (Y_j v)), timeout or unknown");
  verify->add_option("--check-model", a.check_model,
                     "a point found on MODEL counts as a counterexample only if it is one on "
                     "this model too (evaluated in double); otherwise the verdict is unknown. "
                     "For MODEL a rewritten copy of it, e.g. slimonnx's output on stdin");
  verify->add_flag(
      "--stats", a.stats,
      "print on stderr (crown, alpha) bounds' {\"crown\": {...}} line, then {\"model\", "
      "\"spec\", \"cases\", \"cases_proved\", \"cases_probed\", \"boxes\", \"untuned\", "
      "\"ms\"} (README)");
  for (CLI::App* sub : {bounds, verify}) {
    sub->add_option("--engine", a.engine,
                    "eigen (default: one box at a time; unless named, verify bounds a large "
                    "input's whole box once with full CROWN on torch) or torch (LibTorch: "
                    "batches of boxes, CPU or CUDA)")
        ->check(CLI::IsMember({"eigen", "torch"}))
        ->each([&a](const std::string&) { a.engine_named = true; });
    sub->add_option("--device", a.device, "with --engine torch: cpu (default) or cuda")
        ->check(CLI::IsMember({"cpu", "cuda"}));
    sub->add_option("--dtype", a.dtype, "with --engine torch: float64 (default) or float32")
        ->check(CLI::IsMember({"float64", "float32"}));
    sub->add_option("--batch", a.batch,
                    "with --engine torch: boxes per engine call (bounds: the box is cut into K "
                    "slices along its widest dimension, default 1; verify: up to K open boxes "
                    "at a time, default 256)")
        ->check(CLI::Range(1, 1 << 20));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "propdag: %s\n", common::one_line(e.what()).c_str());
    return 2;
  }
  if (bounds->parsed() && a.spec.empty() && a.box.empty()) {
    std::fprintf(stderr, "propdag: bounds needs --vnnlib SPEC or --input-box LO,HI\n");
    return 2;
  }
  if (a.engine == "eigen" && (a.device != "cpu" || a.dtype != "float64" || a.batch != 0)) {
    std::fprintf(stderr, "propdag: --device, --dtype and --batch need --engine torch\n");
    return 2;
  }
  if (a.alpha_intermediate && (a.engine != "eigen" || a.method != "alpha")) {
    std::fprintf(stderr, "propdag: --alpha-intermediate needs --method alpha on --engine eigen\n");
    return 2;
  }
  return common::run_guarded("propdag", a.model, [&] {
    a.verify = verify->parsed();
    common::Status s = bounds->parsed() ? run_bounds(a) : run_verify(a);
    return s.ok() ? 0 : common::report_error("propdag", s.error());
  });
}

int main(int argc, char** argv) {
#ifdef PROPDAG_MIMALLOC
  // A call into mimalloc keeps the library linked (it replaces malloc process-wide when loaded).
  if (mi_version() <= 0) return 2;
  // As keep_freed_memory for glibc: freed memory stays committed for the next allocations.
  // mimalloc hands freed segments back to the system after a delay, and the next tensors of a
  // large CROWN pass fault their pages in again: TinyYOLO's full CROWN bound on a VM where page
  // faults are dear took 3.6 M minor faults and over 200 s, against 190 k and 40 s this way.
  mi_option_disable(mi_option_allow_decommit);
  // Blocks too large for a segment (the torch engine's im2col buffers in a float64 convolution)
  // are mapped and unmapped one by one unless an arena holds them: one mapping of half the
  // machine's memory, whose pages are backed as they are touched (where the mapping is refused,
  // e.g. under a smaller RLIMIT_AS, blocks are mapped one by one as before). cGAN 32x32x1
  // prop_3: 973 k -> 179 k minor page faults, 26.5 s -> 21-24 s.
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0)
    mi_reserve_os_memory(static_cast<size_t>(pages / 2) * static_cast<size_t>(page), true, false);
#else
  common::keep_freed_memory();
#endif
  return common::run_guarded("propdag", "", [&] { return main_body(argc, argv); });
}

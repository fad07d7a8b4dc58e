// Helpers shared by the torch engine's tests: an engine on the test device, a shared model's path,
// an elementwise comparison, a shared model with its property, and the comparison of both
// engines' bounds on one box.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "propdag/engine.h"
#include "propdag/model.h"
#include "propdag/torch/torch_engine.h"
#include "propdag/vnnlib.h"

namespace propdag::torch_engine::torch_test {

/// The device the engine's tests run on: $PROPDAG_TEST_DEVICE ("cuda" on a GPU machine), else
/// "cpu". The Eigen engine, the reference they compare with, always runs on the CPU.
inline std::string test_device() {
  const char* d = std::getenv("PROPDAG_TEST_DEVICE");
  return d && *d ? d : "cpu";
}

inline std::unique_ptr<Engine> engine_for(const Model& model, bool float32 = false) {
  auto e = create(model, {test_device(), float32});
  EXPECT_TRUE(e.ok()) << e.error().str();
  return std::move(e).value();
}

/// `p`, or `p` + ".gz", whichever exists; "" when neither does.
inline std::string existing(const std::filesystem::path& p) {
  if (std::filesystem::exists(p)) return p.string();
  if (std::filesystem::exists(p.string() + ".gz")) return p.string() + ".gz";
  return "";
}

/// |a - b| <= tol * max(1, |a|, |b|) elementwise.
inline void expect_close(const Vec& a, const Vec& b, double tol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (Eigen::Index i = 0; i < a.size(); ++i) {
    const double scale = std::max({1.0, std::abs(a[i]), std::abs(b[i])});
    ASSERT_LE(std::abs(a[i] - b[i]), tol * scale)
        << what << " element " << i << ": " << a[i] << " vs " << b[i];
  }
}

/// The model and property at `onnx` and `vnnlib` (each possibly gzipped); nullopt when either
/// file is absent (the caller skips). Load failures are test failures.
inline std::optional<std::pair<Model, Spec>> load_shared(const std::filesystem::path& onnx,
                                                         const std::filesystem::path& vnnlib) {
  const std::string model_path = existing(onnx), spec_path = existing(vnnlib);
  if (model_path.empty() || spec_path.empty()) return std::nullopt;
  auto model = Model::load(model_path);
  auto spec = read_vnnlib(spec_path);
  EXPECT_TRUE(model.ok()) << model.error().str();
  EXPECT_TRUE(spec.ok()) << spec.error().str();
  if (!model.ok() || !spec.ok()) return std::nullopt;
  return std::make_pair(std::move(*model), std::move(*spec));
}

/// ACAS Xu network `net` ("1_1") and property `prop` ("prop_2") of the benchmarks folder.
inline std::optional<std::pair<Model, Spec>> load_acasxu(const std::filesystem::path& benchmarks,
                                                         const std::string& net,
                                                         const std::string& prop) {
  const std::filesystem::path acas = benchmarks / "acasxu_2023";
  return load_shared(acas / "onnx" / ("ACASXU_run2a_" + net + "_batch_2000.onnx"),
                     acas / "vnnlib" / (prop + ".vnnlib"));
}

/// One box as a batch of one.
inline Boxes one(const Interval& box) { return {box.lo.transpose(), box.hi.transpose()}; }

/// A box of n elements, each centred at a draw of U(-1, 1) with a radius of `radius` |U(-1, 1)|.
inline Interval random_box(Eigen::Index n, double radius, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  Interval box{Vec(n), Vec(n)};
  for (Eigen::Index i = 0; i < n; ++i) {
    const double c = u(rng), r = radius * std::abs(u(rng));
    box.lo[i] = c - r, box.hi[i] = c + r;
  }
  return box;
}

/// The refinement budget of the comparisons on shared models: full CROWN (the default) takes
/// minutes on cGAN, so these compare the budgeted CROWN and check that both engines report the
/// same nodes cut short.
constexpr double kBudget = 2e8;

/// Eigen's and the torch engine's bounds of every output, for ibp and crown, and what each
/// reports cut short (Options::report).
inline void expect_equal_bounds(const Model& model, const Interval& box, const std::string& name) {
  std::unique_ptr<Engine> engine = engine_for(model);
  for (Method m : {Method::kIbp, Method::kCrown}) {
    Options opt;
    opt.method = m;
    opt.refine_budget = kBudget;
    BoundsReport eigen_report, torch_report;
    opt.report = &eigen_report;
    auto ref = output_bounds(model, box, opt);
    ASSERT_TRUE(ref.ok()) << ref.error().str();
    opt.report = &torch_report;
    auto got = engine->output_bounds(one(box), opt);
    ASSERT_TRUE(got.ok()) << got.error().str();
    EXPECT_EQ(eigen_report.boxes, torch_report.boxes) << name;
    EXPECT_EQ(eigen_report.refined, torch_report.refined) << name;
    EXPECT_EQ(eigen_report.ibp_budget, torch_report.ibp_budget) << name;
    EXPECT_EQ(eigen_report.elements_ibp, torch_report.elements_ibp) << name;
    EXPECT_EQ(eigen_report.outputs_forward, torch_report.outputs_forward) << name;
    EXPECT_EQ(eigen_report.largest_skipped, torch_report.largest_skipped) << name;
    for (size_t o = 0; o < ref->size(); ++o) {
      const std::string what = name + (m == Method::kIbp ? " ibp" : " crown");
      expect_close((*ref)[o].lo, (*got)[o].lo.row(0).transpose(), 1e-9, what + " lo");
      expect_close((*ref)[o].hi, (*got)[o].hi.row(0).transpose(), 1e-9, what + " hi");
    }
  }
}

}  // namespace propdag::torch_engine::torch_test

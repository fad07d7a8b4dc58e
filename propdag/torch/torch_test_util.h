// Helpers shared by the torch engine's tests: an engine on the test device, a shared model's path,
// an elementwise comparison, and a shared model with its property.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>

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

}  // namespace propdag::torch_engine::torch_test

// shapeonnx over the ONNX backend node tests: shapes equal ONNX's inference and the expected
// outputs.
#include <gtest/gtest.h>
#include <onnx/common/version.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/onnx_io.h"
#include "common/testing.h"
#include "shapeonnx/control_flow/control_flow.h"
#include "shapeonnx/crosscheck.h"
#include "shapeonnx/infer.h"
#include "shapeonnx/rules/rules.h"

namespace shapeonnx {
namespace {

namespace fs = std::filesystem;

// Shapes of test_data_set_0/output_*.pb, in output order.
std::vector<common::Dims> expected_output_shapes(const std::string& dir) {
  std::vector<common::Dims> out;
  for (int i = 0;; ++i) {
    const fs::path p = fs::path(dir) / "test_data_set_0" / ("output_" + std::to_string(i) + ".pb");
    std::ifstream f(p, std::ios::binary);
    if (!f) break;
    onnx::TensorProto t;
    if (!t.ParseFromIstream(&f)) break;
    out.emplace_back(t.dims().begin(), t.dims().end());
  }
  return out;
}

// Small inputs of test_data_set_0 (shape parameters such as axes, repeats, k, scales), by name.
std::map<std::string, common::Tensor> small_inputs(const std::string& dir, const common::Graph& g) {
  std::map<std::string, common::Tensor> out;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const fs::path p = fs::path(dir) / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb");
    std::ifstream f(p, std::ios::binary);
    onnx::TensorProto t;
    if (!f || !t.ParseFromIstream(&f)) continue;
    auto tensor = common::tensor_from_proto(t);
    if (tensor.ok() && tensor->numel() <= 64) out[g.inputs[i]] = std::move(tensor).value();
  }
  return out;
}

// Sequence, optional and string tensors are outside what the suite handles (numeric tensors only).
bool numeric_tensors_only(const common::Graph& g) {
  std::vector<std::string> io = g.inputs;
  io.insert(io.end(), g.outputs.begin(), g.outputs.end());
  for (const std::string& name : io) {
    const common::DType t = g.find(name)->dtype;
    if (t == common::DType::kUndefined || t == common::DType::kString) return false;
  }
  for (const common::Node& n : g.nodes) {
    if (n.attr_int("to", 1) == static_cast<int64_t>(common::DType::kString)) return false;
  }
  return true;
}

// Whether the model's default-domain opset is newer than the installed ONNX library knows.
bool newer_than_onnx(const common::Graph& g) {
  const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto range = known.find("");
  return range != known.end() && g.opset("") > range->second.second;
}

// Ops of a control-flow body (Constant is folded on load), nested bodies included.
bool body_ops_have_rules(const common::Graph& g) {
  for (const common::Node& n : g.nodes) {
    const bool known = n.op_type == "Constant" || is_expanded(n.domain, n.op_type) ||
                       (n.domain.empty() && find_rule(n.op_type));
    if (!known) return false;
    for (const common::Attribute& a : n.attrs) {
      if (a.g && !body_ops_have_rules(*a.g)) return false;
    }
  }
  return true;
}

// Control flow counts when its bodies' ops have rules: it is unrolled (--unroll) first.
bool all_ops_have_rules(const common::Graph& g) {
  for (const common::Node& n : g.nodes) {
    if (is_expanded(n.domain, n.op_type)) {
      for (const common::Attribute& a : n.attrs) {
        if (a.type == common::AttrType::kGraph && (!a.g || !body_ops_have_rules(*a.g))) {
          return false;
        }
      }
      continue;
    }
    const bool has_rule = find_rule(n.op_type) != nullptr;
    if (!has_rule || !(n.domain.empty() || is_training_op(n.domain, n.op_type))) return false;
  }
  return true;
}

TEST(NodeTests, ShapesAgreeWithOnnxAndExpectedOutputs) {
  const auto tests = common::testing::node_tests();
  if (tests.empty()) GTEST_SKIP() << "ONNX backend node tests not installed";
  int run = 0, no_rule = 0, unloadable = 0, compared = 0, mismatches = 0, expected_checked = 0;
  int onnx_too_old = 0;
  std::vector<std::string> failures;
  for (const std::string& dir : tests) {
    auto g = common::load_graph(dir + "/model.onnx");
    if (!g.ok() || !numeric_tensors_only(*g)) {
      ++unloadable;
      continue;
    }
    if (!all_ops_have_rules(*g)) {
      ++no_rule;
      continue;
    }
    ++run;
    const std::string name = fs::path(dir).filename().string();
    auto s = infer_with_control_flow(*g, {.input_values = small_inputs(dir, *g)}, /*unroll=*/true);
    if (!s.ok()) {
      failures.push_back(name + ": " + s.error().str());
      continue;
    }
    const CrossCheck cc = cross_check(*g);
    compared += cc.compared;
    const auto expected = expected_output_shapes(dir);
    std::set<std::string> as_expected;  // outputs whose shape equals the test data's
    for (size_t i = 0; i < expected.size() && i < g->outputs.size(); ++i) {
      ++expected_checked;
      const common::Value* v = g->find(g->outputs[i]);
      if (!v || !v->shape || *v->shape != expected[i]) {
        failures.push_back(name + ": output " + std::to_string(i) + " differs from test data");
      } else {
        as_expected.insert(g->outputs[i]);
      }
    }
    // ONNX's inference applies its newest schema to opsets it does not know (AveragePool-19's
    // dilations are ignored): there, an output that disagrees with it but equals the test
    // data's shape is ONNX's error, not ours.
    const bool excused = newer_than_onnx(*g) &&
                         std::all_of(cc.mismatched.begin(), cc.mismatched.end(),
                                     [&](const std::string& v) { return as_expected.count(v); });
    if (cc.mismatches && excused) {
      onnx_too_old += cc.mismatches;
      continue;
    }
    mismatches += cc.mismatches;
    if (cc.mismatches) failures.push_back(name + ": " + cc.first_mismatch);
  }
  std::printf(
      "node tests: %zu total, %d run, %d without rules, %d non-numeric; onnx compared %d, "
      "mismatches %d (and %d where ONNX %s does not know the opset and ours equal the test data); "
      "expected outputs checked %d; failures %zu\n",
      tests.size(), run, no_rule, unloadable, compared, mismatches, onnx_too_old,
      onnx::LAST_RELEASE_VERSION, expected_checked, failures.size());
  for (const std::string& f : failures) std::printf("  FAIL %s\n", f.c_str());
  EXPECT_EQ(mismatches, 0);
  EXPECT_TRUE(failures.empty());
}

}  // namespace
}  // namespace shapeonnx

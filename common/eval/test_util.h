// Helpers for the evaluator's hand-computed tests: run one node on given inputs.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/eval/eval.h"

namespace common::evaltest {

/// An integer attribute.
inline Attribute ai(const char* name, int64_t v) { return Attribute::make_int(name, v); }

inline Tensor ints(const std::vector<int64_t>& v, Dims dims, DType t = DType::kInt64) {
  return Tensor::from_int64(v, std::move(dims), t);
}
inline Tensor floats(const std::vector<float>& v, Dims dims) {
  return Tensor::from_floats(v, std::move(dims));
}
inline Tensor bools(const std::vector<int64_t>& v, Dims dims) {
  return Tensor::from_int64(v, std::move(dims), DType::kBool);
}

using Inputs = std::vector<std::optional<Tensor>>;

/// One node `op` with inputs x0.. (an input given as nullopt is omitted) and `n_out` outputs,
/// evaluated under the given default-domain opset.
inline Result<std::vector<Tensor>> go(const std::string& op, const Inputs& inputs,
                                      const std::vector<Attribute>& attrs = {}, int64_t opset = 17,
                                      size_t n_out = 1) {
  Graph g;
  g.source = "t.onnx";
  g.opsets = {{"", opset}};
  Node n;
  n.name = "n";
  n.op_type = op;
  n.attrs = attrs;
  std::vector<const Tensor*> ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    n.inputs.push_back(inputs[i] ? "x" + std::to_string(i) : "");
    ptrs.push_back(inputs[i] ? &*inputs[i] : nullptr);
  }
  for (size_t i = 0; i < n_out; ++i) n.outputs.push_back("y" + std::to_string(i));
  return evaluate(g, n, ptrs);
}

/// The single output; fails the test (and returns an empty tensor) on error.
inline Tensor one(const std::string& op, const Inputs& inputs,
                  const std::vector<Attribute>& attrs = {}, int64_t opset = 17) {
  auto r = go(op, inputs, attrs, opset);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().str());
  return r.ok() && !r->empty() ? (*r)[0] : Tensor{};
}

/// The error text; fails the test when evaluation succeeds.
inline std::string err(const std::string& op, const Inputs& inputs,
                       const std::vector<Attribute>& attrs = {}, int64_t opset = 17) {
  auto r = go(op, inputs, attrs, opset);
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error().str();
}

}  // namespace common::evaltest

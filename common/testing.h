// Helpers shared by tests: where the VNN-COMP models and the ONNX backend node tests are.
#pragma once

#include <string>
#include <vector>

#include "common/error.h"
#include "common/graph.h"

namespace common::testing {

/// The VNN-COMP benchmark folder: $VNNCOMP_BENCHMARKS if set, else the configured default
/// (../shared/vnncomp2024/benchmarks). Empty if it does not exist.
std::string vnncomp_dir();
/// Every distinct `*.onnx` / `*.onnx.gz` file under vnncomp_dir(), sorted; empty if absent. With
/// $SUITE_LARGE_MODELS=largest (scripts/test.sh sets it), of the models over 64 MiB decompressed
/// only the largest of each benchmark folder (in ../shared: 135 of 146 models, and 0.6 of the
/// 2.2 GiB). Then with $SUITE_TEST_SAMPLE=N (N > 1), every N-th of them from the first: the
/// sanitized run of the unit tests (benchmarks/sanitize.sh) takes a spread of benchmarks.
std::vector<std::string> vnncomp_models();
/// The ONNX backend node test folder ($ONNX_NODE_TESTS or /usr/share/libonnx-testdata/data/node);
/// empty if absent.
std::string node_tests_dir();
/// Sub-folders of node_tests_dir() (each has model.onnx and test_data_set_*), sorted.
std::vector<std::string> node_tests();
/// A model in ONNX text syntax (onnx/defs/parser.h), converted to the IR.
Result<Graph> parse_text(const std::string& text, const std::string& source = "test.onnx");
/// A model in ONNX text syntax serialized as protobuf bytes.
std::string text_to_bytes(const std::string& text);
/// A fresh empty temporary folder for one test; removed with its contents when the process exits.
std::string temp_dir(const std::string& tag);

}  // namespace common::testing

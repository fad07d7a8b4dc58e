// Every op handler against the ONNX backend node tests of its op: each supported test model is
// converted (without slimonnx, so the handler itself is exercised), and one Python process runs
// all generated modules on the tests' inputs and compares with the expected outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "common/cli.h"
#include "common/onnx_io.h"
#include "common/proto_convert.h"
#include "common/testing.h"
#include "onnx/onnx-data.pb.h"
#include "onnx/onnx_pb.h"
#include "shapeonnx/rules/rules.h"
#include "torchonnx/convert.h"
#include "torchonnx/lower.h"
#include "torchonnx/node_test_skips.h"
#include "torchonnx/test_util.h"

namespace torchonnx {
namespace {

// What a sequence or optional input of a test data set holds: its tensors (none for an absent
// optional).
struct Held {
  std::vector<common::Tensor> tensors;
  bool present = true;
};

common::Result<Held> read_held(const std::string& path, common::PortKind kind) {
  ASSIGN_OR_RETURN(std::string bytes, common::read_input(path));
  onnx::SequenceProto seq;
  Held held;
  if (kind == common::PortKind::kOptional || kind == common::PortKind::kOptionalSequence) {
    onnx::OptionalProto opt;
    if (!opt.ParseFromString(bytes)) return common::Error{path, "", "", "bad OptionalProto"};
    if (opt.has_tensor_value()) {
      ASSIGN_OR_RETURN(common::Tensor t, common::tensor_from_proto(opt.tensor_value()));
      held.tensors.push_back(std::move(t));
      return held;
    }
    held.present = opt.has_sequence_value();
    seq = opt.sequence_value();
  } else if (!seq.ParseFromString(bytes)) {
    return common::Error{path, "", "", "bad SequenceProto"};
  }
  for (const onnx::TensorProto& tp : seq.tensor_values()) {
    ASSIGN_OR_RETURN(common::Tensor t, common::tensor_from_proto(tp));
    held.tensors.push_back(std::move(t));
  }
  return held;
}

std::string input_path(const std::string& dir, size_t i) {
  return dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb";
}

// A sequence or optional input frozen to its data: initializers, and SequenceConstruct (or
// SequenceEmpty) and/or Optional nodes at the front of the graph.
void freeze_port(common::Graph& graph, const std::string& name, common::PortKind kind,
                 const Held& held) {
  auto node = [&](const std::string& op, std::vector<std::string> inputs,
                  const std::string& output) {
    common::Node n;
    n.name = output + "/frozen";
    n.op_type = op;
    n.inputs = std::move(inputs);
    n.outputs = {output};
    return n;
  };
  std::vector<std::string> tensors;
  for (size_t k = 0; k < held.tensors.size(); ++k) {
    tensors.push_back(name + "/frozen" + std::to_string(k));
    graph.initializers[tensors.back()] = held.tensors[k];
  }
  std::vector<common::Node> nodes;
  if (kind == common::PortKind::kSequence) {
    nodes.push_back(node(tensors.empty() ? "SequenceEmpty" : "SequenceConstruct", tensors, name));
  } else if (!held.present) {
    nodes.push_back(node("Optional", {}, name));
  } else if (kind == common::PortKind::kOptional) {
    nodes.push_back(node("Optional", tensors, name));
  } else {
    const std::string seq = name + "/frozen_sequence";
    nodes.push_back(node(tensors.empty() ? "SequenceEmpty" : "SequenceConstruct", tensors, seq));
    nodes.push_back(node("Optional", {seq}, name));
  }
  graph.nodes.insert(graph.nodes.begin(), nodes.begin(), nodes.end());
  graph.port_types.erase(name);
}

// Node tests pass shape-defining operands (axes, pads, target shapes, K, weights) as graph
// inputs, while torchonnx needs them static. Those inputs are frozen to their values in
// test_data_set_0: first every input but the first, then all of them.
common::Status freeze_inputs(common::Graph& graph, const std::string& dir, size_t keep) {
  std::vector<std::string> kept;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    if (i < keep) {
      kept.push_back(graph.inputs[i]);
      continue;
    }
    if (auto port = graph.port_types.find(graph.inputs[i]); port != graph.port_types.end()) {
      const common::PortKind kind = port->second.kind;
      ASSIGN_OR_RETURN(Held held, read_held(input_path(dir, i), kind));
      freeze_port(graph, graph.inputs[i], kind, held);
      continue;
    }
    auto bytes = common::read_input(input_path(dir, i));
    if (!bytes.ok()) return bytes.status();
    onnx::TensorProto proto;
    if (!proto.ParseFromString(*bytes)) return common::Error{dir, "", "", "bad input .pb"};
    auto tensor = common::tensor_from_proto(proto);
    if (!tensor.ok()) return tensor.status();
    graph.initializers[graph.inputs[i]] = std::move(*tensor);
  }
  graph.inputs = kept;
  graph.rebuild_index();
  return {};
}

// Sequence and optional inputs that stay fed: their lengths, element shapes and presence come
// from test_data_set_0.
common::Status describe_ports(const common::Graph& graph, const std::string& dir,
                              ConvertOptions& options) {
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const std::string& name = graph.inputs[i];
    auto port = graph.port_types.find(name);
    if (port == graph.port_types.end()) continue;
    ASSIGN_OR_RETURN(Held held, read_held(input_path(dir, i), port->second.kind));
    if (!held.present) {
      options.absent_inputs.insert(name);
      continue;
    }
    std::vector<common::Dims> shapes;
    for (const common::Tensor& t : held.tensors) shapes.push_back(t.dims);
    if (port->second.kind == common::PortKind::kOptional) {
      options.input_shapes[name] = shapes.at(0);
    } else {
      options.sequence_inputs[name] = shapes;
    }
  }
  return {};
}

struct Conversion {
  common::Result<Converted> result = common::Error{};
  size_t fed = 0;  // inputs still fed at run time
};

Conversion convert_node_test(const std::string& dir) {
  Conversion first;
  for (size_t keep : {SIZE_MAX, size_t(1), size_t(0)}) {
    auto graph = common::load_graph(dir + "/model.onnx");
    if (!graph.ok()) return {graph.status(), 0};
    if (keep != SIZE_MAX) {
      if (keep >= graph->inputs.size()) continue;
      if (auto s = freeze_inputs(*graph, dir, keep); !s.ok()) return {s, 0};
    }
    Conversion c;
    c.fed = graph->inputs.size();
    ConvertOptions options;
    options.slim = false;
    if (auto s = describe_ports(*graph, dir, options); !s.ok()) return {s, 0};
    c.result = convert(std::move(*graph), options);
    if (c.result.ok()) return c;
    if (keep == SIZE_MAX) first = std::move(c);
  }
  return first;  // the error of the model as it is
}

bool supported(const std::string& domain, const std::string& op_type) {
  static const std::vector<std::string> ops = supported_ops();
  const bool default_domain = domain.empty() || domain == "ai.onnx";
  return (default_domain || shapeonnx::is_training_op(domain, op_type)) &&
         std::binary_search(ops.begin(), ops.end(), op_type);
}

std::string op_key(const std::string& domain, const std::string& op_type) {
  return domain.empty() || domain == "ai.onnx" ? op_type : domain + "::" + op_type;
}

// The first op without a handler in a control-flow body (Constant is folded on load), nested
// bodies included; empty when every op has one.
std::string body_unsupported_op(const common::Graph& g) {
  for (const common::Node& n : g.nodes) {
    if (n.op_type != "Constant" && !supported(n.domain, n.op_type)) {
      return op_key(n.domain, n.op_type);
    }
    for (const common::Attribute& a : n.attrs) {
      std::string op = a.g ? body_unsupported_op(*a.g) : "";
      if (!op.empty()) return op;
    }
  }
  return "";
}

// Why the model's test cannot run: the first op without a handler, a non-tensor input or output,
// or no nodes; empty when it can.
std::string unsupported_op(const common::Graph& graph) {
  // Map and other non-tensor inputs or outputs: forward takes tensors, lists of them (ONNX
  // sequences) and None (absent optionals) only.
  for (const auto* names : {&graph.inputs, &graph.outputs}) {
    for (const std::string& name : *names) {
      const common::Value* v = graph.find(name);
      if (graph.port_types.count(name)) continue;
      if (!v || v->dtype == common::DType::kUndefined) return "<non-tensor input or output>";
    }
  }
  for (const common::Node& n : graph.nodes) {
    if (!supported(n.domain, n.op_type)) return op_key(n.domain, n.op_type);
    for (const common::Attribute& a : n.attrs) {
      if (a.type != common::AttrType::kGraph) continue;
      if (!a.g) return "<missing body>";
      if (std::string op = body_unsupported_op(*a.g); !op.empty()) return op;
    }
  }
  return graph.nodes.empty() ? "<no nodes>" : "";
}

std::string basename(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// Converts every test folder whose ops all have handlers (not skip-listed), runs the generated
// modules on the folders' data in one Python process, and reports the counts under `label`.
void check_suite(const std::vector<std::string>& tests, const std::string& tag,
                 const std::string& label) {
  const std::string out = common::testing::temp_dir(tag);
  int unsupported = 0, skipped = 0, converted_count = 0;
  std::vector<std::string> convert_failures;
  std::map<std::string, int> missing;  // ops without a handler and without a reason
  std::string manifest = "[";
  for (const std::string& dir : tests) {
    const std::string name = basename(dir);
    auto graph = common::load_graph(dir + "/model.onnx");
    const std::string op = graph.ok() ? unsupported_op(*graph) : "<not loadable>";
    if (!op.empty()) {
      ++unsupported;
      if (op[0] != '<' && !ops_without_lowering().count(op)) ++missing[op];
      continue;
    }
    if (node_test_skips().count(name)) {
      ++skipped;
      continue;
    }
    Conversion converted = convert_node_test(dir);
    common::Status written = converted.result.ok() ? write_converted(*converted.result, out, name)
                                                   : converted.result.status();
    if (!written.ok()) {
      convert_failures.push_back(name + ": " + written.error().str());
      continue;
    }
    ++converted_count;
    if (manifest.size() > 1) manifest += ",\n";
    manifest += "{\"name\": " + common::json_string(name) +
                ", \"test_dir\": " + common::json_string(dir) +
                ", \"py\": " + common::json_string(out + "/" + name + ".py") +
                ", \"pth\": " + common::json_string(out + "/" + name + ".pth") +
                ", \"fed\": " + std::to_string(converted.fed) + "}";
  }
  std::ofstream(out + "/manifest.json") << manifest << "]\n";
  std::string output;
  const int rc = testing::run_command(testing::python() + " " + testing::tools_dir() +
                                          "/run_node_tests.py " + out + "/manifest.json",
                                      &output);
  std::cout << tests.size() << " " << label << ": " << unsupported << " use ops without a handler, "
            << skipped << " skip-listed, " << convert_failures.size()
            << " failed to convert; generated Python: "
            << output.substr(output.rfind("node tests:")) << std::flush;
  for (const std::string& f : convert_failures) ADD_FAILURE() << "conversion: " << f;
  for (const auto& [op, count] : missing) {
    ADD_FAILURE() << op << " (" << count << " tests) has no handler and no reason in "
                  << "ops_without_lowering()";
  }
  EXPECT_GT(converted_count, 0);
  EXPECT_EQ(rc, 0) << output;
  // Every generated file is free of unused imports and variables (when pyflakes is installed).
  std::string lint;
  if (testing::run_command(testing::python() + " -c 'import pyflakes'", &lint) == 0) {
    EXPECT_EQ(testing::run_command(testing::python() + " -m pyflakes " + out, &lint), 0) << lint;
  }
}

TEST(NodeTests, GeneratedPythonMatchesBackendData) {
  const std::vector<std::string> tests = common::testing::node_tests();
  if (tests.empty()) GTEST_SKIP() << "ONNX backend node tests not found";
  check_suite(tests, "torchonnx_node_tests", "node tests");
}

// The other model folders of the same test data: modules exported from PyTorch
// (pytorch-converted, pytorch-operator) and small multi-node models (simple).
TEST(NodeTests, GeneratedPythonMatchesPytorchExportsAndSimpleModels) {
  const std::string node_dir = common::testing::node_tests_dir();
  if (node_dir.empty()) GTEST_SKIP() << "ONNX backend node tests not found";
  const std::filesystem::path data = std::filesystem::path(node_dir).parent_path();
  std::vector<std::string> tests;
  for (const char* sub : {"pytorch-converted", "pytorch-operator", "simple"}) {
    std::error_code ec;
    if (!std::filesystem::is_directory(data / sub, ec)) continue;
    for (const auto& e : std::filesystem::directory_iterator(data / sub)) {
      if (std::filesystem::exists(e.path() / "model.onnx")) tests.push_back(e.path().string());
    }
  }
  if (tests.empty()) GTEST_SKIP() << "no pytorch-converted/pytorch-operator/simple folders";
  std::sort(tests.begin(), tests.end());
  check_suite(tests, "torchonnx_model_tests", "exported and simple models");
}

}  // namespace
}  // namespace torchonnx

// The module IR: what a generated nn.Module holds (layers, buffers) and computes (statements).
#pragma once

#include <string>
#include <vector>

#include "common/graph.h"
#include "common/tensor.h"
#include "torchonnx/pyexpr.h"

namespace torchonnx {

/// A named tensor of the state_dict, relative to its owner ("weight", "running_mean").
struct Param {
  std::string name;
  common::Tensor tensor;
};

/// A weight-bearing submodule: `self.<attr> = <ctor>`, with its state_dict entries.
struct Layer {
  std::string attr;  ///< identifier from the module's attribute scope ("conv1")
  py::Expr ctor;     ///< constructor call of an `nn.` class ("nn.Conv2d(3, 16, kernel_size=3)")
  std::vector<Param> params;
  /// The ONNX initializers the params were made from, in input order ("" when none): nodes
  /// that read the same initializers the same way share one layer.
  std::string sources;
};

/// A constant tensor registered with `register_buffer` and read as `self.<attr>`.
struct Buffer {
  std::string attr;
  common::Tensor tensor;
  /// A weight (nn.Parameter, in parameters()) rather than a buffer; same state_dict entry.
  bool parameter = false;
};

/// One line of forward: `<targets> = <expr>  # <comment>`. `targets` holds one identifier, or
/// several (tuple unpacking, "_" for unused outputs).
struct Statement {
  std::vector<std::string> targets;
  py::Expr expr;
  std::string comment;  ///< raw text (an ONNX node name); escaped by the emitter
};

/// A helper method of the generated class, for lowerings that need a loop (the general recurrent
/// forms): `def <name>(self, <params>):` with a docstring and body lines (Python, indented relative
/// to the method body). Forward statements call it as `self.<name>(...)`.
struct Method {
  std::string name;  ///< identifier from the module's attribute scope ("lstm_steps1")
  std::vector<std::string> params;
  std::string doc;  ///< one line of plain text (no ONNX names: those stay in escaped comments)
  std::vector<std::string> lines;
  py::Namespaces uses;  ///< the modules the lines use, stated by the code that wrote them
};

/// A graph input or output as the header describes it.
struct Port {
  std::string onnx_name;  ///< raw ONNX name (data, escaped on output)
  std::string dtype;      ///< ONNX spelling ("float")
  std::vector<int64_t> dims;
  bool batched = false;  ///< dim 0 is a batch dimension of any size
  /// A tensor; a sequence (a Python list of `elements`) or an optional (one element, or Python
  /// None when absent).
  common::PortKind kind = common::PortKind::kTensor;
  bool present = true;  ///< an optional: whether it holds a value
  std::vector<Port> elements;
};

struct Module {
  std::string class_name = "Model";
  /// Why inputs keep their declared batch size although the model has a batch dimension (the
  /// node where the batch leaves dim 0), or empty.
  std::string fixed_batch;
  std::string source;  ///< input file named in the header
  std::vector<Port> input_ports, output_ports;
  std::vector<std::string> inputs;  ///< forward's parameter names, in graph order
  std::vector<Layer> layers;
  std::vector<Buffer> buffers;
  std::vector<Statement> body;
  std::vector<Method> methods;
  std::vector<std::string> outputs;  ///< returned expressions, in graph-output order
  std::vector<std::string> imports;  ///< modules of custom-op functions (`import <module>`)
};

}  // namespace torchonnx

// The one IR shared by every tool: values, nodes, initializers, in topological order.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/attribute.h"
#include "common/error.h"
#include "common/tensor.h"

namespace common {

constexpr int64_t kUnknownDim = -1;

/// A tensor-valued edge of the graph: produced once, consumed many times.
struct Value {
  std::string name;
  DType dtype = DType::kUndefined;
  std::optional<Dims> shape;  ///< nullopt: rank unknown; a dim of kUnknownDim: size unknown
  std::vector<std::string>
      dim_params;               ///< symbolic names per dim ("" when none); empty or rank-sized
  std::optional<Tensor> known;  ///< value known at compile time (shape tensors, constants)
  int producer = -1;            ///< index into Graph::nodes; -1 for inputs and initializers
  std::vector<int> consumers;   ///< node indices, ascending, one entry per use

  /// Rank and every dim known.
  bool is_static() const;
};

/// An operator application. An empty input name stands for an omitted optional input.
struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  ///< "" for the default ONNX domain
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<Attribute> attrs;
  std::string doc_string;

  const Attribute* attr(std::string_view name) const;
  bool has_attr(std::string_view name) const { return attr(name) != nullptr; }
  int64_t attr_int(std::string_view name, int64_t fallback) const;
  float attr_float(std::string_view name, float fallback) const;
  std::string attr_string(std::string_view name, std::string_view fallback) const;
  std::vector<int64_t> attr_ints(std::string_view name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(std::string_view name, std::vector<float> fallback = {}) const;
  const Tensor* attr_tensor(std::string_view name) const;
  /// Replaces an attribute of the same name or appends it.
  void set_attr(Attribute a);
  void remove_attr(std::string_view name);
  /// Input i present (in range and not the empty name).
  bool has_input(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
  bool operator==(const Node& other) const = default;
};

/// ONNX types a graph input or output may have besides tensor.
enum class PortKind { kTensor, kSequence, kOptional, kOptionalSequence };

/// The declared type of a sequence or optional graph input/output: its kind and its tensors'
/// element type and shape.
struct PortType {
  PortKind kind = PortKind::kTensor;
  DType dtype = DType::kUndefined;
  std::optional<Dims> shape;
  bool operator==(const PortType& other) const = default;
};

/// A sequence or optional graph input/output resolved at compile time: the tensors it holds, in
/// order (each one a graph input or output of its own); none for an absent optional.
struct PackedPort {
  std::string name;
  PortKind kind = PortKind::kTensor;
  std::vector<std::string> tensors;
  bool present = true;  ///< an optional: whether it holds a value
};

struct OpsetId {
  std::string domain;
  int64_t version = 0;
  bool operator==(const OpsetId&) const = default;
};

/// A model, or the body of a graph attribute (Attribute::g: If, Loop, Scan), which may read
/// values of the enclosing graphs by name and keeps its nodes in the order of the file.
/// Nodes are kept in a deterministic topological order (see topo.h).
class Graph {
 public:
  // Model-level data preserved from load to save. A body copies the enclosing model's source,
  // ir_version and opsets on load; its name and doc_string are the GraphProto's own.
  std::string source;  ///< where it came from (for error messages)
  int64_t ir_version = 8;
  std::vector<OpsetId> opsets;
  std::string producer_name, producer_version, model_domain, doc_string, name;
  int64_t model_version = 0;
  std::vector<std::pair<std::string, std::string>> metadata;

  std::vector<Node> nodes;
  std::vector<std::string> inputs;   ///< graph inputs, initializers excluded, in graph order
  std::vector<std::string> outputs;  ///< graph outputs in graph order
  std::map<std::string, Tensor> initializers;
  std::unordered_map<std::string, Value> values;  ///< every named value, initializers included
  /// Inputs and outputs that are not tensors (sequences, optionals), as the model declares them.
  std::map<std::string, PortType> port_types;
  /// The interface in ONNX order once sequence/optional ports are resolved into tensors
  /// (shapeonnx::unpack_ports); `inputs` and `outputs` then list those tensors. Empty otherwise.
  std::vector<PackedPort> packed_inputs, packed_outputs;

  /// Opset version imported for a domain ("" and "ai.onnx" are the same); 0 if not imported.
  int64_t opset(std::string_view domain = "") const;

  /// The value of that name, created (undefined dtype, unknown shape) if absent.
  Value& value(const std::string& name);
  const Value* find(std::string_view name) const;
  const Tensor* initializer(std::string_view name) const;
  bool is_initializer(std::string_view name) const { return initializer(name) != nullptr; }
  /// Initializer, or a value whose content is known (shape-tensor propagation).
  const Tensor* constant(std::string_view name) const;

  /// Recomputes every Value's producer and consumers from `nodes`; call after changing nodes.
  void rebuild_index();
  /// Drops values that are no longer used by any node, input, output or initializer.
  void prune_values();
  /// A value or node name not used yet, starting with `prefix`.
  std::string fresh_name(std::string_view prefix);

  /// Error located at a node of this graph.
  Error error(const Node& node, std::string message) const;
  Error error(std::string message) const;

 private:
  uint64_t fresh_counter_ = 0;
};

/// Same content as a file would hold it: name, doc string, nodes, interface, initializers, port
/// types and the declared type of every value (indexes, known contents and model data ignored).
bool same_graph(const Graph& a, const Graph& b);

}  // namespace common

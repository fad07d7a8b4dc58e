// Conversions between ONNX protobuf messages and the IR's pieces.
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>

#include "common/attribute.h"
#include "common/error.h"
#include "common/graph.h"

namespace common {

/// An AttributeProto as an Attribute (tensors and graphs converted; a graph attribute inherits
/// the source, IR version and opsets of `parent`, the graph whose node holds it).
Result<Attribute> attribute_from_proto(const onnx::AttributeProto& proto,
                                       const Graph* parent = nullptr);
void attribute_to_proto(const Attribute& attr, onnx::AttributeProto* proto);
/// Fills a Value's dtype, shape and dim params from a ValueInfoProto (non-tensor types ignored).
void value_from_proto(const onnx::ValueInfoProto& proto, Value& value);
void value_to_proto(const Value& value, onnx::ValueInfoProto* proto);
/// The sequence or optional type of a graph input/output; nullopt for tensors and for types the
/// IR cannot hold (maps, sparse tensors, nested sequences).
std::optional<PortType> port_type_from_proto(const onnx::TypeProto& type);
/// Writes a sequence or optional port's type (named `name`) into `proto`.
void port_type_to_proto(const std::string& name, const PortType& type, onnx::ValueInfoProto* proto);
/// A graph attribute's GraphProto (If/Loop/Scan body) as a Graph, as from_proto reads a model's
/// graph: Constant nodes become initializers, unnamed nodes get deterministic names, nested graph
/// attributes recurse; nodes keep the file's order. `parent` (may be null) lends its model data.
Result<Graph> subgraph_from_proto(const onnx::GraphProto& g, const Graph* parent);
/// The inverse: the body's name, doc string, interface, initializers, nodes and value infos.
void subgraph_to_proto(const Graph& graph, onnx::GraphProto* g);

}  // namespace common

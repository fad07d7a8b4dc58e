// Conversions between ONNX protobuf messages and the IR's pieces.
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>

#include "common/attribute.h"
#include "common/error.h"
#include "common/graph.h"

namespace common {

/// An AttributeProto as an Attribute (tensor attributes converted, graph attributes serialized).
Result<Attribute> attribute_from_proto(const onnx::AttributeProto& proto);
void attribute_to_proto(const Attribute& attr, onnx::AttributeProto* proto);
/// Fills a Value's dtype, shape and dim params from a ValueInfoProto (non-tensor types ignored).
void value_from_proto(const onnx::ValueInfoProto& proto, Value& value);
void value_to_proto(const Value& value, onnx::ValueInfoProto* proto);
/// The sequence or optional type of a graph input/output; nullopt for tensors and for types the
/// IR cannot hold (maps, sparse tensors, nested sequences).
std::optional<PortType> port_type_from_proto(const onnx::TypeProto& type);
/// Writes a sequence or optional port's type (named `name`) into `proto`.
void port_type_to_proto(const std::string& name, const PortType& type, onnx::ValueInfoProto* proto);
/// Appends the nodes of `g` to `graph` (unnamed nodes get deterministic names); Constant nodes
/// become initializers instead. Graph attributes of the nodes stay serialized.
Status nodes_from_proto(onnx::GraphProto& g, Graph& graph);

}  // namespace common

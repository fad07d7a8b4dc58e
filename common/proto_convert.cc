#include "common/proto_convert.h"

#include <cstring>
#include <memory>
#include <type_traits>

#include "common/onnx_io.h"

namespace common {

namespace {

// Converts typed repeated-field data into little-endian bytes of `t.dtype`.
template <class Field>
void pack(const Field& field, Tensor& t) {
  const Dims flat{static_cast<int64_t>(field.size())};
  using Elem = std::decay_t<decltype(*field.begin())>;
  // int32_data of a 16-bit float holds its bit patterns; float values (a damaged file) are
  // converted as values below, never cast to integers.
  const bool half = t.dtype == DType::kFloat16 || t.dtype == DType::kBFloat16;
  if (half && !std::is_floating_point_v<Elem>) {
    std::vector<int64_t> bits(field.begin(), field.end());
    t.raw = Tensor::from_int64(bits, flat, DType::kUInt16).raw;
    return;
  }
  if constexpr (std::is_floating_point_v<Elem>) {
    t.raw = Tensor::from_double(std::vector<double>(field.begin(), field.end()), flat, t.dtype).raw;
  } else {
    std::vector<int64_t> v;
    v.reserve(field.size());
    for (auto x : field) v.push_back(static_cast<int64_t>(x));
    t.raw = Tensor::from_int64(v, flat, t.dtype).raw;
  }
}

}  // namespace

Result<Tensor> tensor_from_proto(const onnx::TensorProto& proto) {
  Error err{"", "", "", "tensor '" + proto.name() + "': "};
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    err.message += "external data is not supported";
    return err;
  }
  if (!is_known_dtype(proto.data_type()) || proto.data_type() == onnx::TensorProto::STRING) {
    err.message += "unsupported element type " + std::to_string(proto.data_type());
    return err;
  }
  Tensor t;
  t.dtype = static_cast<DType>(proto.data_type());
  t.dims.assign(proto.dims().begin(), proto.dims().end());
  const int64_t n = t.numel();
  if (n < 0) {
    err.message += "invalid dims";
    return err;
  }
  if (proto.has_raw_data()) {
    // The caller may own the proto and have moved raw_data into us; copy otherwise.
    t.raw = proto.raw_data();
  } else if (proto.float_data_size()) {
    pack(proto.float_data(), t);
  } else if (proto.int32_data_size()) {
    pack(proto.int32_data(), t);
  } else if (proto.int64_data_size()) {
    pack(proto.int64_data(), t);
  } else if (proto.double_data_size()) {
    pack(proto.double_data(), t);
  } else if (proto.uint64_data_size()) {
    pack(proto.uint64_data(), t);
  }
  const size_t expected = static_cast<size_t>(n) * dtype_size(t.dtype);
  if (t.raw.size() != expected) {
    err.message +=
        "holds " + std::to_string(t.raw.size()) + " bytes, dims need " + std::to_string(expected);
    return err;
  }
  return t;
}

void tensor_to_proto(Tensor tensor, onnx::TensorProto* proto) {
  proto->set_data_type(static_cast<int32_t>(tensor.dtype));
  proto->clear_dims();
  for (int64_t d : tensor.dims) proto->add_dims(d);
  proto->mutable_raw_data()->swap(tensor.raw);
}

Result<Attribute> attribute_from_proto(const onnx::AttributeProto& p, const Graph* parent) {
  Attribute a;
  a.name = p.name();
  if (!p.ref_attr_name().empty()) {
    return Error{"", "", "", "attribute '" + p.name() + "' refers to a function attribute"};
  }
  auto type = p.type();
  if (type == onnx::AttributeProto::UNDEFINED) {  // old models: infer from the field set
    if (p.has_f())
      type = onnx::AttributeProto::FLOAT;
    else if (p.has_i())
      type = onnx::AttributeProto::INT;
    else if (p.has_s())
      type = onnx::AttributeProto::STRING;
    else if (p.has_t())
      type = onnx::AttributeProto::TENSOR;
    else if (p.floats_size())
      type = onnx::AttributeProto::FLOATS;
    else if (p.strings_size() && !p.ints_size())
      type = onnx::AttributeProto::STRINGS;
    else
      type = onnx::AttributeProto::INTS;
  }
  switch (type) {
    case onnx::AttributeProto::FLOAT:
      a.type = AttrType::kFloat;
      a.f = p.f();
      break;
    case onnx::AttributeProto::INT:
      a.type = AttrType::kInt;
      a.i = p.i();
      break;
    case onnx::AttributeProto::STRING:
      a.type = AttrType::kString;
      a.s = p.s();
      break;
    case onnx::AttributeProto::FLOATS:
      a.type = AttrType::kFloats;
      a.floats.assign(p.floats().begin(), p.floats().end());
      break;
    case onnx::AttributeProto::INTS:
      a.type = AttrType::kInts;
      a.ints.assign(p.ints().begin(), p.ints().end());
      break;
    case onnx::AttributeProto::STRINGS:
      a.type = AttrType::kStrings;
      a.strings.assign(p.strings().begin(), p.strings().end());
      break;
    case onnx::AttributeProto::TENSOR: {
      a.type = AttrType::kTensor;
      ASSIGN_OR_RETURN(a.t, tensor_from_proto(p.t()));
      break;
    }
    case onnx::AttributeProto::GRAPH: {
      a.type = AttrType::kGraph;
      auto body = subgraph_from_proto(p.g(), parent);
      if (!body.ok()) {  // located at the node holding the attribute by the caller
        const Error& e = body.error();
        const std::string where = e.node.empty() ? p.name() : p.name() + "/" + e.node;
        return Error{e.file, "", "", where + ": " + e.message};
      }
      a.g = std::make_shared<const Graph>(std::move(body).value());
      break;
    }
    case onnx::AttributeProto::TYPE_PROTO:
      a.type = AttrType::kTypeProto;
      a.s = p.tp().SerializeAsString();
      break;
    default:
      return Error{"", "", "", "attribute '" + p.name() + "' has an unsupported type"};
  }
  return a;
}

void attribute_to_proto(const Attribute& a, onnx::AttributeProto* p) {
  p->set_name(a.name);
  switch (a.type) {
    case AttrType::kFloat:
      p->set_type(onnx::AttributeProto::FLOAT);
      p->set_f(a.f);
      break;
    case AttrType::kInt:
      p->set_type(onnx::AttributeProto::INT);
      p->set_i(a.i);
      break;
    case AttrType::kString:
      p->set_type(onnx::AttributeProto::STRING);
      p->set_s(a.s);
      break;
    case AttrType::kFloats:
      p->set_type(onnx::AttributeProto::FLOATS);
      for (float f : a.floats) p->add_floats(f);
      break;
    case AttrType::kInts:
      p->set_type(onnx::AttributeProto::INTS);
      for (int64_t i : a.ints) p->add_ints(i);
      break;
    case AttrType::kStrings:
      p->set_type(onnx::AttributeProto::STRINGS);
      for (const std::string& s : a.strings) p->add_strings(s);
      break;
    case AttrType::kTensor:
      p->set_type(onnx::AttributeProto::TENSOR);
      if (a.t) tensor_to_proto(*a.t, p->mutable_t());
      break;
    case AttrType::kGraph:
      p->set_type(onnx::AttributeProto::GRAPH);
      if (a.g) subgraph_to_proto(*a.g, p->mutable_g());
      break;
    case AttrType::kTypeProto:
      p->set_type(onnx::AttributeProto::TYPE_PROTO);
      p->mutable_tp()->ParseFromString(a.s);
      break;
  }
}

void value_from_proto(const onnx::ValueInfoProto& proto, Value& value) {
  if (!proto.type().has_tensor_type()) return;
  const auto& tt = proto.type().tensor_type();
  if (tt.elem_type() != 0) value.dtype = static_cast<DType>(tt.elem_type());
  if (!tt.has_shape()) return;
  Dims dims;
  std::vector<std::string> params;
  bool any_param = false;
  for (const auto& d : tt.shape().dim()) {
    dims.push_back(d.has_dim_value() ? d.dim_value() : kUnknownDim);
    params.push_back(d.has_dim_param() ? d.dim_param() : "");
    any_param = any_param || d.has_dim_param();
  }
  value.shape = std::move(dims);
  value.dim_params = any_param ? std::move(params) : std::vector<std::string>{};
}

void value_to_proto(const Value& value, onnx::ValueInfoProto* proto) {
  proto->set_name(value.name);
  auto* tt = proto->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(value.dtype));
  if (!value.shape) return;
  auto* shape = tt->mutable_shape();
  for (size_t i = 0; i < value.shape->size(); ++i) {
    auto* d = shape->add_dim();
    const int64_t v = (*value.shape)[i];
    if (v >= 0) {
      d->set_dim_value(v);
    } else if (i < value.dim_params.size() && !value.dim_params[i].empty()) {
      d->set_dim_param(value.dim_params[i]);
    }
  }
}

namespace {

// Element type and shape of a tensor type (unknown dims as kUnknownDim).
void tensor_type_into(const onnx::TypeProto::Tensor& tt, PortType& out) {
  if (tt.elem_type() != 0) out.dtype = static_cast<DType>(tt.elem_type());
  if (!tt.has_shape()) return;
  Dims dims;
  for (const auto& d : tt.shape().dim())
    dims.push_back(d.has_dim_value() ? d.dim_value() : kUnknownDim);
  out.shape = std::move(dims);
}

void tensor_type_to(const PortType& t, onnx::TypeProto::Tensor* tt) {
  tt->set_elem_type(static_cast<int32_t>(t.dtype));
  if (!t.shape) return;
  auto* shape = tt->mutable_shape();
  for (int64_t d : *t.shape) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
  }
}

}  // namespace

std::optional<PortType> port_type_from_proto(const onnx::TypeProto& type) {
  PortType out;
  if (type.has_sequence_type() && type.sequence_type().elem_type().has_tensor_type()) {
    out.kind = PortKind::kSequence;
    tensor_type_into(type.sequence_type().elem_type().tensor_type(), out);
    return out;
  }
  if (!type.has_optional_type()) return std::nullopt;
  const onnx::TypeProto& elem = type.optional_type().elem_type();
  if (elem.has_tensor_type()) {
    out.kind = PortKind::kOptional;
    tensor_type_into(elem.tensor_type(), out);
    return out;
  }
  if (elem.has_sequence_type() && elem.sequence_type().elem_type().has_tensor_type()) {
    out.kind = PortKind::kOptionalSequence;
    tensor_type_into(elem.sequence_type().elem_type().tensor_type(), out);
    return out;
  }
  return std::nullopt;
}

void port_type_to_proto(const std::string& name, const PortType& type,
                        onnx::ValueInfoProto* proto) {
  proto->set_name(name);
  onnx::TypeProto* t = proto->mutable_type();
  switch (type.kind) {
    case PortKind::kTensor:
      tensor_type_to(type, t->mutable_tensor_type());
      break;
    case PortKind::kSequence:
      tensor_type_to(type, t->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type());
      break;
    case PortKind::kOptional:
      tensor_type_to(type, t->mutable_optional_type()->mutable_elem_type()->mutable_tensor_type());
      break;
    case PortKind::kOptionalSequence:
      tensor_type_to(type, t->mutable_optional_type()
                               ->mutable_elem_type()
                               ->mutable_sequence_type()
                               ->mutable_elem_type()
                               ->mutable_tensor_type());
      break;
  }
}

}  // namespace common

#include "tests/fuzz/onnx_mutator.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <array>
#include <limits>
#include <random>
#include <string>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace fuzz {
namespace {

using Rng = std::mt19937;

// Values that break arithmetic: zero, negatives, 2^31 and 2^40 (elements past any memory), 2^62.
constexpr std::array<int64_t, 12> kInts = {
    0,  1,       2,         3,         -1,        -2,
    -7, 1 << 20, 1LL << 31, 1LL << 40, 1LL << 62, std::numeric_limits<int64_t>::min()};
constexpr std::array<const char*, 16> kOps = {
    "Add",  "Relu", "Conv",    "Gemm",   "MatMul", "Reshape", "Transpose", "Concat",
    "Loop", "If",   "Softmax", "Gather", "Slice",  "Resize",  "Cast",      "ConvTranspose"};

template <class T>
T& pick(google::protobuf::RepeatedPtrField<T>& items, Rng& rng) {
  return items[static_cast<int>(rng() % items.size())];
}

int64_t any_int(Rng& rng) { return kInts[rng() % kInts.size()]; }

// Every graph of the model: the main graph and the bodies of If/Loop/Scan attributes, nested.
void collect(onnx::GraphProto* g, std::vector<onnx::GraphProto*>& out) {
  out.push_back(g);
  for (auto& n : *g->mutable_node()) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) collect(a.mutable_g(), out);
      for (auto& sub : *a.mutable_graphs()) collect(&sub, out);
    }
  }
}

// A declared dim of an input, output or value_info becomes an odd value or a symbol.
bool mutate_dim(onnx::ModelProto&, onnx::GraphProto& g, Rng& rng) {
  std::vector<onnx::TensorShapeProto*> shapes;
  for (auto* list : {g.mutable_input(), g.mutable_output(), g.mutable_value_info()}) {
    for (auto& v : *list) {
      auto* t = v.mutable_type();
      if (t->has_tensor_type() && t->tensor_type().has_shape()) {
        shapes.push_back(t->mutable_tensor_type()->mutable_shape());
      }
    }
  }
  if (shapes.empty()) return false;
  auto* shape = shapes[rng() % shapes.size()];
  if (shape->dim_size() == 0 || rng() % 8 == 0) {
    shape->add_dim()->set_dim_value(any_int(rng));  // a rank the model does not expect
    return true;
  }
  auto& d = pick(*shape->mutable_dim(), rng);
  if (rng() % 4 == 0) {
    d.set_dim_param("N");
  } else {
    d.set_dim_value(any_int(rng));
  }
  return true;
}

// An initializer's dims no longer match its data, or its dtype changes under the same bytes.
bool mutate_initializer(onnx::ModelProto&, onnx::GraphProto& g, Rng& rng) {
  if (g.initializer_size() == 0) return false;
  auto& t = pick(*g.mutable_initializer(), rng);
  if (rng() % 2 && t.dims_size()) {
    t.set_dims(static_cast<int>(rng() % t.dims_size()), any_int(rng));
  } else {
    t.set_data_type(static_cast<int32_t>(rng() % 25));
  }
  return true;
}

bool mutate_attribute_value(onnx::AttributeProto& a, Rng& rng) {
  switch (a.type()) {
    case onnx::AttributeProto::INT:
      a.set_i(any_int(rng));
      return true;
    case onnx::AttributeProto::INTS:
      if (a.ints_size() == 0 || rng() % 4 == 0) {
        a.add_ints(any_int(rng));
      } else {
        a.set_ints(static_cast<int>(rng() % a.ints_size()), any_int(rng));
      }
      return true;
    case onnx::AttributeProto::FLOAT: {
      constexpr std::array<float, 5> floats = {0.0f, -1.0f, 1e30f,
                                               std::numeric_limits<float>::quiet_NaN(),
                                               std::numeric_limits<float>::infinity()};
      a.set_f(floats[rng() % floats.size()]);
      return true;
    }
    case onnx::AttributeProto::STRING:
      a.set_s(rng() % 2 ? "" : "SAME_UPPER\n\x01");
      return true;
    case onnx::AttributeProto::TENSOR:
      a.mutable_t()->set_data_type(static_cast<int32_t>(rng() % 25));
      return true;
    default: {  // a declared type that does not match the value held
      constexpr std::array<onnx::AttributeProto::AttributeType, 4> types = {
          onnx::AttributeProto::INT, onnx::AttributeProto::FLOATS, onnx::AttributeProto::STRING,
          onnx::AttributeProto::GRAPH};
      a.set_type(types[rng() % types.size()]);
      return true;
    }
  }
}

// An attribute's value goes out of range, or the attribute is dropped.
bool mutate_attribute(onnx::ModelProto&, onnx::GraphProto& g, Rng& rng) {
  std::vector<onnx::NodeProto*> with;
  for (auto& n : *g.mutable_node()) {
    if (n.attribute_size()) with.push_back(&n);
  }
  if (with.empty()) return false;
  auto* n = with[rng() % with.size()];
  if (rng() % 8 == 0) {
    n->mutable_attribute()->DeleteSubrange(static_cast<int>(rng() % n->attribute_size()), 1);
    return true;
  }
  return mutate_attribute_value(pick(*n->mutable_attribute(), rng), rng);
}

// Every value name the graph defines (inputs, initializers, node outputs).
std::vector<std::string> names(const onnx::GraphProto& g) {
  std::vector<std::string> out;
  for (const auto& v : g.input()) out.push_back(v.name());
  for (const auto& t : g.initializer()) out.push_back(t.name());
  for (const auto& n : g.node()) out.insert(out.end(), n.output().begin(), n.output().end());
  return out;
}

// An edge moves: a node reads another value (a later one makes a cycle), a dangling name or
// nothing; or a node's output takes a name already defined (a duplicate).
bool mutate_edge(onnx::ModelProto&, onnx::GraphProto& g, Rng& rng) {
  if (g.node_size() == 0) return false;
  auto& n = pick(*g.mutable_node(), rng);
  std::vector<std::string> all = names(g);
  all.insert(all.end(), {"", "dangling"});
  const std::string& name = all[rng() % all.size()];
  if (n.output_size() && rng() % 4 == 0) {
    n.set_output(static_cast<int>(rng() % n.output_size()), name);
  } else if (n.input_size() && rng() % 4) {
    n.set_input(static_cast<int>(rng() % n.input_size()), name);
  } else {
    n.add_input(name);
  }
  return true;
}

// A graph input's element type, or a Cast's target type, becomes another (or an invalid) dtype.
bool mutate_dtype(onnx::ModelProto&, onnx::GraphProto& g, Rng& rng) {
  if (g.input_size() == 0) return false;
  auto& v = pick(*g.mutable_input(), rng);
  v.mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(rng() % 25));
  return true;
}

// A node's op type, domain or arity changes, or a node is removed or doubled.
bool mutate_node(onnx::ModelProto&, onnx::GraphProto& g, Rng& rng) {
  if (g.node_size() == 0) return false;
  const int i = static_cast<int>(rng() % g.node_size());
  switch (rng() % 4) {
    case 0:
      g.mutable_node(i)->set_op_type(kOps[rng() % kOps.size()]);
      return true;
    case 1:
      g.mutable_node()->DeleteSubrange(i, 1);
      return true;
    case 2:
      *g.add_node() = g.node(i);
      return true;
    default:
      g.mutable_node(i)->set_domain(rng() % 2 ? "com.unknown" : "ai.onnx.ml");
      return true;
  }
}

bool mutate_opset(onnx::ModelProto& m, onnx::GraphProto&, Rng& rng) {
  constexpr std::array<int64_t, 8> versions = {1, 6, 9, 11, 13, 18, 21, 1000};
  if (m.opset_import_size() == 0 || rng() % 8 == 0) {
    m.clear_opset_import();
    return true;
  }
  m.mutable_opset_import(0)->set_version(versions[rng() % versions.size()]);
  return true;
}

// The registry of structural mutations, tried from a random one until one applies.
using Mutation = bool (*)(onnx::ModelProto&, onnx::GraphProto&, Rng&);
constexpr std::array<Mutation, 7> kMutations = {mutate_dim,  mutate_initializer, mutate_attribute,
                                                mutate_edge, mutate_dtype,       mutate_node,
                                                mutate_opset};

}  // namespace

bool mutate_model(std::string& model, uint32_t seed) {
  onnx::ModelProto m;
  if (!m.ParseFromString(model)) return false;
  Rng rng(seed);
  std::vector<onnx::GraphProto*> graphs;
  collect(m.mutable_graph(), graphs);
  const size_t count = 1 + rng() % 3;
  bool changed = false;
  for (size_t k = 0; k < count; ++k) {
    onnx::GraphProto& g = *graphs[rng() % graphs.size()];
    const size_t first = rng() % kMutations.size();
    for (size_t j = 0; j < kMutations.size(); ++j) {
      if (kMutations[(first + j) % kMutations.size()](m, g, rng)) {
        changed = true;
        break;
      }
    }
    graphs.clear();  // a mutation may have removed a subgraph's node
    collect(m.mutable_graph(), graphs);
  }
  return changed && m.SerializeToString(&model);
}

}  // namespace fuzz

// Structural mutation three times in four, byte mutation otherwise (and for bytes that are no
// model, or a mutated model past max_size).
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  if (seed % 4 != 0) {
    std::string model(reinterpret_cast<const char*>(data), size);
    if (fuzz::mutate_model(model, seed) && model.size() <= max_size) {
      std::copy(model.begin(), model.end(), data);
      return model.size();
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

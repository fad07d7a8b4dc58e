#include "common/attribute.h"

#include <utility>

#include "common/graph.h"

namespace common {

Attribute Attribute::make_int(std::string name, int64_t v) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttrType::kInt;
  a.i = v;
  return a;
}

Attribute Attribute::make_float(std::string name, float v) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttrType::kFloat;
  a.f = v;
  return a;
}

Attribute Attribute::make_string(std::string name, std::string v) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttrType::kString;
  a.s = std::move(v);
  return a;
}

Attribute Attribute::make_ints(std::string name, std::vector<int64_t> v) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttrType::kInts;
  a.ints = std::move(v);
  return a;
}

Attribute Attribute::make_floats(std::string name, std::vector<float> v) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttrType::kFloats;
  a.floats = std::move(v);
  return a;
}

Attribute Attribute::make_tensor(std::string name, Tensor v) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttrType::kTensor;
  a.t = std::move(v);
  return a;
}

Attribute Attribute::make_graph(std::string name, Graph v) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttrType::kGraph;
  a.g = std::make_shared<const Graph>(std::move(v));
  return a;
}

bool Attribute::operator==(const Attribute& o) const {
  const bool same_g = g == o.g || (g && o.g && same_graph(*g, *o.g));
  return name == o.name && type == o.type && i == o.i && f == o.f && s == o.s && ints == o.ints &&
         floats == o.floats && strings == o.strings && t == o.t && same_g;
}

}  // namespace common

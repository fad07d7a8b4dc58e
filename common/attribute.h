// Node attributes, and the one place that reads them with defaults and type checks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/tensor.h"

namespace common {

class Graph;

enum class AttrType {
  kFloat = 1,
  kInt = 2,
  kString = 3,
  kTensor = 4,
  kGraph = 5,
  kFloats = 6,
  kInts = 7,
  kStrings = 8,
  kTypeProto = 13
};

/// One attribute. Only the field matching `type` is meaningful. A graph attribute (the body of
/// If, Loop, Scan, SequenceMap) is a Graph of its own in `g`, converted from the proto once on
/// load and back once on save; it is shared and immutable, so copying an Attribute is cheap and a
/// user that changes a body builds a new Graph. Type attributes (Optional's `type`) are kept as
/// serialized TypeProto bytes in `s` so they survive a load/save round trip.
struct Attribute {
  std::string name;
  AttrType type = AttrType::kInt;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  std::optional<Tensor> t;
  std::shared_ptr<const Graph> g;

  static Attribute make_int(std::string name, int64_t v);
  static Attribute make_float(std::string name, float v);
  static Attribute make_string(std::string name, std::string v);
  static Attribute make_ints(std::string name, std::vector<int64_t> v);
  static Attribute make_floats(std::string name, std::vector<float> v);
  static Attribute make_tensor(std::string name, Tensor v);
  static Attribute make_graph(std::string name, Graph v);
  /// Field by field; graphs by content (same_graph in graph.h), not by address.
  bool operator==(const Attribute& other) const;
};

}  // namespace common

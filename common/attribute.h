// Node attributes, and the one place that reads them with defaults and type checks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/tensor.h"

namespace common {

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

/// One attribute. Only the field matching `type` is meaningful. Graph attributes (If/Loop bodies)
/// are kept as serialized GraphProto bytes in `s` so they survive a load/save round trip; type
/// attributes (Optional's `type`) likewise as serialized TypeProto bytes.
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

  static Attribute make_int(std::string name, int64_t v);
  static Attribute make_float(std::string name, float v);
  static Attribute make_string(std::string name, std::string v);
  static Attribute make_ints(std::string name, std::vector<int64_t> v);
  static Attribute make_floats(std::string name, std::vector<float> v);
  static Attribute make_tensor(std::string name, Tensor v);
  bool operator==(const Attribute& other) const = default;
};

}  // namespace common

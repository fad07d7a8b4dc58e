#include "propdag/registry.h"

#include <algorithm>
#include <map>

namespace propdag {
namespace {

const std::map<std::string, OpRule, std::less<>>& table() {
  static const auto* rules = [] {
    RuleTable t;
    add_linear_rules(t);
    add_layer_rules(t);
    add_shape_rules(t);
    add_activation_rules(t);
    add_nonlinear_rules(t);
    add_compare_rules(t);
    auto* m = new std::map<std::string, OpRule, std::less<>>();
    for (auto& [name, rule] : t) (*m)[std::string(name)] = rule;
    return m;
  }();
  return *rules;
}

}  // namespace

OpRule find_rule(std::string_view op_type) {
  auto it = table().find(op_type);
  return it == table().end() ? nullptr : it->second;
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> out;
  for (const auto& [name, rule] : table()) out.push_back(name);
  return out;
}

}  // namespace propdag

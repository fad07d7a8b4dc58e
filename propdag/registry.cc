#include "propdag/registry.h"

namespace propdag {

const OpRegistry& op_rules() {
  static const auto* rules = [] {
    RuleTable t;
    add_linear_rules(t);
    add_layer_rules(t);
    add_shape_rules(t);
    add_activation_rules(t);
    add_nonlinear_rules(t);
    add_compare_rules(t);
    auto* r = new OpRegistry();
    for (const auto& [name, rule] : t) r->add(name, rule);
    return r;
  }();
  return *rules;
}

OpRule find_rule(std::string_view op_type) {
  const OpRule* rule = op_rules().find(op_type);
  return rule == nullptr ? nullptr : *rule;
}

std::vector<std::string> supported_ops() { return op_rules().names(); }

}  // namespace propdag

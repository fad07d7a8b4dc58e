#include "propdag/registry.h"

namespace propdag {

const OpRegistry& op_rules() {
  static const auto* rules = [] {
    RuleTable t;
    add_elementwise_rules(t);
    add_elementwise_nonlinear_rules(t);
    add_elementwise_compare_rules(t);
    add_activation_rules(t);
    add_linalg_rules(t);
    add_conv_rules(t);
    add_pool_rules(t);
    add_norm_rules(t);
    add_reduce_rules(t);
    add_shape_rules(t);
    add_index_rules(t);
    add_index_copy_rules(t);
    add_resize_rules(t);
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

// Removal of nodes that compute nothing: Identity, inference Dropout, no-op shape ops, x+0, x*1.
#include <algorithm>
#include <map>
#include <string_view>

#include "slimonnx/pass.h"
#include "slimonnx/rewrite.h"

namespace slimonnx {
namespace {

using common::Node;

// Replaces node i's first output by its input `from`; false when the names cannot be kept.
bool bypass(Editor& ed, int i, size_t from) {
  const Node& n = ed.node(i);
  const std::string in = n.inputs[from];
  const std::string out = n.outputs[0];
  if (!ed.can_replace(out, in)) return false;
  ed.remove_node(i);
  ed.replace_all_uses(out, in);
  ed.count();
  return true;
}

bool same_static_shape(const Editor& ed, std::string_view a, std::string_view b) {
  const common::Dims* sa = ed.shape(a);
  const common::Dims* sb = ed.shape(b);
  return sa != nullptr && sb != nullptr && *sa == *sb && ed.dtype(a) == ed.dtype(b);
}

bool single_data_output(const Editor& ed, const Node& n) {
  for (size_t k = 1; k < n.outputs.size(); ++k) {
    if (!n.outputs[k].empty() && !ed.unused(n.outputs[k])) return false;
  }
  return !n.inputs.empty() && !n.inputs[0].empty();
}

// Dropout(X) -> X   in inference (training_mode absent or false, mask unused)
bool dropout_is_identity(const Editor& ed, const Node& n) {
  if (!single_data_output(ed, n)) return false;
  if (!n.has_input(2)) return true;
  const common::Tensor* training = ed.initializer(n.inputs[2]);
  return training != nullptr && all_equal(*training, 0);
}

// Identity(X) -> X
bool identity_is_identity(const Editor& ed, const Node& n) { return single_data_output(ed, n); }

using NoopRule = bool (*)(const Editor&, const Node&);

const std::map<std::string_view, NoopRule>& identity_rules() {
  static const std::map<std::string_view, NoopRule> rules = {
      {"Identity", identity_is_identity},
      {"Dropout", dropout_is_identity},
  };
  return rules;
}

// Reshape/Flatten/Squeeze/Unsqueeze/Expand/Tile(X) -> X   when the output shape equals X's
bool same_shape_noop(const Editor& ed, const Node& n) {
  return single_data_output(ed, n) && params_constant(ed, n) &&
         same_static_shape(ed, n.inputs[0], n.outputs[0]);
}

// Concat(X) -> X   with a single input
bool concat_noop(const Editor& ed, const Node& n) {
  return n.inputs.size() == 1 && single_data_output(ed, n) &&
         same_static_shape(ed, n.inputs[0], n.outputs[0]);
}

// Cast(X, to=T) -> X   when X already has type T
bool cast_noop(const Editor& ed, const Node& n) {
  return same_shape_noop(ed, n) &&
         n.attr_int("to", -1) == static_cast<int64_t>(ed.dtype(n.inputs[0]));
}

// Transpose(X, perm) -> X   when perm keeps every non-unit axis in order
bool transpose_noop(const Editor& ed, const Node& n) {
  if (!same_shape_noop(ed, n)) return false;
  const common::Dims& dims = *ed.shape(n.inputs[0]);
  std::vector<int64_t> perm = n.attr_ints("perm");
  if (perm.empty()) return dims.size() <= 1;
  int64_t last = -1;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(dims.size())) return false;
    if (dims[p] == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

// Pad(X, 0...) -> X   when every pad is zero
bool pad_noop(const Editor& ed, const Node& n) {
  if (!same_shape_noop(ed, n)) return false;
  if (n.has_attr("pads")) {
    const std::vector<int64_t> pads = n.attr_ints("pads");
    return std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
  }
  const common::Tensor* pads = n.has_input(1) ? ed.initializer(n.inputs[1]) : nullptr;
  return pads != nullptr && all_equal(*pads, 0);
}

// Slice(X, ...) -> X   when it keeps every element in order (positive steps, same shape)
bool slice_noop(const Editor& ed, const Node& n) {
  if (!same_shape_noop(ed, n)) return false;
  if (!n.has_input(4)) return true;
  const common::Tensor* steps = ed.initializer(n.inputs[4]);
  if (steps == nullptr) return false;
  for (int64_t s : steps->to_int64()) {
    if (s < 1) return false;
  }
  return true;
}

const std::map<std::string_view, NoopRule>& noop_rules() {
  static const std::map<std::string_view, NoopRule> rules = {
      {"Reshape", same_shape_noop},
      {"Flatten", same_shape_noop},
      {"Squeeze", same_shape_noop},
      {"Unsqueeze", same_shape_noop},
      {"Expand", same_shape_noop},
      {"Tile", same_shape_noop},
      {"Split", same_shape_noop},
      {"Concat", concat_noop},
      {"Cast", cast_noop},
      {"Transpose", transpose_noop},
      {"Pad", pad_noop},
      {"Slice", slice_noop},
  };
  return rules;
}

common::Result<int64_t> remove_by_rules(common::Graph& g,
                                        const std::map<std::string_view, NoopRule>& rules) {
  Editor ed(g);
  for (int i = 0; i < static_cast<int>(ed.size()); ++i) {
    const Node& n = ed.node(i);
    if (!is_onnx(n)) continue;
    auto it = rules.find(n.op_type);
    if (it == rules.end() || !it->second(ed, n)) continue;
    bypass(ed, i, 0);
  }
  return ed.finish();
}

common::Result<int64_t> remove_identities(common::Graph& g) {
  return remove_by_rules(g, identity_rules());
}

common::Result<int64_t> remove_noop_ops(common::Graph& g) {
  return remove_by_rules(g, noop_rules());
}

// Which operand may be a neutral constant, and the neutral value.
struct Neutral {
  double value;
  bool either_side;  ///< commutative: the constant may be input 0 or input 1
};

const std::map<std::string_view, Neutral>& neutral_rules() {
  static const std::map<std::string_view, Neutral> rules = {
      {"Add", {0, true}},  {"Sub", {0, false}}, {"Mul", {1, true}},
      {"Div", {1, false}}, {"Pow", {1, false}},
  };
  return rules;
}

// Add(X, 0) / Sub(X, 0) / Mul(X, 1) / Div(X, 1) / Pow(X, 1) -> X   when the shape is unchanged
bool try_neutral(Editor& ed, int i, const Neutral& rule) {
  const Node& n = ed.node(i);
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  const int sides = rule.either_side ? 2 : 1;
  for (int side = 0; side < sides; ++side) {
    const size_t const_slot = side == 0 ? 1 : 0;
    const size_t data_slot = 1 - const_slot;
    const common::Tensor* t = ed.initializer(n.inputs[const_slot]);
    if (t == nullptr || !all_equal(*t, rule.value)) continue;
    if (!same_static_shape(ed, n.inputs[data_slot], n.outputs[0])) continue;
    return bypass(ed, i, data_slot);
  }
  return false;
}

common::Result<int64_t> remove_neutral_arithmetic(common::Graph& g) {
  Editor ed(g);
  for (int i = 0; i < static_cast<int>(ed.size()); ++i) {
    const Node& n = ed.node(i);
    if (!is_onnx(n)) continue;
    auto it = neutral_rules().find(n.op_type);
    if (it != neutral_rules().end()) try_neutral(ed, i, it->second);
  }
  return ed.finish();
}

}  // namespace

void register_cleanup_passes(PassRegistry& table) {
  table.add("identity", {"remove Identity and inference-mode Dropout", remove_identities});
  table.add("noop-ops", {"remove Reshape/Flatten/Transpose/Pad/Cast/Slice/... that change nothing",
                         remove_noop_ops});
  table.add("neutral-arithmetic",
            {"remove Add 0, Sub 0, Mul 1, Div 1, Pow 1", remove_neutral_arithmetic});
}

}  // namespace slimonnx

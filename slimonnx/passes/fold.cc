// Constant folding and dead-code elimination.
#include <cstdint>
#include <set>
#include <string_view>
#include <vector>

#include "common/dtype.h"
#include "common/eval/eval.h"
#include "common/op_params.h"
#include "slimonnx/pass.h"
#include "slimonnx/rewrite.h"

namespace slimonnx {
namespace {

using common::Node;
using common::Tensor;

// Folding must not blow up the model: a result may be large only if its inputs were as large.
constexpr int64_t kMaxFreeElements = int64_t{1} << 20;

bool outputs_are_graph_outputs(const Editor& ed, const Node& n) {
  for (const std::string& out : n.outputs) {
    if (ed.is_graph_output(out)) return true;
  }
  return false;
}

// Every output already has a value known from shape inference (e.g. Shape -> Gather chains).
// Trusted only for ops that read nothing but shapes, or whose inputs are all constant by now
// (folding runs in topological order, so a Shape -> Gather -> Concat chain folds in one sweep);
// a value "known" from guessed runtime data (Slice starts read from a graph input) is not.
std::optional<std::vector<Tensor>> known_outputs(const Editor& ed, const common::Graph& g,
                                                 const Node& n) {
  for (const std::string& out : n.outputs) {
    if (ed.untrusted(out)) return std::nullopt;
  }
  static const std::set<std::string_view> shape_readers = {"Shape", "Size"};
  if (shape_readers.count(n.op_type) == 0) {
    for (const std::string& in : n.inputs) {
      if (!in.empty() && g.initializer(in) == nullptr) return std::nullopt;
    }
  }
  std::vector<Tensor> out;
  for (const std::string& name : n.outputs) {
    const common::Value* v = g.find(name);
    if (name.empty() || v == nullptr || !v->known) return std::nullopt;
    out.push_back(*v->known);
  }
  return out;
}

// Evaluates a node whose inputs are all constant; nullopt when it cannot or should not.
std::optional<std::vector<Tensor>> evaluated_outputs(const common::Graph& g, const Node& n) {
  using Maybe = std::optional<std::vector<Tensor>>;
  if (!common::can_evaluate(n.op_type)) return Maybe();
  std::vector<const Tensor*> inputs;
  int64_t in_elements = 0;
  for (const std::string& name : n.inputs) {
    const Tensor* t = name.empty() ? nullptr : g.initializer(name);
    if (!name.empty() && t == nullptr) return Maybe();
    if (t != nullptr) in_elements += t->numel();
    inputs.push_back(t);
  }
  common::Result<std::vector<Tensor>> result = common::evaluate(g, n, inputs);
  if (!result.ok()) return Maybe();  // an unsupported form stays in the graph
  std::vector<Tensor> out = std::move(result).value();
  int64_t out_elements = 0;
  for (const Tensor& t : out) out_elements += t.numel();
  if (out_elements > kMaxFreeElements && out_elements > 2 * in_elements) return Maybe();
  return Maybe(std::move(out));
}

// op(C1, C2, ...) -> constant   when every input is constant (or every output is known)
common::Result<int64_t> fold_constants(common::Graph& g) {
  Editor ed(g);
  for (int i = 0; i < static_cast<int>(ed.size()); ++i) {
    const Node& n = ed.node(i);
    if (!is_onnx(n)) continue;
    if (n.outputs.empty() || outputs_are_graph_outputs(ed, n)) continue;
    std::optional<std::vector<Tensor>> out = known_outputs(ed, g, n);
    if (!out) out = evaluated_outputs(g, n);
    if (!out || out->size() != n.outputs.size()) continue;
    const std::vector<std::string> names = n.outputs;
    ed.remove_node(i);
    for (size_t k = 0; k < names.size(); ++k) {
      common::Value& v = g.value(names[k]);
      v.dtype = (*out)[k].dtype;
      v.shape = (*out)[k].dims;
      v.known.reset();
      g.initializers[names[k]] = std::move((*out)[k]);
    }
    ed.count();
  }
  return ed.finish();
}

// Rows [begin, end) of `t` along `axis`.
Tensor slice_axis(const Tensor& t, size_t axis, int64_t begin, int64_t end) {
  int64_t outer = 1, inner = common::dtype_size(t.dtype);
  for (size_t d = 0; d < axis; ++d) outer *= t.dims[d];
  for (size_t d = axis + 1; d < t.dims.size(); ++d) inner *= t.dims[d];
  Tensor out;
  out.dtype = t.dtype;
  out.dims = t.dims;
  out.dims[axis] = end - begin;
  const int64_t row = t.dims[axis] * inner;
  for (int64_t o = 0; o < outer; ++o) {
    out.raw.append(t.raw, static_cast<size_t>(o * row + begin * inner),
                   static_cast<size_t>((end - begin) * inner));
  }
  return out;
}

// Add/Sub/Mul/Div(Concat(A1, ..., Ak), C) -> Concat(A1 op C1, ..., Ak op Ck)
//   when C is constant, every Ai but one is constant, and op does not broadcast the Concat's
//   result. Ci is C's part facing Ai. The constant parts fold, so the op only runs on the one
//   computed part, and the node count stays the same. (A transformer's class token concatenated
//   in front of the patch embeddings, then the position embedding added.)
bool distribute_over_concat(Editor& ed, int i) {
  const Node& n = ed.node(i);
  static const std::set<std::string_view> ops = {"Add", "Sub", "Mul", "Div"};
  if (ops.count(n.op_type) == 0 || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  for (size_t side = 0; side < 2; ++side) {
    const Tensor* c = ed.initializer(n.inputs[1 - side]);
    const int cat = ed.producer(n.inputs[side]);
    if (c == nullptr || cat < 0 || !ed.single_use(n.inputs[side])) continue;
    const Node& concat = ed.node(cat);
    const common::Dims* out = ed.shape(concat.outputs[0]);
    if (!is_onnx(concat) || concat.op_type != "Concat" || out == nullptr) continue;
    if (c->dims.size() > out->size() || common::broadcast_shapes(*out, c->dims) != *out) continue;
    if (ed.dtype(concat.outputs[0]) != c->dtype || !ed.can_replace(n.outputs[0], concat.outputs[0]))
      continue;
    const int64_t rank = static_cast<int64_t>(out->size());
    const common::Result<int64_t> normalized =
        common::normalize_axis(concat.attr_int("axis", 0), rank);
    if (!normalized.ok()) continue;
    const int64_t axis = *normalized;
    const int64_t c_axis = axis - (rank - static_cast<int64_t>(c->dims.size()));
    const bool sliced = c_axis >= 0 && c->dims[c_axis] != 1;
    int computed = -1;
    bool shapes_known = true;
    for (size_t k = 0; k < concat.inputs.size(); ++k) {
      shapes_known = shapes_known && ed.shape(concat.inputs[k]) != nullptr;
      if (ed.initializer(concat.inputs[k]) != nullptr) continue;
      computed = computed == -1 ? static_cast<int>(k) : -2;
    }
    if (computed < 0 || !shapes_known) continue;
    const Node op = n;  // copies: the edits below invalidate references into the node list
    const Node cat_node = concat;
    // Each part's new value: the folded constant, or (for the computed part) C's facing part.
    std::vector<Tensor> values;
    int64_t offset = 0;
    for (size_t k = 0; k < cat_node.inputs.size(); ++k) {
      const int64_t extent = (*ed.shape(cat_node.inputs[k]))[axis];
      Tensor ck =
          sliced ? slice_axis(*c, static_cast<size_t>(c_axis), offset, offset + extent) : *c;
      offset += extent;
      if (static_cast<int>(k) == computed) {
        values.push_back(std::move(ck));
        continue;
      }
      const Tensor* a = ed.initializer(cat_node.inputs[k]);
      const Tensor* b = &ck;
      std::vector<const Tensor*> args = side == 0 ? std::vector{a, b} : std::vector{b, a};
      common::Result<std::vector<Tensor>> folded = common::evaluate(ed.graph(), op, args);
      if (!folded.ok()) return false;
      values.push_back(std::move(folded.value()[0]));
    }
    std::vector<std::string> parts;
    for (size_t k = 0; k < values.size(); ++k) {
      const std::string& part = cat_node.inputs[k];
      if (static_cast<int>(k) != computed) {
        parts.push_back(ed.add_initializer(part, std::move(values[k])));
        continue;
      }
      Node part_op = op;
      part_op.inputs[side] = part;
      part_op.inputs[1 - side] = ed.add_initializer(op.inputs[1 - side], std::move(values[k]));
      part_op.outputs = {ed.add_value(op.outputs[0], ed.dtype(part), *ed.shape(part))};
      parts.push_back(part_op.outputs[0]);
      ed.add_node(std::move(part_op));
    }
    ed.remove_node(i);
    for (size_t k = 0; k < parts.size(); ++k) ed.set_input(cat, k, parts[k]);
    ed.replace_all_uses(op.outputs[0], cat_node.outputs[0]);
    ed.count();
    return true;
  }
  return false;
}

common::Result<int64_t> distribute_over_concats(common::Graph& g) {
  Editor ed(g);
  for (int i = 0; i < static_cast<int>(ed.size()); ++i) {
    if (ed.live(i) && is_onnx(ed.node(i))) distribute_over_concat(ed, i);
  }
  return ed.finish();
}

bool all_outputs_unused(const Editor& ed, const Node& n) {
  for (const std::string& out : n.outputs) {
    if (!out.empty() && !ed.unused(out)) return false;
  }
  return true;
}

void drop_unused_initializers(Editor& ed) {
  common::Graph& g = ed.graph();
  for (auto it = g.initializers.begin(); it != g.initializers.end();) {
    if (ed.unused(it->first)) {
      it = g.initializers.erase(it);
    } else {
      ++it;
    }
  }
}

// op(...) -> (removed)   when no node and no graph output uses any of its outputs
common::Result<int64_t> eliminate_dead_code(common::Graph& g) {
  Editor ed(g);
  for (int i = static_cast<int>(ed.size()) - 1; i >= 0; --i) {
    if (!all_outputs_unused(ed, ed.node(i))) continue;
    ed.remove_node(i);
    ed.count();
  }
  drop_unused_initializers(ed);
  return ed.finish();
}

}  // namespace

void register_fold_passes(PassRegistry& table) {
  table.add("constant-folding",
            {"evaluate nodes whose inputs (or outputs) are all known", fold_constants});
  table.add("concat-constant-parts",
            {"apply Add/Sub/Mul/Div by a constant to each part of a Concat, folding constant parts",
             distribute_over_concats});
  table.add("dead-code", {"remove nodes and initializers nothing uses", eliminate_dead_code});
}

}  // namespace slimonnx

// Constant folding and dead-code elimination.
#include <cstdint>
#include <set>
#include <string_view>
#include <vector>

#include "common/eval.h"
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

void register_fold_passes(PassTable& table) {
  table.add("constant-folding", "evaluate nodes whose inputs (or outputs) are all known",
            fold_constants);
  table.add("dead-code", "remove nodes and initializers nothing uses", eliminate_dead_code);
}

}  // namespace slimonnx

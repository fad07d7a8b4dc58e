// Folding elementwise affine maps and BatchNormalization into neighbouring linear layers, and
// merging chains of linear layers.
#include <algorithm>
#include <set>
#include <string_view>

#include "slimonnx/layer.h"
#include "slimonnx/pass.h"

namespace slimonnx {
namespace {

using common::Node;

using OpSet = std::set<std::string_view>;
const OpSet kLayers = {"Gemm", "MatMul", "Conv", "ConvTranspose"};
const OpSet kArithmetic = {"Add", "Sub", "Mul", "Div", "Neg"};

bool in(const OpSet& ops, const Node& n) { return is_onnx(n) && ops.count(n.op_type) != 0; }

// Layout ops (Reshape/Flatten/Squeeze/Unsqueeze/Transpose) with one user, walking up from `v`;
// returns the value above them and the ops, nearest to `v` first.
std::string walk_layout(const Editor& ed, std::string v, std::vector<int>& ops) {
  for (int p = ed.producer(v); p >= 0 && ed.single_use(v) && is_layout_op(ed.node(p));
       p = ed.producer(v)) {
    ops.push_back(p);
    v = ed.node(p).inputs[0];
  }
  return v;
}

// Affine(Layout*(Layer(X))) -> Layout*(Layer'(X))   when the map is per output channel
bool fold_after(Editor& ed, int i, const OpSet& layers) {
  std::optional<Affine> a = as_affine(ed, ed.node(i));
  if (!a) return false;
  std::vector<int> ops;
  const std::string v = walk_layout(ed, a->x, ops);
  const int p = ed.producer(v);
  if (p < 0 || !ed.single_use(v) || !in(layers, ed.node(p))) return false;
  const std::string out = ed.node(i).outputs[0];
  if (!ed.can_replace(out, a->x)) return false;
  for (int op : ops) {
    if (!through_layout(ed, ed.node(op), false, *a)) return false;
  }
  std::unique_ptr<Layer> layer = as_layer(ed, ed.node(p));
  if (!layer) return false;
  layer->set_doomed(i);
  const int64_t axis = layer->out_axis(static_cast<int64_t>(a->dims.size()));
  std::optional<AxisAffine> per = along_axis(a->s, a->t, a->dims, axis);
  if (!per || !layer->fold_after(*per) || !layer->write(ed, p)) return false;
  ed.remove_node(i);
  ed.replace_all_uses(out, a->x);
  ed.count();
  return true;
}

// Layer(Layout*(Affine(X))) -> Layer'(Layout*(X))   e.g. input normalization into the first layer
bool fold_before(Editor& ed, int i, const OpSet& affine_ops) {
  const common::Node& n = ed.node(i);
  if (n.inputs.empty()) return false;
  std::vector<int> ops;
  const std::string v = walk_layout(ed, n.inputs[0], ops);
  const int ap = ed.producer(v);
  if (ap < 0 || !ed.single_use(v) || !in(affine_ops, ed.node(ap))) return false;
  std::optional<Affine> a = as_affine(ed, ed.node(ap));
  if (!a) return false;
  const std::string x = a->x;
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    if (!through_layout(ed, ed.node(*it), true, *a)) return false;
  }
  std::unique_ptr<Layer> layer = as_layer(ed, n);
  if (!layer || !layer->fold_before(*a)) return false;
  if (ops.empty()) layer->set_x(x);
  if (!layer->write(ed, i)) return false;
  if (!ops.empty()) ed.set_input(ops.back(), 0, x);
  ed.remove_node(ap);
  ed.count();
  return true;
}

// Layer_k(Layout*(Affine(X))) -> Layer_k'(Layout*(X))   for every k, when the map's value (after
// single-use layout ops) is read by several layers and nothing else, each taking it as its data
// input: e.g. a BatchNormalization read by the query, key and value products of attention.
// All or nothing: every layer is folded and checked before the graph changes.
bool fold_before_shared(Editor& ed, int ap) {
  std::optional<Affine> a = as_affine(ed, ed.node(ap));
  if (!a) return false;
  const std::string x = a->x;
  std::vector<int> ops;  // nearest to the map first
  std::string v = ed.node(ap).outputs[0];
  for (;;) {
    const std::vector<int> users = ed.consumers(v);
    if (!ed.single_use(v) || !is_layout_op(ed.node(users[0]))) break;
    ops.push_back(users[0]);
    v = ed.node(users[0]).outputs[0];
  }
  const std::vector<int> users = ed.consumers(v);
  if (users.size() < 2 || ed.is_graph_output(v)) return false;
  for (int op : ops) {
    if (!through_layout(ed, ed.node(op), true, *a)) return false;
  }
  std::vector<std::unique_ptr<Layer>> layers;
  for (int u : users) {
    const Node& n = ed.node(u);
    if (!in(kLayers, n) || std::count(n.inputs.begin(), n.inputs.end(), v) != 1 ||
        n.inputs[0] != v) {
      return false;
    }
    std::unique_ptr<Layer> layer = as_layer(ed, n);
    if (!layer || !layer->fold_before(*a)) return false;
    if (ops.empty()) layer->set_x(x);
    if (!layer->writable(ed, u)) return false;
    layers.push_back(std::move(layer));
  }
  for (size_t k = 0; k < users.size(); ++k) layers[k]->write(ed, users[k]);
  if (!ops.empty()) ed.set_input(ops.front(), 0, x);
  ed.remove_node(ap);
  ed.count();
  return true;
}

common::Result<int64_t> sweep_after(common::Graph& g, const OpSet& affine_ops,
                                    const OpSet& layers) {
  Editor ed(g);
  for (int i = 0; i < static_cast<int>(ed.size()); ++i) {
    if (ed.live(i) && in(affine_ops, ed.node(i))) fold_after(ed, i, layers);
  }
  return ed.finish();
}

common::Result<int64_t> sweep_before(common::Graph& g, const OpSet& affine_ops) {
  Editor ed(g);
  for (int i = 0; i < static_cast<int>(ed.size()); ++i) {
    if (ed.live(i) && in(kLayers, ed.node(i))) fold_before(ed, i, affine_ops);
  }
  for (int i = 0; i < static_cast<int>(ed.size()); ++i) {
    if (ed.live(i) && in(affine_ops, ed.node(i))) fold_before_shared(ed, i);
  }
  return ed.finish();
}

common::Result<int64_t> matmul_add_to_gemm(common::Graph& g) {
  return sweep_after(g, {"Add", "Sub"}, {"MatMul", "Gemm"});
}

common::Result<int64_t> affine_after_linear(common::Graph& g) {
  return sweep_after(g, kArithmetic, kLayers);
}

common::Result<int64_t> affine_before_linear(common::Graph& g) {
  return sweep_before(g, kArithmetic);
}

common::Result<int64_t> fold_batchnorm(common::Graph& g) {
  ASSIGN_OR_RETURN(int64_t after, sweep_after(g, {"BatchNormalization"}, kLayers));
  ASSIGN_OR_RETURN(int64_t before, sweep_before(g, {"BatchNormalization"}));
  return after + before;
}

// Merging must not make the model much bigger or take long.
constexpr int64_t kMaxMergeFlops = int64_t{1} << 28;
constexpr int64_t kFreeMergedSize = int64_t{1} << 20;

// The k x n of a dense node's weight as stored (transB honoured), without reading the data.
bool weight_dims(const Editor& ed, const Node& n, int64_t* k, int64_t* cols) {
  const common::Tensor* w = n.inputs.size() > 1 ? ed.initializer(n.inputs[1]) : nullptr;
  if (w == nullptr || w->dims.size() != 2) return false;
  const bool t = n.op_type == "Gemm" && n.attr_int("transB", 0) != 0;
  *k = w->dims[t ? 1 : 0];
  *cols = w->dims[t ? 0 : 1];
  return true;
}

bool worth_merging(const Editor& ed, const Node& first, const Node& second) {
  int64_t k = 0, m = 0, m2 = 0, n = 0;
  if (!weight_dims(ed, first, &k, &m) || !weight_dims(ed, second, &m2, &n) || m != m2) {
    return false;
  }
  const int64_t merged = k * n, original = k * m + m * n;
  return k * m * n <= kMaxMergeFlops && (merged <= 2 * original || merged <= kFreeMergedSize);
}

// Dense2(Dense1(X)) -> Dense(X, W1 . W2, b1 . W2 + b2)   when Dense1 has 1 user
bool merge_dense(Editor& ed, int i) {
  const std::string& x = ed.node(i).inputs[0];
  const int p = ed.producer(x);
  if (p < 0 || !ed.single_use(x) || !in({"Gemm", "MatMul"}, ed.node(p))) return false;
  if (!worth_merging(ed, ed.node(p), ed.node(i))) return false;
  std::unique_ptr<DenseLayer> second = as_dense(ed, ed.node(i));
  std::unique_ptr<DenseLayer> first = second ? as_dense(ed, ed.node(p)) : nullptr;
  if (!first || first->n != second->k || first->dtype != second->dtype) return false;
  DenseLayer merged;
  merged.set_x(first->x());
  merged.k = first->k;
  merged.n = second->n;
  merged.dtype = second->dtype;
  const auto w2 = [&](int64_t r, int64_t c) { return second->weight(r, c); };
  merged.set_weights(matmul(first->weights(), w2, first->k, first->n, second->n));
  if (!first->b.empty()) merged.b = matmul(first->b, w2, 1, first->n, second->n);
  if (!second->b.empty() && merged.b.empty()) merged.b.assign(merged.n, 0.0);
  for (size_t c = 0; c < second->b.size(); ++c) merged.b[c] += second->b[c];
  if (!merged.write(ed, i)) return false;
  ed.remove_node(p);
  ed.count();
  return true;
}

common::Result<int64_t> merge_linear_chains(common::Graph& g) {
  Editor ed(g);
  for (int i = 0; i < static_cast<int>(ed.size()); ++i) {
    if (ed.live(i) && in({"Gemm", "MatMul"}, ed.node(i))) merge_dense(ed, i);
  }
  return ed.finish();
}

// Add/Sub(Dense1(X), Dense2(X)) -> Dense(X, W1 +- W2, b1 +- b2)   same X, each dense has 1 user
bool combine_dense(Editor& ed, int i) {
  const Node& n = ed.node(i);
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  const int p0 = ed.producer(n.inputs[0]), p1 = ed.producer(n.inputs[1]);
  if (p0 < 0 || p1 < 0 || p0 == p1 || !ed.single_use(n.inputs[0]) || !ed.single_use(n.inputs[1])) {
    return false;
  }
  if (!in({"Gemm", "MatMul"}, ed.node(p0)) || !in({"Gemm", "MatMul"}, ed.node(p1))) return false;
  if (ed.node(p0).inputs[0] != ed.node(p1).inputs[0]) return false;
  const common::Dims* out = ed.shape(n.outputs[0]);
  const common::Dims* a = ed.shape(n.inputs[0]);
  if (out == nullptr || a == nullptr || *out != *a || ed.shape(n.inputs[1]) == nullptr ||
      *ed.shape(n.inputs[1]) != *a) {
    return false;
  }
  std::unique_ptr<DenseLayer> d0 = as_dense(ed, ed.node(p0));
  std::unique_ptr<DenseLayer> d1 = d0 ? as_dense(ed, ed.node(p1)) : nullptr;
  if (!d1 || d0->k != d1->k || d0->n != d1->n || d0->dtype != d1->dtype) return false;
  const double sign = n.op_type == "Sub" ? -1.0 : 1.0;
  std::vector<double>& w0 = d0->weights();
  const std::vector<double>& w1 = d1->weights();
  for (size_t e = 0; e < w0.size(); ++e) w0[e] += sign * w1[e];
  if (!d1->b.empty() && d0->b.empty()) d0->b.assign(d0->n, 0.0);
  for (size_t c = 0; c < d1->b.size(); ++c) d0->b[c] += sign * d1->b[c];
  if (!d0->write(ed, i)) return false;
  ed.remove_node(p0);
  ed.remove_node(p1);
  ed.count();
  return true;
}

common::Result<int64_t> combine_dense_layers(common::Graph& g) {
  Editor ed(g);
  for (int i = 0; i < static_cast<int>(ed.size()); ++i) {
    if (ed.live(i) && in({"Add", "Sub"}, ed.node(i))) combine_dense(ed, i);
  }
  return ed.finish();
}

}  // namespace

void register_linear_passes(PassRegistry& table) {
  table.add("matmul-add-to-gemm",
            {"Add(MatMul(X, W), B) -> Gemm(X, W, B) (also Gemm + Add/Sub)", matmul_add_to_gemm});
  table.add("linear-chain",
            {"merge Gemm/MatMul chains with no nonlinearity between them", merge_linear_chains});
  table.add("linear-sum", {"Add/Sub of two Gemm/MatMul on the same input -> one Gemm/MatMul",
                           combine_dense_layers});
  table.add("affine-after-linear",
            {"fold Add/Sub/Mul/Div/Neg by constants after Gemm/MatMul/Conv into its weights",
             affine_after_linear});
  table.add("affine-before-linear",
            {"fold Add/Sub/Mul/Div/Neg by constants (input normalization) into the next layer",
             affine_before_linear});
}

void register_batchnorm_passes(PassRegistry& table) {
  table.add("batchnorm-fold",
            {"fold BatchNormalization into a neighbouring Conv/ConvTranspose/Gemm/MatMul",
             fold_batchnorm});
}

}  // namespace slimonnx

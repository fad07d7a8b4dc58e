// Chains of layout ops collapsed into one: Reshape/Flatten/Squeeze/Unsqueeze chains (with the
// activations between them moved out of the way), Transpose pairs.
#include <cstring>
#include <set>
#include <string_view>

#include "slimonnx/pass.h"
#include "slimonnx/rewrite.h"

namespace slimonnx {
namespace {

using common::Node;

bool is_reshape_like(const Node& n) {
  static const std::set<std::string_view> ops = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"};
  return is_onnx(n) && ops.count(n.op_type) != 0 && n.outputs.size() == 1 && !n.inputs.empty();
}

bool is_trusted_reshape(const Editor& ed, const Node& n) {
  return is_reshape_like(n) && params_constant(ed, n);
}

// Index of the single-use reshape-like node feeding node i, or -1.
int reshape_feeding(const Editor& ed, const Node& n) {
  const int p = ed.producer(n.inputs[0]);
  if (p < 0 || !ed.single_use(n.inputs[0])) return -1;
  return is_trusted_reshape(ed, ed.node(p)) ? p : -1;
}

// R2(R1(X)) -> Reshape(X, shape of R2's output)   R1, R2 in {Reshape, Flatten, Squeeze, Unsqueeze}
common::Result<int64_t> merge_reshape_chains(common::Graph& g) {
  Editor ed(g);
  if (g.opset() < 5) return int64_t{0};
  for (int i = 0; i < static_cast<int>(ed.size()); ++i) {
    if (!ed.live(i) || !is_trusted_reshape(ed, ed.node(i))) continue;
    const int inner = reshape_feeding(ed, ed.node(i));
    const common::Dims* out_shape = ed.shape(ed.node(i).outputs[0]);
    if (inner < 0 || out_shape == nullptr) continue;
    Node merged;
    merged.name = ed.node(i).name;
    merged.op_type = "Reshape";
    merged.inputs = {
        ed.node(inner).inputs[0],
        ed.add_initializer(
            merged.name + "_shape",
            common::Tensor::from_int64(*out_shape, {static_cast<int64_t>(out_shape->size())}))};
    merged.outputs = ed.node(i).outputs;
    ed.remove_node(i);
    ed.remove_node(inner);
    ed.add_node(std::move(merged));
    ed.count();
  }
  return ed.finish();
}

// Elementwise ops of one tensor (parameters in attributes): they commute with reshapes.
bool is_unary_elementwise(const Node& n) {
  static const std::set<std::string_view> ops = {
      "Relu", "LeakyRelu", "Sigmoid",    "HardSigmoid", "Tanh", "Elu",   "Selu",
      "Celu", "Softplus",  "Softsign",   "HardSwish",   "Abs",  "Neg",   "Exp",
      "Log",  "Sqrt",      "Reciprocal", "Floor",       "Ceil", "Round", "Sign",
      "Erf",  "Sin",       "Cos",        "Not"};
  return is_onnx(n) && ops.count(n.op_type) != 0 && n.inputs.size() == 1 && n.outputs.size() == 1;
}

// Unary(R(X)) -> R(Unary(X))   R reshape-like with Unary its only user. Moves activations out of
// reshape pairs (Gemm -> Reshape -> Relu -> Reshape back) so that the pair meets, merges and, when
// it restores the shape, disappears.
common::Result<int64_t> unary_before_reshape(common::Graph& g) {
  Editor ed(g);
  for (int i = 0; i < static_cast<int>(ed.size()); ++i) {
    if (!ed.live(i) || !is_unary_elementwise(ed.node(i))) continue;
    const int r = reshape_feeding(ed, ed.node(i));
    if (r < 0) continue;
    const std::string x = ed.node(r).inputs[0];
    const common::Dims* x_shape = ed.shape(x);
    if (x_shape == nullptr) continue;
    Node unary = ed.node(i);
    Node reshape = ed.node(r);
    unary.inputs[0] = x;
    unary.outputs[0] = ed.add_value(unary.name, ed.dtype(unary.outputs[0]), *x_shape);
    reshape.inputs[0] = unary.outputs[0];
    reshape.outputs[0] = ed.node(i).outputs[0];
    ed.remove_node(i);
    ed.remove_node(r);
    ed.add_node(std::move(unary));
    ed.add_node(std::move(reshape));
    ed.count();
  }
  return ed.finish();
}

// Transpose(Transpose(X, p1), p2) -> Transpose(X, p)   p[i] = p1[p2[i]]
common::Result<int64_t> merge_transposes(common::Graph& g) {
  Editor ed(g);
  for (int i = 0; i < static_cast<int>(ed.size()); ++i) {
    const Node& outer = ed.node(i);
    if (!ed.live(i) || !is_onnx(outer) || outer.op_type != "Transpose") continue;
    const int inner = ed.producer(outer.inputs[0]);
    if (inner < 0 || !ed.single_use(outer.inputs[0])) continue;
    const Node& in = ed.node(inner);
    if (!is_onnx(in) || in.op_type != "Transpose") continue;
    const std::vector<int64_t> p1 = in.attr_ints("perm");
    const std::vector<int64_t> p2 = outer.attr_ints("perm");
    if (p1.empty() || p1.size() != p2.size()) continue;
    std::vector<int64_t> p(p2.size());
    for (size_t k = 0; k < p2.size(); ++k) p[k] = p1[p2[k]];
    const std::string x = in.inputs[0];
    ed.remove_node(inner);
    ed.set_input(i, 0, x);
    ed.node(i).set_attr(common::Attribute::make_ints("perm", p));
    ed.count();
  }
  return ed.finish();
}

bool is_2d_swap(const Editor& ed, int i) {
  if (i < 0) return false;
  const Node& n = ed.node(i);
  return is_onnx(n) && n.op_type == "Transpose" &&
         n.attr_ints("perm") == std::vector<int64_t>{1, 0};
}

// Transpose(MatMul(C, Transpose(X))) -> MatMul(X, C^T)   2-D, constant C, single users
bool swap_constant_matmul(Editor& ed, int i) {
  if (!is_2d_swap(ed, i) || !ed.single_use(ed.node(i).inputs[0])) return false;
  const int m = ed.producer(ed.node(i).inputs[0]);
  if (m < 0 || ed.node(m).op_type != "MatMul" || !is_onnx(ed.node(m))) return false;
  const Node& mm = ed.node(m);
  const common::Tensor* c = ed.initializer(mm.inputs[0]);
  const int t = ed.producer(mm.inputs[1]);
  if (c == nullptr || c->dims.size() != 2 || !is_2d_swap(ed, t) || !ed.single_use(mm.inputs[1])) {
    return false;
  }
  const int64_t rows = c->dims[0], cols = c->dims[1], size = common::dtype_size(c->dtype);
  common::Tensor ct{c->dtype, {cols, rows}, std::string(c->raw.size(), '\0')};
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < cols; ++k) {
      std::memcpy(&ct.raw[(k * rows + r) * size], &c->raw[(r * cols + k) * size], size);
    }
  }
  Node out;
  out.name = mm.name;
  out.op_type = "MatMul";
  out.inputs = {ed.node(t).inputs[0], ed.add_initializer(mm.name + "_weight", std::move(ct))};
  out.outputs = ed.node(i).outputs;
  ed.remove_node(i);
  ed.remove_node(m);
  ed.remove_node(t);
  ed.add_node(std::move(out));
  ed.count();
  return true;
}

common::Result<int64_t> swap_constant_matmuls(common::Graph& g) {
  Editor ed(g);
  for (int i = 0; i < static_cast<int>(ed.size()); ++i) {
    if (ed.live(i)) swap_constant_matmul(ed, i);
  }
  return ed.finish();
}

}  // namespace

void register_reshape_passes(PassRegistry& table) {
  table.add("reshape-chain", {"merge chains of Reshape/Flatten/Squeeze/Unsqueeze into one Reshape",
                              merge_reshape_chains});
  table.add("unary-before-reshape",
            {"move elementwise activations above a Reshape/Flatten/Squeeze/Unsqueeze feeding them",
             unary_before_reshape});
  table.add("transpose-chain",
            {"merge Transpose(Transpose(X)) into one Transpose", merge_transposes});
  table.add("transpose-matmul",
            {"Transpose(MatMul(C, Transpose(X))) -> MatMul(X, C^T) for constant C",
             swap_constant_matmuls});
}

}  // namespace slimonnx

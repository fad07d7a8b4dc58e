// Conv-specific rewrites: Pad folded into Conv, Conv covering its whole input as Flatten + Gemm.
#include <algorithm>
#include <set>
#include <string_view>

#include "slimonnx/layer.h"
#include "slimonnx/pass.h"

namespace slimonnx {
namespace {

using common::Dims;
using common::Node;

// The pads of a zero-constant Pad node (attribute or input form), or nullopt.
std::optional<std::vector<int64_t>> zero_pads(const Editor& ed, const Node& pad) {
  if (pad.attr_string("mode", "constant") != "constant" || pad.has_input(3)) return std::nullopt;
  if (pad.has_attr("pads")) {
    if (pad.attr_float("value", 0.0f) != 0.0f) return std::nullopt;
    return pad.attr_ints("pads");
  }
  const common::Tensor* pads = pad.has_input(1) ? ed.initializer(pad.inputs[1]) : nullptr;
  if (pads == nullptr) return std::nullopt;
  if (pad.has_input(2)) {
    const common::Tensor* value = ed.initializer(pad.inputs[2]);
    if (value == nullptr || !all_equal(*value, 0)) return std::nullopt;
  }
  return pads->to_int64();
}

// Conv(Pad(X, spatial pads p, 0)) -> Conv(X, pads += p)   when Pad has 1 user
bool fold_pad(Editor& ed, int i) {
  Node& conv = ed.node(i);
  if (conv.attr_string("auto_pad", "NOTSET") != "NOTSET") return false;
  const int p = ed.producer(conv.inputs[0]);
  if (p < 0 || ed.node(p).op_type != "Pad" || !is_onnx(ed.node(p))) return false;
  if (!ed.single_use(conv.inputs[0])) return false;
  std::optional<std::vector<int64_t>> pads = zero_pads(ed, ed.node(p));
  const size_t rank = pads ? pads->size() / 2 : 0;
  if (!pads || rank < 3 || pads->size() != 2 * rank) return false;
  if ((*pads)[0] != 0 || (*pads)[1] != 0 || (*pads)[rank] != 0 || (*pads)[rank + 1] != 0) {
    return false;
  }
  if (std::any_of(pads->begin(), pads->end(), [](int64_t v) { return v < 0; })) return false;
  const size_t spatial = rank - 2;
  std::vector<int64_t> conv_pads = conv.attr_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  if (conv_pads.size() != 2 * spatial) return false;
  for (size_t d = 0; d < spatial; ++d) {
    conv_pads[d] += (*pads)[2 + d];
    conv_pads[spatial + d] += (*pads)[rank + 2 + d];
  }
  conv.set_attr(common::Attribute::make_ints("pads", conv_pads));
  const std::string x = ed.node(p).inputs[0];
  ed.remove_node(p);
  ed.set_input(i, 0, x);
  ed.count();
  return true;
}

common::Result<int64_t> fold_pads(common::Graph& g) {
  Editor ed(g);
  for (int i = 0; i < static_cast<int>(ed.size()); ++i) {
    const Node& n = ed.node(i);
    if (ed.live(i) && is_onnx(n) && n.op_type == "Conv" && !n.inputs.empty()) fold_pad(ed, i);
  }
  return ed.finish();
}

bool all_ones(const std::vector<int64_t>& v) {
  return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 1; });
}

// Conv whose kernel covers the whole (unpadded) input, group 1: its output is [N, Cout, 1, ...].
bool covers_input(const Editor& ed, const Node& conv) {
  const Dims* xs = ed.shape(conv.inputs[0]);
  const common::Tensor* w = conv.inputs.size() > 1 ? ed.initializer(conv.inputs[1]) : nullptr;
  if (xs == nullptr || w == nullptr || xs->size() < 3 || w->dims.size() != xs->size()) return false;
  if (conv.attr_int("group", 1) != 1 || !all_ones(conv.attr_ints("dilations"))) return false;
  const std::string pad = conv.attr_string("auto_pad", "NOTSET");
  const std::vector<int64_t> pads = conv.attr_ints("pads");
  if ((pad != "NOTSET" && pad != "VALID") ||
      std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; })) {
    return false;
  }
  return std::equal(xs->begin() + 2, xs->end(), w->dims.begin() + 2);
}

// Flatten(Conv(X)) -> Gemm(Flatten(X), W^T, b)   when the kernel covers all of X (no padding)
bool conv_to_gemm(Editor& ed, int i) {
  const Node& conv = ed.node(i);
  if (!covers_input(ed, conv) || !ed.single_use(conv.outputs[0])) return false;
  const int f = ed.consumers(conv.outputs[0])[0];
  const Node& flat = ed.node(f);
  const Dims* fs = ed.shape(flat.outputs[0]);
  static const std::set<std::string_view> flatteners = {"Flatten", "Reshape"};
  if (!is_onnx(flat) || flatteners.count(flat.op_type) == 0 || fs == nullptr || fs->size() != 2) {
    return false;
  }
  const Dims& xs = *ed.shape(conv.inputs[0]);
  const common::Tensor& w = *ed.initializer(conv.inputs[1]);
  if (!as_conv(ed, conv) || (*fs)[0] != xs[0] || (*fs)[1] != w.dims[0]) return false;
  DenseLayer dense;
  dense.n = w.dims[0];
  dense.k = w.numel() / dense.n;
  dense.dtype = w.dtype;
  const std::vector<double> wv = w.to_double();
  std::vector<double> dw(wv.size());
  for (int64_t r = 0; r < dense.k; ++r) {
    for (int64_t c = 0; c < dense.n; ++c) dw[r * dense.n + c] = wv[c * dense.k + r];
  }
  dense.set_weights(std::move(dw));
  const common::Tensor* bias = conv.has_input(2) ? ed.initializer(conv.inputs[2]) : nullptr;
  if (conv.has_input(2) && bias == nullptr) return false;
  dense.b = bias != nullptr ? bias->to_double() : std::vector<double>(dense.n, 0.0);
  Node flatten;
  flatten.name = conv.name + "_flatten";
  flatten.op_type = "Flatten";
  flatten.inputs = {conv.inputs[0]};
  flatten.outputs = {ed.add_value(conv.name + "_flat", w.dtype, {xs[0], dense.k})};
  flatten.set_attr(common::Attribute::make_int("axis", 1));
  dense.set_x(flatten.outputs[0]);
  ed.remove_node(i);
  ed.add_node(std::move(flatten));
  dense.write(ed, f);
  ed.count();
  return true;
}

common::Result<int64_t> convs_to_gemm(common::Graph& g) {
  Editor ed(g);
  for (int i = 0; i < static_cast<int>(ed.size()); ++i) {
    const Node& n = ed.node(i);
    if (ed.live(i) && is_onnx(n) && n.op_type == "Conv" && n.inputs.size() >= 2)
      conv_to_gemm(ed, i);
  }
  return ed.finish();
}

}  // namespace

void register_conv_passes(PassRegistry& table) {
  table.add("pad-into-conv",
            {"fold a zero constant Pad of spatial axes into the next Conv", fold_pads});
  table.add(
      "conv-to-gemm",
      {"Conv whose kernel covers its whole input, then Flatten -> Flatten + Gemm", convs_to_gemm});
}

}  // namespace slimonnx

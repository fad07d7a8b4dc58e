// Conv / ConvTranspose as layers that per-channel affine maps fold into.
#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

#include "common/op_params.h"
#include "slimonnx/layer.h"

namespace slimonnx {
namespace {

using common::Dims;
using common::Node;
using common::Tensor;

// Weight layout: Conv [Cout, Cin/group, k...]; ConvTranspose [Cin, Cout/group, k...].
class ConvLayer : public Layer {
 public:
  Dims wdims;
  std::vector<double> w, b;  ///< b always has one entry per output channel
  int64_t group = 1;
  bool transposed = false;
  bool zero_padding = false;
  common::DType dtype = common::DType::kFloat;

  int64_t out_axis(int64_t) const override { return 1; }
  int64_t inner() const { return common::num_elements(Dims(wdims.begin() + 2, wdims.end())); }
  int64_t out_channels() const { return transposed ? wdims[1] * group : wdims[0]; }
  int64_t in_channels() const { return transposed ? wdims[0] : wdims[1] * group; }

  // Output channel of weight row r (first weight axis) and column j (second weight axis).
  int64_t out_channel(int64_t r, int64_t j) const {
    return transposed ? (r / (wdims[0] / group)) * wdims[1] + j : r;
  }
  // Input channel of weight row r and column j.
  int64_t in_channel(int64_t r, int64_t j) const {
    return transposed ? r : (r / (wdims[0] / group)) * wdims[1] + j;
  }

  // Conv(x) * S + T:  W[co] *= S[co],  b[co] = b[co] * S[co] + T[co]
  bool fold_after(const AxisAffine& a) override {
    if (static_cast<int64_t>(a.s.size()) != out_channels()) return false;
    for_each_weight([&](int64_t co, int64_t, double& v) { v *= a.s[co]; });
    for (size_t co = 0; co < b.size(); ++co) b[co] = b[co] * a.s[co] + a.t[co];
    return true;
  }

  // Conv(x * S + T):  b[co] += sum W[co, ci, k] * T[ci],  W[co, ci] *= S[ci]
  // exact only without padding (padding adds zeros, not T); ConvTranspose only without shift.
  bool fold_before(const Affine& a) override {
    if (a.dims.size() < 3 || a.dims[1] != in_channels()) return false;
    std::optional<AxisAffine> per = along_axis(a.s, a.t, a.dims, 1);
    if (!per) return false;
    if (a.has_shift() && (transposed || !zero_padding)) return false;
    for_each_weight([&](int64_t co, int64_t ci, double& v) {
      b[co] += v * per->t[ci];
      v *= per->s[ci];
    });
    return true;
  }

  bool writable(const Editor&, int) const override { return true; }

  bool write(Editor& ed, int i) const override {
    Node node = ed.node(i);
    node.inputs.resize(3);
    node.inputs[0] = x();
    node.inputs[1] = ed.add_initializer(node.name + "_weight", float_tensor(w, wdims, dtype));
    node.inputs[2] =
        ed.add_initializer(node.name + "_bias", float_tensor(b, {out_channels()}, dtype));
    const std::vector<std::string> old_inputs = ed.node(i).inputs;
    ed.remove_node(i);
    ed.add_node(std::move(node));
    for (const std::string& in : old_inputs) ed.release_if_unused(in);
    return true;
  }

 private:
  template <class F>
  void for_each_weight(F f) {
    const int64_t cols = wdims[1], in = inner();
    for (int64_t r = 0; r < wdims[0]; ++r) {
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t co = out_channel(r, j), ci = in_channel(r, j);
        for (int64_t e = 0; e < in; ++e) f(co, ci, w[(r * cols + j) * in + e]);
      }
    }
  }
};

// Whether the window (common::read_window) pads nothing explicitly; nullopt when it is malformed.
std::optional<bool> has_zero_padding(const Node& n, const std::vector<int64_t>& wdims) {
  const size_t spatial = wdims.size() - 2;
  common::Result<common::Window> w =
      common::read_window(n, spatial, std::vector<int64_t>(wdims.begin() + 2, wdims.end()));
  if (!w.ok()) return std::nullopt;
  const auto zero = [](const std::vector<int64_t>& p) {
    return std::all_of(p.begin(), p.end(), [](int64_t v) { return v == 0; });
  };
  return !w->same() && zero(w->pad_begin) && zero(w->pad_end);
}

bool valid_grouping(const ConvLayer& c) {
  return c.wdims.size() >= 3 && c.group >= 1 && c.wdims[0] % c.group == 0;
}

}  // namespace

std::unique_ptr<Layer> as_conv(const Editor& ed, const Node& n) {
  static const std::map<std::string_view, bool> kinds = {{"Conv", false}, {"ConvTranspose", true}};
  auto kind = kinds.find(n.op_type);
  if (!is_onnx(n) || kind == kinds.end() || n.inputs.size() < 2 || n.outputs.size() != 1) {
    return nullptr;
  }
  auto c = std::make_unique<ConvLayer>();
  c->transposed = kind->second;
  c->set_x(n.inputs[0]);
  const Tensor* wt = ed.initializer(n.inputs[1]);
  std::optional<std::vector<double>> w = float_data(wt);
  if (!w || ed.initializer(n.inputs[0]) != nullptr || ed.dtype(n.inputs[0]) != wt->dtype) {
    return nullptr;
  }
  c->wdims = wt->dims;
  c->w = std::move(*w);
  c->dtype = wt->dtype;
  c->group = n.attr_int("group", 1);
  if (!valid_grouping(*c)) return nullptr;
  std::optional<bool> zero_padding = has_zero_padding(n, c->wdims);
  if (!zero_padding) return nullptr;
  c->zero_padding = *zero_padding;
  c->b.assign(c->out_channels(), 0.0);
  if (!n.has_input(2)) return c;
  std::optional<std::vector<double>> b = float_data(ed.initializer(n.inputs[2]));
  if (!b || static_cast<int64_t>(b->size()) != c->out_channels()) return nullptr;
  c->b = std::move(*b);
  return c;
}

}  // namespace slimonnx

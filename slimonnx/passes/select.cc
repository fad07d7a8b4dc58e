// Selections of input features (Slice / Gather on the last axis) folded into the dense layer that
// reads them: the layer reads the whole input with zero (or summed) weight rows instead.
#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "common/op_params.h"
#include "slimonnx/layer.h"
#include "slimonnx/pass.h"

namespace slimonnx {
namespace {

using common::Node;

int64_t clamp_index(int64_t v, int64_t dim) {
  if (v < 0) v += dim;
  return std::max<int64_t>(0, std::min(v, dim));
}

// Source column in X for each output column of Slice(X) along the last axis, or nullopt.
std::optional<std::vector<int64_t>> slice_columns(const Editor& ed, const Node& n, int64_t rank,
                                                  int64_t dim) {
  auto starts = int_param(ed, n, 1, "starts"), ends = int_param(ed, n, 2, "ends");
  auto axes = int_param(ed, n, 3, "axes"), steps = int_param(ed, n, 4, "steps");
  if (!starts || !ends || !axes || !steps || starts->size() != 1 || ends->size() != 1) {
    return std::nullopt;
  }
  const common::Result<int64_t> axis = common::normalize_axis(axes->empty() ? 0 : (*axes)[0], rank);
  const int64_t step = steps->empty() ? 1 : (*steps)[0];
  if (!axis.ok() || *axis != rank - 1 || step < 1) return std::nullopt;
  std::vector<int64_t> cols;
  for (int64_t c = clamp_index((*starts)[0], dim); c < clamp_index((*ends)[0], dim); c += step) {
    cols.push_back(c);
  }
  return cols;
}

// Source column for each output column of Gather(X, indices) on the last axis, or nullopt.
std::optional<std::vector<int64_t>> gather_columns(const Editor& ed, const Node& n, int64_t rank,
                                                   int64_t dim) {
  const common::Result<int64_t> axis = common::normalize_axis(n.attr_int("axis", 0), rank);
  const common::Tensor* idx = n.inputs.size() == 2 ? ed.initializer(n.inputs[1]) : nullptr;
  if (!axis.ok() || *axis != rank - 1 || idx == nullptr || idx->dims.size() != 1) {
    return std::nullopt;
  }
  std::vector<int64_t> cols = idx->to_int64();
  for (int64_t& c : cols) {
    if (c < 0) c += dim;
    if (c < 0 || c >= dim) return std::nullopt;
  }
  return cols;
}

using ColumnRule = std::optional<std::vector<int64_t>> (*)(const Editor&, const Node&, int64_t,
                                                           int64_t);

const std::map<std::string_view, ColumnRule>& column_rules() {
  static const std::map<std::string_view, ColumnRule> rules = {{"Slice", slice_columns},
                                                               {"Gather", gather_columns}};
  return rules;
}

// Dense(Slice(X, last axis) or Gather(X, const, last axis)) -> Dense'(X)   rows moved to their
// source columns, the others zero; when the selection has 1 user
bool fold_selection(Editor& ed, int i) {
  const Node& n = ed.node(i);
  const int p = n.inputs.empty() ? -1 : ed.producer(n.inputs[0]);
  if (p < 0 || !ed.single_use(n.inputs[0]) || !is_onnx(ed.node(p))) return false;
  auto rule = column_rules().find(ed.node(p).op_type);
  if (rule == column_rules().end()) return false;
  const std::string x = ed.node(p).inputs[0];
  const common::Dims* xs = ed.shape(x);
  const common::Dims* sel = ed.shape(n.inputs[0]);
  if (xs == nullptr || sel == nullptr || xs->size() != sel->size() || xs->size() < 2) return false;
  std::optional<std::vector<int64_t>> cols = rule->second(ed, ed.node(p), xs->size(), xs->back());
  std::unique_ptr<DenseLayer> d = as_dense(ed, n);
  if (!cols || !d || static_cast<int64_t>(cols->size()) != d->k) return false;
  if (xs->back() > 4 * d->k && xs->back() * d->n > (int64_t{1} << 20)) return false;  // too wide
  std::vector<double> w(xs->back() * d->n, 0.0);
  for (int64_t r = 0; r < d->k; ++r) {
    for (int64_t c = 0; c < d->n; ++c) w[(*cols)[r] * d->n + c] += d->weight(r, c);
  }
  d->set_weights(std::move(w));
  d->k = xs->back();
  d->set_x(x);
  if (!d->write(ed, i)) return false;
  ed.remove_node(p);
  ed.count();
  return true;
}

common::Result<int64_t> fold_selections(common::Graph& g) {
  Editor ed(g);
  for (int i = 0; i < static_cast<int>(ed.size()); ++i) {
    const Node& n = ed.node(i);
    if (ed.live(i) && is_onnx(n) && (n.op_type == "Gemm" || n.op_type == "MatMul")) {
      fold_selection(ed, i);
    }
  }
  return ed.finish();
}

}  // namespace

void register_select_passes(PassRegistry& table) {
  table.add("select-into-linear",
            {"fold Slice/Gather of input features (last axis) into the next Gemm/MatMul",
             fold_selections});
}

}  // namespace slimonnx

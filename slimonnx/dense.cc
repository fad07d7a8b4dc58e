// Dense layers (MatMul / Gemm with constant weights) read into and written from one form.
#include <algorithm>
#include <map>
#include <span>
#include <string_view>
#include <utility>

#include "slimonnx/layer.h"

namespace slimonnx {
namespace {

using common::Dims;
using common::Node;
using common::Tensor;

// A constant 2-D float matrix as the layer's weights (k x n, transposed when `transpose`).
bool set_matrix(DenseLayer& d, const Tensor* t, bool transpose) {
  if (t == nullptr || !common::is_float_or_double(t->dtype) || t->dims.size() != 2) return false;
  if (t->numel() < 0 ||
      static_cast<size_t>(t->numel()) * common::dtype_size(t->dtype) != t->raw.size())
    return false;
  d.k = t->dims[transpose ? 1 : 0];
  d.n = t->dims[transpose ? 0 : 1];
  d.set_source(t, transpose);
  return true;
}

// MatMul(X, W) with W a constant k x n matrix and X of rank >= 2.
std::unique_ptr<DenseLayer> matmul_dense(const Editor& ed, const Node& n) {
  if (n.inputs.size() != 2 || ed.initializer(n.inputs[0]) != nullptr) return nullptr;
  auto d = std::make_unique<DenseLayer>();
  d->set_x(n.inputs[0]);
  const bool w = set_matrix(*d, ed.initializer(n.inputs[1]), false);
  const Dims* xs = ed.shape(d->x());
  if (!w || xs == nullptr || xs->size() < 2 || xs->back() != d->k) return nullptr;
  d->dtype = ed.initializer(n.inputs[1])->dtype;
  return d;
}

// The bias of a Gemm when C is the same for every row, scaled by beta.
std::optional<std::vector<double>> gemm_bias(const Editor& ed, const Node& n, int64_t rows,
                                             int64_t cols) {
  const Tensor* c = ed.initializer(n.inputs[2]);
  if (c == nullptr || !common::is_float_or_double(c->dtype)) return std::nullopt;
  std::optional<std::vector<double>> full = expand_to(*c, {rows, cols});
  if (!full) return std::nullopt;
  const std::vector<double> zeros(full->size(), 0.0);
  std::optional<AxisAffine> per_col = along_axis(*full, zeros, {rows, cols}, 1);
  if (!per_col) return std::nullopt;
  const double beta = n.attr_float("beta", 1.0f);
  for (double& v : per_col->s) v *= beta;
  return std::move(per_col->s);
}

// Gemm(X, B, C) with transA = 0, constant B and a constant C that is the same for every row.
std::unique_ptr<DenseLayer> gemm_dense(const Editor& ed, const Node& n) {
  if (n.inputs.size() < 2 || n.attr_int("transA", 0) != 0) return nullptr;
  if (ed.initializer(n.inputs[0]) != nullptr) return nullptr;
  auto d = std::make_unique<DenseLayer>();
  d->set_x(n.inputs[0]);
  const Tensor* bt = ed.initializer(n.inputs[1]);
  const bool w = set_matrix(*d, bt, n.attr_int("transB", 0) != 0);
  const Dims* xs = ed.shape(d->x());
  if (!w || xs == nullptr || xs->size() != 2 || (*xs)[1] != d->k) return nullptr;
  d->scale(n.attr_float("alpha", 1.0f));
  d->dtype = bt->dtype;
  if (!n.has_input(2)) return d;
  std::optional<std::vector<double>> b = gemm_bias(ed, n, (*xs)[0], d->n);
  if (!b) return nullptr;
  d->b = std::move(*b);
  return d;
}

using DenseReader = std::unique_ptr<DenseLayer> (*)(const Editor&, const Node&);

const std::map<std::string_view, DenseReader>& dense_readers() {
  static const std::map<std::string_view, DenseReader> readers = {{"MatMul", matmul_dense},
                                                                  {"Gemm", gemm_dense}};
  return readers;
}

}  // namespace

std::unique_ptr<DenseLayer> as_dense(const Editor& ed, const Node& n) {
  if (!is_onnx(n) || n.outputs.size() != 1) return nullptr;
  auto it = dense_readers().find(n.op_type);
  if (it == dense_readers().end()) return nullptr;
  std::unique_ptr<DenseLayer> d = it->second(ed, n);
  if (d && (!common::is_float_or_double(d->dtype) || ed.dtype(d->x()) != d->dtype)) return nullptr;
  return d;
}

void DenseLayer::set_source(const Tensor* t, bool transposed) {
  src_ = t;
  transposed_ = transposed;
  scalings_.clear();
  w_.clear();
}

void DenseLayer::scale(double alpha) {
  if (src_ != nullptr) {
    scalings_.push_back({Scaling::Kind::kAll, {alpha}});
    return;
  }
  for (double& v : w_) v *= alpha;
}

double DenseLayer::weight(int64_t r, int64_t c) const {
  if (src_ == nullptr) return w_[r * n + c];
  const int64_t at = transposed_ ? c * k + r : r * n + c;
  double v =
      src_->dtype == common::DType::kFloat ? src_->span<float>()[at] : src_->span<double>()[at];
  for (const Scaling& s : scalings_) {
    v *= s.kind == Scaling::Kind::kAll ? s.s[0] : s.kind == Scaling::Kind::kRow ? s.s[r] : s.s[c];
  }
  return v;
}

std::vector<double>& DenseLayer::weights() {
  if (src_ == nullptr) return w_;
  std::vector<double> w(k * n);
  for (int64_t r = 0; r < k; ++r) {
    for (int64_t c = 0; c < n; ++c) w[r * n + c] = weight(r, c);
  }
  set_weights(std::move(w));
  return w_;
}

void DenseLayer::set_weights(std::vector<double> w) {
  src_ = nullptr;
  scalings_.clear();
  w_ = std::move(w);
}

namespace {

template <class T>
void fill_weights(const DenseLayer& d, std::span<T> out) {
  for (int64_t r = 0; r < d.k; ++r) {
    for (int64_t c = 0; c < d.n; ++c) out[r * d.n + c] = static_cast<T>(d.weight(r, c));
  }
}

}  // namespace

Tensor DenseLayer::weight_tensor() const {
  if (!common::is_float_or_double(dtype)) {
    std::vector<double> w(k * n);
    for (int64_t r = 0; r < k; ++r) {
      for (int64_t c = 0; c < n; ++c) w[r * n + c] = weight(r, c);
    }
    return float_tensor(w, {k, n}, dtype);
  }
  Tensor t = Tensor::zeros(dtype, {k, n});
  if (dtype == common::DType::kFloat) {
    fill_weights(*this, t.mutable_span<float>());
  } else {
    fill_weights(*this, t.mutable_span<double>());
  }
  return t;
}

// layer(x) * S + T:  W[:, j] *= S[j],  b[j] = b[j] * S[j] + T[j]
bool DenseLayer::fold_after(const AxisAffine& a) {
  if (static_cast<int64_t>(a.s.size()) != n) return false;
  if (src_ != nullptr) {
    scalings_.push_back({Scaling::Kind::kColumn, a.s});
  } else {
    for (int64_t r = 0; r < k; ++r) {
      for (int64_t c = 0; c < n; ++c) w_[r * n + c] *= a.s[c];
    }
  }
  const bool shift = std::any_of(a.t.begin(), a.t.end(), [](double v) { return v != 0; });
  if (b.empty() && !shift) return true;
  if (b.empty()) b.assign(n, 0.0);
  for (int64_t c = 0; c < n; ++c) b[c] = b[c] * a.s[c] + a.t[c];
  return true;
}

// layer(x * S + T):  W[r, :] *= S[r],  b += T . W
bool DenseLayer::fold_before(const Affine& a) {
  const int64_t total = static_cast<int64_t>(a.s.size());
  if (k == 0 || total % k != 0) return false;
  std::optional<AxisAffine> per_row = along_axis(a.s, a.t, {total / k, k}, 1);
  if (!per_row) return false;
  if (a.has_shift()) {
    if (b.empty()) b.assign(n, 0.0);
    for (int64_t r = 0; r < k; ++r) {
      for (int64_t c = 0; c < n; ++c) b[c] += per_row->t[r] * weight(r, c);
    }
  }
  if (src_ != nullptr) {
    scalings_.push_back({Scaling::Kind::kRow, std::move(per_row->s)});
    return true;
  }
  for (int64_t r = 0; r < k; ++r) {
    for (int64_t c = 0; c < n; ++c) w_[r * n + c] *= per_row->s[r];
  }
  return true;
}

namespace {

// The slot of the constant in the single Add consuming `value` when that constant is a
// [1, ..., 1, n] tensor of `dtype` (a bias a MatMul of rank > 2 can hand its own bias to); or -1.
int bias_sink(const Editor& ed, const std::string& value, int64_t n, common::DType dtype,
              int* add) {
  if (!ed.single_use(value)) return -1;
  *add = ed.consumers(value)[0];
  const Node& node = ed.node(*add);
  if (!is_onnx(node) || node.op_type != "Add" || node.inputs.size() != 2) return -1;
  const int slot = node.inputs[0] == value ? 1 : 0;
  const Tensor* c = ed.initializer(node.inputs[slot]);
  if (c == nullptr || c->dtype != dtype || c->dims.empty() || c->dims.back() != n) return -1;
  if (c->numel() != n || node.inputs[1 - slot] != value) return -1;
  return slot;
}

}  // namespace

bool DenseLayer::writable(const Editor& ed, int i) const {
  const Dims* xs = ed.shape(x());
  if (xs == nullptr) return false;
  if (b.empty() || xs->size() == 2) return true;  // no bias, or a Gemm that holds it
  int add = -1;
  return bias_sink(ed, ed.node(i).outputs[0], n, dtype, &add) >= 0 && add != doomed();
}

bool DenseLayer::write(Editor& ed, int i) const {
  if (!writable(ed, i)) return false;
  const bool gemm = ed.shape(x())->size() == 2 && !b.empty();
  int add = -1;
  const int sink = gemm || b.empty() ? -1 : bias_sink(ed, ed.node(i).outputs[0], n, dtype, &add);
  if (sink >= 0) {  // MatMul(X, W) + c  with the bias moved into c
    const Tensor& c = *ed.initializer(ed.node(add).inputs[sink]);
    std::vector<double> sum = c.to_double();
    for (int64_t j = 0; j < n; ++j) sum[j] += b[j];
    ed.set_input(add, sink,
                 ed.add_initializer(ed.node(add).name + "_bias", float_tensor(sum, c.dims, dtype)));
  }
  Node node;
  node.name = ed.node(i).name;
  node.op_type = gemm ? "Gemm" : "MatMul";
  node.outputs = ed.node(i).outputs;
  node.inputs = {x(), ed.add_initializer(node.name + "_weight", weight_tensor())};
  if (gemm)
    node.inputs.push_back(ed.add_initializer(node.name + "_bias", float_tensor(b, {n}, dtype)));
  const std::vector<std::string> old_inputs = ed.node(i).inputs;
  ed.remove_node(i);
  ed.add_node(std::move(node));
  for (const std::string& in : old_inputs) ed.release_if_unused(in);
  return true;
}

std::unique_ptr<Layer> as_layer(const Editor& ed, const Node& n) {
  if (std::unique_ptr<DenseLayer> d = as_dense(ed, n)) return d;
  return as_conv(ed, n);
}

}  // namespace slimonnx

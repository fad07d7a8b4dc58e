#include "slimonnx/affine.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>

namespace slimonnx {
namespace {

using common::Dims;
using common::Node;
using common::Tensor;

// The data input (non-constant) and constant slot of a binary node, with shapes checked:
// the data input keeps the output's shape and the constant broadcasts to it.
struct Binary {
  size_t data = 0, constant = 1;
  std::vector<double> c;
};

std::optional<Binary> split_binary(const Editor& ed, const Node& n) {
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return std::nullopt;
  for (size_t slot : {size_t{1}, size_t{0}}) {
    const Tensor* t = ed.initializer(n.inputs[slot]);
    const std::string& data = n.inputs[1 - slot];
    if (t == nullptr || !common::is_float_or_double(t->dtype) || ed.initializer(data) != nullptr)
      continue;
    const Dims* dims = ed.shape(data);
    const Dims* out = ed.shape(n.outputs[0]);
    if (dims == nullptr || out == nullptr || *dims != *out ||
        !common::is_float_or_double(ed.dtype(data))) {
      return std::nullopt;
    }
    std::optional<std::vector<double>> c = expand_to(*t, *dims);
    if (!c) return std::nullopt;
    return Binary{1 - slot, slot, std::move(*c)};
  }
  return std::nullopt;
}

Affine make(const Editor& ed, const Node& n, const Binary& b) {
  Affine a;
  a.x = n.inputs[b.data];
  a.dims = *ed.shape(a.x);
  a.s.assign(b.c.size(), 1.0);
  a.t.assign(b.c.size(), 0.0);
  return a;
}

using AffineRule = std::optional<Affine> (*)(const Editor&, const Node&);

// Add(X, C) -> X * 1 + C
std::optional<Affine> add_affine(const Editor& ed, const Node& n) {
  std::optional<Binary> b = split_binary(ed, n);
  if (!b) return std::nullopt;
  Affine a = make(ed, n, *b);
  a.t = b->c;
  return a;
}

// Sub(X, C) -> X * 1 - C;   Sub(C, X) -> X * -1 + C
std::optional<Affine> sub_affine(const Editor& ed, const Node& n) {
  std::optional<Binary> b = split_binary(ed, n);
  if (!b) return std::nullopt;
  Affine a = make(ed, n, *b);
  const bool x_first = b->data == 0;
  for (size_t i = 0; i < a.t.size(); ++i) {
    a.s[i] = x_first ? 1.0 : -1.0;
    a.t[i] = x_first ? -b->c[i] : b->c[i];
  }
  return a;
}

// Mul(X, C) -> X * C + 0
std::optional<Affine> mul_affine(const Editor& ed, const Node& n) {
  std::optional<Binary> b = split_binary(ed, n);
  if (!b) return std::nullopt;
  Affine a = make(ed, n, *b);
  a.s = b->c;
  return a;
}

// Div(X, C) -> X * (1 / C) + 0
std::optional<Affine> div_affine(const Editor& ed, const Node& n) {
  std::optional<Binary> b = split_binary(ed, n);
  if (!b || b->data != 0) return std::nullopt;
  Affine a = make(ed, n, *b);
  for (size_t i = 0; i < a.s.size(); ++i) {
    if (b->c[i] == 0) return std::nullopt;
    a.s[i] = 1.0 / b->c[i];
  }
  return a;
}

// Neg(X) -> X * -1 + 0
std::optional<Affine> neg_affine(const Editor& ed, const Node& n) {
  const Dims* dims = n.inputs.size() == 1 ? ed.shape(n.inputs[0]) : nullptr;
  if (dims == nullptr || !common::is_float_or_double(ed.dtype(n.inputs[0]))) return std::nullopt;
  const int64_t size = common::num_elements(*dims);
  return Affine{n.inputs[0], *dims, std::vector<double>(size, -1.0),
                std::vector<double>(size, 0.0)};
}

// BatchNormalization(X, g, b, m, v) -> X * s + t   s = g / sqrt(v + eps), t = b - m * s (axis 1)
std::optional<Affine> batchnorm_affine(const Editor& ed, const Node& n) {
  if (n.inputs.size() != 5 || n.attr_int("training_mode", 0) != 0) return std::nullopt;
  for (size_t k = 1; k < n.outputs.size(); ++k) {
    if (!n.outputs[k].empty() && !ed.unused(n.outputs[k])) return std::nullopt;
  }
  const Dims* dims = ed.shape(n.inputs[0]);
  if (dims == nullptr || dims->size() < 2 || !common::is_float_or_double(ed.dtype(n.inputs[0]))) {
    return std::nullopt;
  }
  std::vector<std::vector<double>> p;
  for (size_t k = 1; k < 5; ++k) {
    std::optional<std::vector<double>> v = float_data(ed.initializer(n.inputs[k]));
    if (!v || static_cast<int64_t>(v->size()) != (*dims)[1]) return std::nullopt;
    p.push_back(std::move(*v));
  }
  const double eps = n.attr_float("epsilon", 1e-5f);
  Dims per_channel(dims->size(), 1);
  per_channel[1] = (*dims)[1];
  std::vector<double> s(p[0].size()), t(p[0].size());
  for (size_t c = 0; c < s.size(); ++c) {
    s[c] = p[0][c] / std::sqrt(p[3][c] + eps);
    t[c] = p[1][c] - p[2][c] * s[c];
  }
  Affine a{n.inputs[0], *dims, {}, {}};
  a.s = *expand_to(Tensor::from_double(s, per_channel, common::DType::kDouble), *dims);
  a.t = *expand_to(Tensor::from_double(t, per_channel, common::DType::kDouble), *dims);
  return a;
}

const std::map<std::string_view, AffineRule>& affine_rules() {
  static const std::map<std::string_view, AffineRule> rules = {
      {"Add", add_affine}, {"Sub", sub_affine}, {"Mul", mul_affine},
      {"Div", div_affine}, {"Neg", neg_affine}, {"BatchNormalization", batchnorm_affine},
  };
  return rules;
}

}  // namespace

bool Affine::has_shift() const {
  for (double v : t) {
    if (v != 0) return true;
  }
  return false;
}

std::optional<Affine> as_affine(const Editor& ed, const Node& n) {
  if (!is_onnx(n) || n.outputs.empty()) return std::nullopt;
  auto it = affine_rules().find(n.op_type);
  if (it == affine_rules().end()) return std::nullopt;
  // s and t are held at the data's full shape (that of the output): larger maps are left alone.
  const Dims* out = ed.shape(n.outputs[0]);
  const int64_t size = out ? common::num_elements(*out) : -1;
  if (size < 0 || size > kMaxAffineElements) return std::nullopt;
  return it->second(ed, n);
}

std::optional<std::vector<double>> expand_to(const Tensor& t, const Dims& dims) {
  if (t.dims.size() > dims.size() || common::num_elements(dims) < 0) return std::nullopt;
  const size_t rank = dims.size();
  const size_t lead = rank - t.dims.size();
  std::vector<int64_t> stride(rank, 0);
  int64_t s = 1;
  for (size_t i = rank; i-- > lead;) {
    const int64_t d = t.dims[i - lead];
    if (d != 1 && d != dims[i]) return std::nullopt;
    stride[i] = d == 1 ? 0 : s;
    s *= d;
  }
  const std::vector<double> src = t.to_double();
  std::vector<double> out(common::num_elements(dims));
  std::vector<int64_t> idx(rank, 0);
  int64_t offset = 0;
  for (double& v : out) {
    v = src[offset];
    for (size_t i = rank; i-- > 0;) {  // odometer increment
      offset += stride[i];
      if (++idx[i] < dims[i]) break;
      offset -= stride[i] * dims[i];
      idx[i] = 0;
    }
  }
  return out;
}

std::optional<AxisAffine> along_axis(const std::vector<double>& s, const std::vector<double>& t,
                                     const Dims& dims, int64_t axis) {
  if (axis < 0 || axis >= static_cast<int64_t>(dims.size())) return std::nullopt;
  int64_t inner = 1;
  for (size_t i = axis + 1; i < dims.size(); ++i) inner *= dims[i];
  const int64_t size = dims[axis];
  AxisAffine out{std::vector<double>(size), std::vector<double>(size)};
  std::vector<bool> seen(size, false);
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t c = (static_cast<int64_t>(i) / inner) % size;
    if (!seen[c]) {
      seen[c] = true;
      out.s[c] = s[i];
      out.t[c] = t[i];
    } else if (out.s[c] != s[i] || out.t[c] != t[i]) {
      return std::nullopt;
    }
  }
  return out;
}

namespace {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Strided = Eigen::Map<Mat, 0, Eigen::OuterStride<>>;
using Entry = std::function<double(int64_t, int64_t)>;

// B at most this many elements is read whole.
constexpr int64_t kWholeElements = int64_t{1} << 22;
// Elements of B per block.
constexpr int64_t kBlockElements = int64_t{1} << 21;

// Rows [r0, r1) x columns [c0, c1) of B, row-major.
std::vector<double> block(const Entry& b, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  std::vector<double> out((r1 - r0) * (c1 - c0));
  size_t e = 0;
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t c = c0; c < c1; ++c) out[e++] = b(r, c);
  }
  return out;
}

// Block ends over [0, size): multiples of `step`, about `want` long, none shorter than `least`
// (the last takes the rest).
std::vector<int64_t> cuts(int64_t size, int64_t want, int64_t step, int64_t least) {
  const int64_t len = std::max(least, want - want % step);
  std::vector<int64_t> ends;
  for (int64_t at = len; size - at >= least; at += len) ends.push_back(at);
  ends.push_back(size);
  return ends;
}

// k >= 2 rows: Eigen's GEMM sums each product over the depth in blocks whose size depends on the
// depth and the L1 cache only, so column blocks of B (whole register panels: multiples of 64,
// never one column, which would make it a GEMV) give every element the same sums.
void by_columns(const std::vector<double>& a, const Entry& b, int64_t k, int64_t m, int64_t n,
                std::vector<double>& out) {
  Eigen::Map<const Mat> ma(a.data(), k, m);
  int64_t c0 = 0;
  for (int64_t c1 : cuts(n, kBlockElements / m, 64, 64)) {
    const std::vector<double> part = block(b, 0, m, c0, c1);
    Strided(out.data() + c0, k, c1 - c0, Eigen::OuterStride<>(n)).noalias() =
        ma * Eigen::Map<const Mat>(part.data(), m, c1 - c0);
    c0 = c1;
  }
}

// One row: Eigen's GEMV adds into the result one chunk of 16 (or 4) depth steps at a time, the
// chunk size set by B's row stride (kept: whole rows of B) when the depth is 128 or more; row
// blocks of B that are multiples of 16 and at least 128 long add the same chunks in the same order.
void by_rows(const std::vector<double>& a, const Entry& b, int64_t m, int64_t n,
             std::vector<double>& out) {
  Eigen::Map<Mat> result(out.data(), 1, n);
  int64_t r0 = 0;
  for (int64_t r1 : cuts(m, kBlockElements / n, 16, 128)) {
    const std::vector<double> part = block(b, r0, r1, 0, n);
    result.noalias() += Eigen::Map<const Mat>(a.data() + r0, 1, r1 - r0) *
                        Eigen::Map<const Mat>(part.data(), r1 - r0, n);
    r0 = r1;
  }
}

}  // namespace

std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b, int64_t k,
                           int64_t m, int64_t n) {
  std::vector<double> out(k * n);
  Eigen::Map<const Mat> ma(a.data(), k, m);
  Eigen::Map<const Mat> mb(b.data(), m, n);
  Eigen::Map<Mat>(out.data(), k, n).noalias() = ma * mb;
  return out;
}

std::vector<double> matmul(const std::vector<double>& a, const Entry& b, int64_t k, int64_t m,
                           int64_t n) {
  const bool rows = k == 1 && m >= 256 && n >= 2;
  const bool columns = k >= 2 && m >= 48 && n >= 128;
  if (m * n <= kWholeElements || (!rows && !columns))
    return matmul(a, block(b, 0, m, 0, n), k, m, n);
  std::vector<double> out(k * n, 0.0);
  if (rows) {
    by_rows(a, b, m, n, out);
  } else {
    by_columns(a, b, k, m, n, out);
  }
  return out;
}

}  // namespace slimonnx

#include "propdag/ops/util.h"

#include <algorithm>
#include <bit>
#include <memory>
#include <utility>
#include <vector>

#include "common/eval/eval.h"

namespace propdag {

std::vector<int64_t> strides_of(const common::Dims& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * dims[i + 1];
  return s;
}

common::Result<int64_t> axis_at(const OpContext& ctx, int64_t axis, int64_t rank) {
  return ctx.view().at(common::normalize_axis(axis, rank));
}

LinearTerm gather_term(int slot, const std::vector<int64_t>& src, int64_t in_size,
                       const std::vector<double>& scale) {
  Gather g;
  g.rows = static_cast<int64_t>(src.size());
  g.cols = in_size;
  g.col = IndexMap::list(src);
  // One scale for every row is kept once (the same bits: a -0 scale is not a 0 one).
  const bool uniform = scale.empty() || std::all_of(scale.begin(), scale.end(), [&](double v) {
                         return std::bit_cast<uint64_t>(v) == std::bit_cast<uint64_t>(scale[0]);
                       });
  if (uniform) {
    g.coef = scale.empty() ? 1.0 : scale[0];
  } else {
    g.values = scale;
    g.scale_at = IndexMap::identity(g.rows);
  }
  return gather_term(slot, std::move(g));
}

LinearTerm gather_term(int slot, Gather g) {
  LinearTerm t;
  t.slot = slot;
  t.gather = std::make_shared<const Gather>(std::move(g));
  return t;
}

LinearTerm broadcast_term(int slot, const common::Dims& in, const common::Dims& out, double coef) {
  Gather g;
  g.cols = common::num_elements(in);
  g.col = IndexMap::broadcast(in, out);
  g.rows = g.col.size();
  g.coef = coef;
  return gather_term(slot, std::move(g));
}

LinearTerm sparse_term(int slot, int64_t rows, int64_t cols,
                       const std::vector<Eigen::Triplet<double>>& entries) {
  LinearTerm t;
  t.slot = slot;
  t.s.resize(rows, cols);
  t.s.setFromTriplets(entries.begin(), entries.end());
  return t;
}

std::vector<LinearTerm> one_term(LinearTerm term) {
  std::vector<LinearTerm> terms;
  terms.push_back(std::move(term));
  return terms;
}

OpOutputs affine_output(std::vector<LinearTerm> terms, Vec bias, common::Dims shape) {
  OpOutputs out;
  out.push_back({std::make_unique<AffineOp>(std::move(terms), std::move(bias)), std::move(shape)});
  return out;
}

std::vector<double> broadcast_constant(const common::Tensor& t, const common::Dims& out) {
  std::vector<int64_t> map = common::broadcast_map(t.dims, out);
  if (map.empty() && common::num_elements(out) != 0) return {};
  std::vector<double> values = t.to_double();
  std::vector<double> result(map.size());
  for (size_t i = 0; i < map.size(); ++i) result[i] = values[map[i]];
  return result;
}

void add_broadcast_constant(const common::Tensor& t, const common::Dims& out, double coef,
                            Vec& bias) {
  const std::vector<double> values = t.to_double();
  Gather g;
  g.rows = common::num_elements(out);
  g.col = IndexMap::broadcast(t.dims, out);
  g.for_each([&](int64_t i, int64_t j, double) { bias[i] += coef * values[j]; });
}

common::Result<std::vector<int64_t>> ints_input_or_attr(const OpContext& ctx, size_t input,
                                                        const char* attr) {
  const common::Tensor* value = ctx.present(input) ? ctx.constants[input] : nullptr;
  auto ints = ctx.view().at(common::ints_input_or_attr(ctx.node, input, value, attr, attr));
  if (!ints.ok()) return ints.error();
  return ints->value_or(std::vector<int64_t>{});
}

common::Result<MatMulShape> matmul_shape(const OpContext& ctx) {
  common::Dims a = ctx.shape(0), b = ctx.shape(1);
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  if (a.size() < 2 || b.size() < 2) return ctx.error("MatMul operands must have a dimension");
  common::Dims ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  auto batch = common::broadcast_shapes(ab, bb);
  if (!batch || a.back() != b[b.size() - 2]) return ctx.error("MatMul shapes do not match");
  MatMulShape s{a[a.size() - 2],
                a.back(),
                b.back(),
                common::broadcast_map(ab, *batch),
                common::broadcast_map(bb, *batch),
                *batch};
  if (!a_vec) s.out.push_back(s.m);
  if (!b_vec) s.out.push_back(s.n);
  return s;
}

PlaneSum::PlaneSum(int64_t rows) : lo_bias_(Vec::Zero(rows)), up_bias_(Vec::Zero(rows)) {
  for (auto& v : {&lo_, &up_})
    for (auto& t : *v) t.reserve(rows);
}

void PlaneSum::add(int64_t row, int64_t a, int64_t b, const Planes& p) {
  if (a >= 0) lo_[0].emplace_back(row, a, p.lo_x), up_[0].emplace_back(row, a, p.up_x);
  if (b >= 0) lo_[1].emplace_back(row, b, p.lo_y), up_[1].emplace_back(row, b, p.up_y);
  lo_bias_[row] += p.lo_bias, up_bias_[row] += p.up_bias;
}

namespace {

// Entries added row by row with ascending columns (every op adds them so) go straight into the
// compressed matrix; others are sorted and summed by setFromTriplets.
void fill(const std::vector<Eigen::Triplet<double>>& e, int64_t rows, int64_t cols, SpMat& m) {
  m.resize(rows, cols);
  for (size_t k = 1; k < e.size(); ++k)
    if (e[k].row() < e[k - 1].row() ||
        (e[k].row() == e[k - 1].row() && e[k].col() <= e[k - 1].col())) {
      m.setFromTriplets(e.begin(), e.end());
      return;
    }
  m.reserve(static_cast<Eigen::Index>(e.size()));
  size_t k = 0;
  for (int64_t row = 0; row < rows; ++row) {
    m.startVec(row);
    for (; k < e.size() && e[k].row() == row; ++k) m.insertBack(row, e[k].col()) = e[k].value();
  }
  m.finalize();
}

}  // namespace

Relaxation PlaneSum::finish(int64_t cols0, int64_t cols1) {
  Relaxation r;
  r.kind = Relaxation::Kind::kLinear;
  const int64_t rows = lo_bias_.size();
  Relaxation::Maps& m = r.new_maps();
  SpMat* maps[2][2] = {{&m.lo, &m.up}, {&m.lo1, &m.up1}};
  for (int s = 0; s < 2; ++s) {
    if (lo_[s].empty()) continue;
    const int64_t cols = s ? cols1 : cols0;
    fill(lo_[s], rows, cols, *maps[s][0]);
    fill(up_[s], rows, cols, *maps[s][1]);
  }
  r.lo_bias = std::move(lo_bias_), r.up_bias = std::move(up_bias_);
  return r;
}

}  // namespace propdag

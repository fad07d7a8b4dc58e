// Data-dependent indexing: Slice whose starts and / or ends are variables, ScatterND whose
// indices are (the index maps with constant indices are in index_copy.cc). Both bound each
// output element by the hull over the integer index values the input intervals allow (widened by
// 1e-6, then rounded inward: the values are integers), and both leave out the values with which
// the model would not run with the shapes propdag was built with.
//
// Slice (axes and steps constant): the output keeps its static shape (shape inference's). Per
// sliced axis the rule enumerates the starts and ends, maps them as ONNX does (a negative value
// counts from the end, then clamping), and keeps the begins of the windows whose length is the
// static one; each output element takes the hull of the input elements it may copy. A window of
// another length would give the output another shape, which no bound over the static shapes
// describes: such placements are left out, so the bounds hold for the runs in which the model has
// the shapes propdag was built with. An axis where no placement of the static length is possible,
// or whose hull over several begins would read more than kMaxWork bounds, takes the hull over its
// whole length. When every axis has one possible begin the op is the plain slice (exact bounds,
// and for CROWN the linear select); otherwise CROWN takes the output's interval (slope 0).
//
// ScatterND (reduction none): the output is data with the update of each index tuple written at
// the place the tuple names. An element takes data's value unless a tuple that is one point names
// it, or the update of any tuple that may name it (an index outside [-dim, dim - 1] stops the run,
// so such values are left out). Past kMaxWork candidate places, every element may take every
// update. CROWN takes the output's interval.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "propdag/ops/util.h"

namespace propdag {
namespace {

using common::Dims;
using common::num_elements;
using common::Result;

// Reads of input bounds past which an axis takes the hull over its whole length.
constexpr double kMaxWork = 1 << 26;

// One sliced axis: `at` is its element of the starts and ends inputs; `start` / `end` its value
// where that input is constant.
struct SliceAxis {
  int64_t axis = 0, step = 1, len = 0, at = 0;
  int64_t start = 0, end = 0;
};

// ONNX's start or end on an axis of size dim: a negative value counts from the end, then it is
// clamped to [0, dim] (positive steps) or, for negative steps, starts to [0, dim - 1] and ends to
// [-1, dim - 1].
int64_t clamp_index(int64_t v, int64_t dim, int64_t step, bool is_start) {
  if (v < 0) v += dim;
  if (step > 0) return std::clamp<int64_t>(v, 0, dim);
  return std::clamp<int64_t>(v, is_start ? 0 : -1, dim - 1);
}

// Which clamped values (index v + 1, v in [-1, dim]) the integers in [lo, hi] take. Clamping
// saturates past -dim - 1 and dim + 1, so at most 2 dim + 3 integers are looked at.
std::vector<char> clamped_values(double lo, double hi, int64_t dim, int64_t step, bool is_start) {
  std::vector<char> mark(dim + 2, 0);
  if (std::isnan(lo) || std::isnan(hi)) lo = -kInf, hi = kInf;
  const double first = std::max(std::ceil(lo - 1e-6), static_cast<double>(-dim - 1));
  const double last = std::min(std::floor(hi + 1e-6), static_cast<double>(dim + 1));
  for (double v = first; v <= last; ++v)
    mark[clamp_index(static_cast<int64_t>(v), dim, step, is_start) + 1] = 1;
  return mark;
}

// The begins b with some marked end e that makes the window [b, e) (by `step`) `len` long.
std::vector<int64_t> feasible_begins(const std::vector<char>& starts, const std::vector<char>& ends,
                                     int64_t dim, int64_t step, int64_t len) {
  std::vector<int64_t> count(ends.size() + 1, 0);  // count[i]: marked ends below index i
  for (size_t i = 0; i < ends.size(); ++i) count[i + 1] = count[i] + ends[i];
  auto any_end = [&](int64_t lo, int64_t hi) {  // an end in [lo, hi]
    lo = std::max<int64_t>(lo, -1), hi = std::min(hi, dim);
    return lo <= hi && count[hi + 2] - count[lo + 1] > 0;
  };
  const int64_t s = std::abs(step);
  std::vector<int64_t> begins;
  for (int64_t b = 0; b <= dim; ++b) {
    if (!starts[b + 1]) continue;
    const bool ok = len == 0   ? (step > 0 ? any_end(-1, b) : any_end(b, dim))
                    : step > 0 ? any_end(b + (len - 1) * s + 1, b + len * s)
                               : any_end(b - len * s, b - (len - 1) * s - 1);
    if (ok) begins.push_back(b);
  }
  return begins;
}

// Bounds of an axis sliced to `len` elements: element k of the output takes the hull of the
// elements b + k * step over `begins` (none: the hull over the whole axis).
void window_hull(Interval& x, Dims& dims, const SliceAxis& a, const std::vector<int64_t>& begins) {
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(dims.size()); ++i)
    if (i != a.axis) (i < a.axis ? outer : inner) *= dims[i];
  const int64_t dim = dims[a.axis], len = a.len;
  Interval y{Vec::Constant(outer * len * inner, kInf), Vec::Constant(outer * len * inner, -kInf)};
  const bool whole =
      begins.empty() ||
      (begins.size() > 1 && static_cast<double>(outer) * len * inner * begins.size() > kMaxWork);
  auto take = [&](int64_t o, int64_t k, int64_t p) {
    const int64_t to = (o * len + k) * inner, from = (o * dim + p) * inner;
    y.lo.segment(to, inner) = y.lo.segment(to, inner).cwiseMin(x.lo.segment(from, inner));
    y.hi.segment(to, inner) = y.hi.segment(to, inner).cwiseMax(x.hi.segment(from, inner));
  };
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < len; ++k) {
      if (whole && k > 0) {  // the same hull for every k
        y.lo.segment((o * len + k) * inner, inner) = y.lo.segment(o * len * inner, inner);
        y.hi.segment((o * len + k) * inner, inner) = y.hi.segment(o * len * inner, inner);
        continue;
      }
      if (whole) {
        for (int64_t p = 0; p < dim; ++p) take(o, k, p);
        continue;
      }
      for (int64_t b : begins) take(o, k, b + k * a.step);
    }
  x = std::move(y);
  dims[a.axis] = len;
}

class VariableSliceOp : public BoundOp {
 public:
  VariableSliceOp(Dims x, Dims out, std::vector<SliceAxis> axes, Vec data)
      : x_(std::move(x)), out_(std::move(out)), axes_(std::move(axes)), data_(std::move(data)) {}

  Interval interval(const std::vector<const Interval*>& in) const override {
    Interval y = in[0] ? *in[0] : Interval{data_, data_};
    Dims dims = x_;
    for (const SliceAxis& a : axes_) window_hull(y, dims, a, begins(a, in));
    return y;
  }

  // The plain slice's select where every axis has one begin, else the output's interval.
  Relaxation relax(const std::vector<const Interval*>& in, const Interval&) const override {
    if (in[0] == nullptr) return {};
    std::vector<int64_t> start(x_.size(), 0), step(x_.size(), 1);
    for (const SliceAxis& a : axes_) {
      std::vector<int64_t> b = begins(a, in);
      if (b.size() != 1) return {};
      start[a.axis] = b[0], step[a.axis] = a.step;
    }
    const std::vector<int64_t> in_strides = strides_of(x_), out_strides = strides_of(out_);
    const int64_t n = num_elements(out_);
    std::vector<Eigen::Triplet<double>> entries;
    for (int64_t flat = 0; flat < n; ++flat) {
      int64_t src = 0;
      for (size_t i = 0; i < x_.size(); ++i)
        src += (start[i] + flat / out_strides[i] % out_[i] * step[i]) * in_strides[i];
      entries.emplace_back(flat, src, 1.0);
    }
    Relaxation r;
    r.kind = Relaxation::Kind::kLinear;
    Relaxation::Maps& maps = r.new_maps();
    maps.lo.resize(n, num_elements(x_));
    maps.lo.setFromTriplets(entries.begin(), entries.end());
    maps.up = maps.lo;
    r.lo_bias = Vec::Zero(n), r.up_bias = Vec::Zero(n);
    return r;
  }
  int64_t weight_entries() const override { return 1; }

 private:
  std::vector<int64_t> begins(const SliceAxis& a, const std::vector<const Interval*>& in) const {
    const int64_t dim = x_[a.axis];
    auto values = [&](size_t slot, int64_t fixed, bool is_start) {
      if (in.size() <= slot || in[slot] == nullptr)
        return clamped_values(static_cast<double>(fixed), static_cast<double>(fixed), dim, a.step,
                              is_start);
      return clamped_values(in[slot]->lo[a.at], in[slot]->hi[a.at], dim, a.step, is_start);
    };
    return feasible_begins(values(1, a.start, true), values(2, a.end, false), dim, a.step, a.len);
  }

  Dims x_, out_;
  std::vector<SliceAxis> axes_;
  Vec data_;  // input 0 when constant
};

// The constant starts or ends, or none (the input is variable).
Result<std::vector<int64_t>> constant_ints(const OpContext& ctx, size_t slot, const char* attr) {
  if (ctx.variable(slot)) return std::vector<int64_t>{};
  return ints_input_or_attr(ctx, slot, attr);
}

// The integers in [lo, hi] that index an axis of size dim (from the end when negative), as
// indices in [0, dim - 1], ascending.
std::vector<int64_t> index_values(double lo, double hi, int64_t dim) {
  std::vector<int64_t> out;
  if (std::isnan(lo) || std::isnan(hi)) lo = -kInf, hi = kInf;
  const double first = std::max(std::ceil(lo - 1e-6), static_cast<double>(-dim));
  const double last = std::min(std::floor(hi + 1e-6), static_cast<double>(dim - 1));
  for (double v = first; v <= last; ++v) {
    const auto i = static_cast<int64_t>(v);
    out.push_back(i < 0 ? i + dim : i);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

class ScatterNdOp : public BoundOp {
 public:
  // data: the data's dims; k: the length of an index tuple; constants of inputs 0-2 where they are
  // constant (else empty).
  ScatterNdOp(Dims data, int64_t k, std::vector<Vec> constants)
      : data_(std::move(data)), k_(k), constants_(std::move(constants)) {}

  Interval interval(const std::vector<const Interval*>& in) const override {
    const Interval d = bounds_of(in, 0), idx = bounds_of(in, 1), upd = bounds_of(in, 2);
    const int64_t places = num_elements(Dims(data_.begin(), data_.begin() + k_));
    const int64_t inner = places == 0 ? 0 : d.size() / places, tuples = idx.size() / k_;
    // Per place: the hull of the updates that may land there, and whether one surely does.
    Interval may{Vec::Constant(d.size(), kInf), Vec::Constant(d.size(), -kInf)};
    std::vector<char> sure(places, 0);
    const std::vector<int64_t> strides = strides_of(Dims(data_.begin(), data_.begin() + k_));
    auto land = [&](int64_t u, int64_t place) {
      may.lo.segment(place * inner, inner) =
          may.lo.segment(place * inner, inner).cwiseMin(upd.lo.segment(u * inner, inner));
      may.hi.segment(place * inner, inner) =
          may.hi.segment(place * inner, inner).cwiseMax(upd.hi.segment(u * inner, inner));
    };
    std::vector<std::vector<int64_t>> values(k_);
    double work = 0;
    for (int64_t u = 0; u < tuples; ++u) {
      double count = 1;
      for (int64_t j = 0; j < k_; ++j) {
        values[j] = index_values(idx.lo[u * k_ + j], idx.hi[u * k_ + j], data_[j]);
        count *= static_cast<double>(values[j].size());
      }
      work += count * static_cast<double>(inner);
      if (work > kMaxWork) return anywhere(d, upd, tuples, inner);
      if (count == 0) continue;  // no index in range: the run stops
      for_each_place(values, strides, [&](int64_t place) { land(u, place); });
      if (count == 1) sure[values_place(values, strides)] = 1;
    }
    Interval out = d;
    for (int64_t p = 0; p < places; ++p) {
      auto lo = out.lo.segment(p * inner, inner), hi = out.hi.segment(p * inner, inner);
      if (sure[p]) {
        lo = may.lo.segment(p * inner, inner), hi = may.hi.segment(p * inner, inner);
      } else {
        lo = lo.cwiseMin(may.lo.segment(p * inner, inner));
        hi = hi.cwiseMax(may.hi.segment(p * inner, inner));
      }
    }
    return out;
  }
  Relaxation relax(const std::vector<const Interval*>&, const Interval&) const override {
    return {};
  }

 private:
  Interval bounds_of(const std::vector<const Interval*>& in, size_t slot) const {
    if (in[slot]) return *in[slot];
    return {constants_[slot], constants_[slot]};
  }
  // Every element may keep its value or take any tuple's update.
  static Interval anywhere(const Interval& d, const Interval& upd, int64_t tuples, int64_t inner) {
    Interval out = d;
    const int64_t places = inner == 0 ? 0 : d.size() / inner;
    for (int64_t u = 0; u < tuples; ++u)
      for (int64_t p = 0; p < places; ++p) {
        out.lo.segment(p * inner, inner) =
            out.lo.segment(p * inner, inner).cwiseMin(upd.lo.segment(u * inner, inner));
        out.hi.segment(p * inner, inner) =
            out.hi.segment(p * inner, inner).cwiseMax(upd.hi.segment(u * inner, inner));
      }
    return out;
  }
  static int64_t values_place(const std::vector<std::vector<int64_t>>& values,
                              const std::vector<int64_t>& strides) {
    int64_t place = 0;
    for (size_t j = 0; j < values.size(); ++j) place += values[j][0] * strides[j];
    return place;
  }
  // Calls f(place) for every tuple of the product of `values`.
  template <typename F>
  static void for_each_place(const std::vector<std::vector<int64_t>>& values,
                             const std::vector<int64_t>& strides, F f) {
    std::vector<size_t> at(values.size(), 0);
    while (true) {
      int64_t place = 0;
      for (size_t j = 0; j < values.size(); ++j) place += values[j][at[j]] * strides[j];
      f(place);
      size_t j = values.size();
      while (j > 0 && ++at[j - 1] == values[j - 1].size()) at[--j] = 0;
      if (j == 0) return;
    }
  }

  Dims data_;
  int64_t k_;
  std::vector<Vec> constants_;
};
}  // namespace

Result<OpOutputs> variable_slice(const OpContext& ctx) {
  if (ctx.variable(3) || ctx.variable(4))
    return ctx.error("no bound rule for Slice with variable axes or steps");
  const Dims& x = ctx.shape(0);
  const auto rank = static_cast<int64_t>(x.size());
  const common::Value* value = ctx.graph.find(ctx.node.outputs[0]);
  if (value == nullptr || !value->is_static())
    return ctx.error("Slice with variable starts or ends needs the output's static shape");
  const Dims& out = *value->shape;
  if (static_cast<int64_t>(out.size()) != rank) return ctx.error("Slice output changes the rank");
  ASSIGN_OR_RETURN(std::vector<int64_t> starts, constant_ints(ctx, 1, "starts"));
  ASSIGN_OR_RETURN(std::vector<int64_t> ends, constant_ints(ctx, 2, "ends"));
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, ints_input_or_attr(ctx, 3, "axes"));
  ASSIGN_OR_RETURN(std::vector<int64_t> steps, ints_input_or_attr(ctx, 4, ""));
  const int64_t count = num_elements(ctx.shape(ctx.variable(1) ? 1 : 2));
  if (axes.empty())
    for (int64_t i = 0; i < count; ++i) axes.push_back(i);
  if (steps.empty()) steps.assign(count, 1);
  const auto n = static_cast<size_t>(count);
  if (axes.size() != n || steps.size() != n || (!starts.empty() && starts.size() != n) ||
      (!ends.empty() && ends.size() != n) || num_elements(ctx.shape(1)) != count ||
      num_elements(ctx.shape(2)) != count)
    return ctx.error("Slice starts, ends, axes and steps differ in length");
  std::vector<SliceAxis> sliced;
  std::vector<char> seen(rank, 0);
  for (size_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(int64_t ax, axis_at(ctx, axes[i], rank));
    if (steps[i] == 0 || seen[ax]) return ctx.error("Slice axis or step invalid");
    seen[ax] = 1;
    // A window of the static length must fit the axis.
    if (out[ax] > 0 && (out[ax] - 1) * std::abs(steps[i]) >= x[ax])
      return ctx.error("Slice output is longer than any window of its axis");
    sliced.push_back({ax, steps[i], out[ax], static_cast<int64_t>(i),
                      starts.empty() ? 0 : starts[i], ends.empty() ? 0 : ends[i]});
  }
  for (int64_t d = 0; d < rank; ++d)
    if (!seen[d] && out[d] != x[d]) return ctx.error("Slice output changes an axis not sliced");
  Vec data;
  if (!ctx.variable(0)) {
    const std::vector<double> v = ctx.constants[0]->to_double();
    data = Eigen::Map<const Vec>(v.data(), static_cast<Eigen::Index>(v.size()));
  }
  OpOutputs result;
  result.push_back(
      {std::make_unique<VariableSliceOp>(x, out, std::move(sliced), std::move(data)), out});
  return result;
}

Result<OpOutputs> scatter_nd_rule(const OpContext& ctx) {
  if (ctx.node.attr_string("reduction", "none") != "none")
    return ctx.error("ScatterND has a bound rule without reduction only");
  if (!ctx.present(1) || !ctx.present(2)) return ctx.error("ScatterND needs indices and updates");
  const Dims &data = ctx.shape(0), &idx = ctx.shape(1);
  if (idx.empty()) return ctx.error("ScatterND indices need a rank");
  const int64_t k = idx.back();
  if (k < 1 || k > static_cast<int64_t>(data.size()))
    return ctx.error("ScatterND index tuples are longer than the data's rank");
  Dims updates(idx.begin(), idx.end() - 1);
  updates.insert(updates.end(), data.begin() + k, data.end());
  if (ctx.shape(2) != updates) return ctx.error("ScatterND updates do not match the indices");
  std::vector<Vec> constants(3);
  for (size_t slot = 0; slot < 3; ++slot) {
    if (ctx.variable(slot)) continue;
    const std::vector<double> v = ctx.constants[slot]->to_double();
    constants[slot] = Eigen::Map<const Vec>(v.data(), static_cast<Eigen::Index>(v.size()));
  }
  OpOutputs result;
  result.push_back({std::make_unique<ScatterNdOp>(data, k, std::move(constants)), data});
  return result;
}

void add_index_rules(RuleTable& table) {
  table.insert(table.end(), {{"ScatterND", scatter_nd_rule}});
}

}  // namespace propdag

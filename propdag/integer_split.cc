// CaseSearch's splitting at integers. When an input of the case's box reaches an op that rounds
// to integers (Cast to an integer type, Floor: an index, a position, a count), the model is a
// different function on each unit cell [k, k + 1) of that input, and bounds over a box holding
// several cells take the hull of all of them: halving at the middle never gets a box inside one
// cell (the halves of [0, 62] keep 31 as an end). So such a box is split at an integer m into
// [lo, m) and [m, hi], as doubles [lo, prev(m)] and [m, hi]: together they hold every double of
// [lo, hi] (so every float32 input), and a box within one cell sees one rounded value (for
// Floor everywhere, for a Cast's truncation on nonnegative values). Where the model's shapes
// depend on input values, a cell on which the model is constant is decided by evaluating the
// run at one of its points (find_cell_dims, is_cell): bounds there describe the static-shape
// runs only.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "propdag/case_search.h"
#include "propdag/gather.h"
#include "propdag/op.h"

namespace propdag::internal {
namespace {

// Unit cells [k, k + 1) that [lo, hi] meets: floor(hi) - floor(lo) + 1 (infinite ends: none).
double cells(double lo, double hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || hi < lo) return 0;
  return std::floor(hi) - std::floor(lo) + 1;
}

// Whether `op` copies elements unchanged: an affine op whose every term is a gather or sparse
// map with at most one entry per row, each 1, and whose bias is 0. A rounding op fed through
// such ops rounds the input itself, so its value is fixed on each cell [k, k + 1).
bool copies(const BoundOp* op) {
  const auto* affine = dynamic_cast<const AffineOp*>(op);
  if (affine == nullptr || !affine->bias().isZero(0)) return false;
  for (const LinearTerm& t : affine->terms()) {
    if (t.dense || t.row_entries) return false;  // a lazy term is a convolution or a pool
    bool ones = true;
    if (t.gather) {
      t.gather->for_each([&](int64_t, int64_t, double v) { ones = ones && v == 1.0; });
    } else {
      const SpMat& m = t.sparse();
      for (Eigen::Index r = 0; r < m.outerSize() && ones; ++r) {
        int count = 0;
        for (SpMat::InnerIterator it(m, r); it; ++it)
          ones = ones && ++count == 1 && it.value() == 1.0;
      }
    }
    if (!ones) return false;
  }
  return true;
}

}  // namespace

common::Result<std::vector<Eigen::Index>> CaseSearch::find_integer_dims() const {
  std::vector<int> rounding;
  for (int node = 0; node < model_.dag().size(); ++node)
    if (model_.op(node) != nullptr && model_.op(node)->rounds_to_integers())
      rounding.push_back(node);
  std::vector<Eigen::Index> dims;
  if (rounding.empty() || !small()) return dims;
  const Vec centre = (case_.box.lo + case_.box.hi) * 0.5;
  for (Eigen::Index d = 0; d < case_.box.size(); ++d) {
    if (cells(case_.box.lo[d], case_.box.hi[d]) < 2) continue;
    Interval probe{centre, centre};
    probe.lo[d] = case_.box.lo[d];
    probe.hi[d] = case_.box.hi[d];
    ASSIGN_OR_RETURN(std::vector<Interval> ibp, ibp_all(model_, probe));
    for (int node : rounding) {
      const Interval& b = ibp[node];
      if ((b.hi - b.lo).cwiseAbs().maxCoeff() > 0) {
        dims.push_back(d);
        break;
      }
    }
  }
  return dims;
}

std::optional<std::pair<Eigen::Index, double>> CaseSearch::integer_cut(const Interval& box) const {
  std::optional<std::pair<Eigen::Index, double>> cut;
  double most = 1;
  for (Eigen::Index d : integer_dims_) {
    const double lo = box.lo[d], hi = box.hi[d], n = cells(lo, hi);
    if (!(n > most)) continue;
    most = n;
    // The integer nearest the middle among those in (lo, hi].
    const double m = std::clamp(std::round(0.5 * (lo + hi)), std::floor(lo) + 1, std::floor(hi));
    cut = {d, m};
  }
  return cut;
}

common::Result<std::vector<Eigen::Index>> CaseSearch::find_cell_dims() const {
  std::vector<Eigen::Index> dims;
  const double below = -std::numeric_limits<double>::infinity();
  for (Eigen::Index d : integer_dims_) {
    // A Cast truncates toward zero: its cells are [k, k + 1) for k >= 0 only.
    const double lo = case_.box.lo[d];
    if (!(lo >= 0)) continue;
    Interval probe{case_.box.lo, case_.box.lo};
    probe.hi[d] = std::min(case_.box.hi[d], std::nextafter(std::floor(lo) + 1, below));
    if (!(probe.hi[d] > probe.lo[d])) continue;
    ASSIGN_OR_RETURN(std::vector<Interval> ibp, ibp_all(model_, probe));
    const Dag& dag = model_.dag();
    auto varies = [&](int n) {
      const Interval& b = ibp[n];
      return !(b.lo.array() == b.hi.array()).all();  // NaN ends vary
    };
    // The nodes that vary with it before any rounding (what a rounding op computes from varies
    // only with the rounded value, and past a window the static-shape bounds of a cell whose
    // runs have other shapes may vary for that reason alone).
    std::vector<int> todo;
    std::vector<bool> seen(static_cast<size_t>(dag.size()), false);
    for (int i : dag.inputs())
      if (varies(i)) todo.push_back(i), seen[static_cast<size_t>(i)] = true;
    bool closed = true;
    while (!todo.empty() && closed) {
      const int n = todo.back();
      todo.pop_back();
      if (std::find(dag.outputs().begin(), dag.outputs().end(), n) != dag.outputs().end() ||
          (model_.op(n) != nullptr && !copies(model_.op(n))))
        closed = false;
      for (int s : dag.node(n).succs) {
        const BoundOp* op = model_.op(s);
        if (op != nullptr && op->rounds_to_integers()) continue;
        if (varies(s)) {
          if (!seen[static_cast<size_t>(s)]) todo.push_back(s), seen[static_cast<size_t>(s)] = true;
        } else if (op == nullptr || dynamic_cast<const AffineOp*>(op) == nullptr) {
          closed = false;  // fixed at this cell, but not by fixed coefficients
        }
      }
    }
    if (closed) dims.push_back(d);
  }
  return dims;
}

bool CaseSearch::is_cell(const Interval& box) const {
  for (Eigen::Index d = 0; d < box.size(); ++d) {
    if (box.lo[d] == box.hi[d]) continue;
    if (std::find(cell_dims_.begin(), cell_dims_.end(), d) == cell_dims_.end() ||
        !(box.lo[d] >= 0) || std::floor(box.lo[d]) != std::floor(box.hi[d]))
      return false;
  }
  return true;
}

CaseSearch::Judged CaseSearch::judge(const Vec& y) const {
  bool all = true;
  for (const OutputConstraint& u : case_.unsafe) {
    const double v = u.coef.dot(y) - u.rhs;
    const double slack = 1e-5 * (1 + std::abs(u.rhs) + u.coef.cwiseAbs().dot(y.cwiseAbs()));
    if (v > slack) return Judged::kHolds;
    if (!(v <= 0)) all = false;
  }
  return all ? Judged::kViolated : Judged::kClose;
}

common::Result<CaseSearch::Step> CaseSearch::integer_step(std::vector<Open>& open) {
  Open& top = open.back();
  if (evaluator_ != nullptr && integer_cut(top.box) == std::nullopt && is_cell(top.box)) {
    // The model is constant on the cell: the run at one point of it decides it.
    if (out_of_time() || boxes_ + 1 > split_.max_boxes) return Step::kOutOfTime;
    ++boxes_;
    const Vec x = top.box.lo;
    open.pop_back();
    common::Result<Vec> y = evaluator_->outputs(x);
    const Judged j = y.ok() ? judge(*y) : Judged::kClose;
    if (j == Judged::kViolated) return found(x) ? Step::kFalsified : Step::kNext;
    if (j == Judged::kClose) unprovable_ = true;
    return Step::kNext;
  }
  if (auto cut = integer_cut(top.box)) {
    const auto [d, m] = *cut;
    Open low{top.box, std::nullopt}, high{top.box, std::nullopt};
    low.box.hi[d] = std::nextafter(m, -std::numeric_limits<double>::infinity());
    high.box.lo[d] = m;
    open.pop_back();
    open.push_back(std::move(high));
    open.push_back(std::move(low));  // the lower cells first
    return Step::kNext;
  }
  if (top.bounds || top.ibp_tried) return Step::kBound;
  if (out_of_time() || boxes_ + 1 > split_.max_boxes) return Step::kOutOfTime;
  Options ibp = options_;
  ibp.method = Method::kIbp;
  ++boxes_;
  Bounds b;
  ASSIGN_OR_RETURN(b.y, linear_bounds(model_, top.box, objective_, ibp));
  if (proved(b)) {
    open.pop_back();
    return Step::kNext;
  }
  const Vec centre = (top.box.lo + top.box.hi) * 0.5;
  Interval at;
  ASSIGN_OR_RETURN(double worst, violation(centre, &at));
  if (worst <= 0) return found(centre) ? Step::kFalsified : Step::kNext;
  // Bounds over the box that equal those at its centre: every part of it that holds the centre
  // keeps them (interval rules are monotone), so no split proves it.
  const bool flat =
      (b.y.lo.array() == at.lo.array()).all() && (b.y.hi.array() == at.hi.array()).all();
  if (flat) {
    unprovable_ = true;
    open.pop_back();
    return Step::kNext;
  }
  top.ibp_tried = true;
  return Step::kBound;
}

}  // namespace propdag::internal

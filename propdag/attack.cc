#include "propdag/attack.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <utility>

#include "propdag/crown.h"
#include "propdag/engine.h"
#include "propdag/point_search.h"

namespace propdag::internal {
namespace {

using Clock = std::chrono::steady_clock;

// Node values held for the backward pass, K x (elements of every node) doubles: the batch is cut
// to fit (16 MiB), which also bounds the time a step takes.
constexpr int64_t kHeldValues = int64_t{1} << 21;

// x W^T for the K rows of x: the term applied to every point at once.
Mat apply_rows(const Mat& x, const LinearTerm& t) {
  return t.dense ? dense_left_transposed(x, t) : Mat(x * t.sparse().transpose());
}

// The central difference of op over a step h_i in element i of its input (slot 0), all elements
// at once (the op is elementwise).
Vec secant(const BoundOp& op, std::vector<const Interval*> in, const Vec& z, const Vec& h) {
  const Interval up{z + h, z + h}, down{z - h, z - h};
  in[0] = &up;
  const Interval fu = op.interval(in);
  in[0] = &down;
  const Interval fd = op.interval(in);
  return (0.5 * (fu.lo + fu.hi) - 0.5 * (fd.lo + fd.hi)).cwiseQuotient(2 * h);
}

}  // namespace

PointGradient::PointGradient(const Model& model, std::vector<Vec> width,
                             std::vector<bool> elementwise)
    : model_(&model), width_(std::move(width)), elementwise_(std::move(elementwise)) {
  Eigen::Index at = 0;
  offset_.assign(model.dag().size(), 0);
  for (int i : model.dag().inputs()) offset_[i] = at, at += model.numel(i);
}

common::Result<PointGradient> PointGradient::make(const Model& model, const Interval& box) {
  ASSIGN_OR_RETURN(std::vector<Interval> ibp, ibp_all(model, box));
  const Dag& dag = model.dag();
  std::vector<Vec> width(dag.size());
  std::vector<bool> elementwise(dag.size(), false);
  for (int n = 0; n < dag.size(); ++n) {
    const BoundOp* op = model.op(n);
    if (op == nullptr || dynamic_cast<const AffineOp*>(op) != nullptr) continue;
    std::vector<const Interval*> in;
    for (int p : dag.node(n).inputs) {
      in.push_back(p >= 0 ? &ibp[p] : nullptr);
      if (p >= 0 && width[p].size() == 0) width[p] = ibp[p].hi - ibp[p].lo;
    }
    elementwise[n] = op->relax(in, ibp[n]).kind == Relaxation::Kind::kElementwise;
  }
  return PointGradient(model, std::move(width), std::move(elementwise));
}

std::vector<const Interval*> PointGradient::point_inputs(int n, Eigen::Index k,
                                                         std::vector<Interval>& boxes) const {
  const std::vector<int>& inputs = model_->dag().node(n).inputs;
  boxes.assign(inputs.size(), Interval{});
  std::vector<const Interval*> in(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] < 0) continue;
    const Vec v = values_[inputs[i]].row(k).transpose();
    boxes[i] = {v, v};
    in[i] = &boxes[i];
  }
  return in;
}

common::Result<Mat> PointGradient::forward(const Mat& x) {
  const Dag& dag = model_->dag();
  const Eigen::Index rows = x.rows();
  values_.assign(dag.size(), Mat());
  for (int n = 0; n < dag.size(); ++n) {  // Dag nodes are stored topologically
    const BoundOp* op = model_->op(n);
    if (op == nullptr) {
      values_[n] = x.middleCols(offset_[n], model_->numel(n));
      continue;
    }
    if (const auto* affine = dynamic_cast<const AffineOp*>(op)) {
      Mat out = affine->bias().transpose().replicate(rows, 1);
      for (const LinearTerm& t : affine->terms())
        out += apply_rows(values_[dag.node(n).inputs[t.slot]], t);
      values_[n] = std::move(out);
      continue;
    }
    const std::vector<int>& inputs = dag.node(n).inputs;
    const ScalarRule* rule = op->scalar_rule();
    if (rule != nullptr && inputs.size() == 1 && inputs[0] >= 0 &&
        values_[inputs[0]].cols() == model_->numel(n)) {  // each element on its own
      values_[n] = values_[inputs[0]].unaryExpr([rule](double v) {
        const auto [lo, hi] = rule->range(v, v);
        return 0.5 * (lo + hi);
      });
      continue;
    }
    Mat out(rows, model_->numel(n));
    std::vector<Interval> boxes;
    for (Eigen::Index k = 0; k < rows; ++k) {
      const Interval y = op->interval(point_inputs(n, k, boxes));
      out.row(k) = (0.5 * (y.lo + y.hi)).transpose();
    }
    values_[n] = std::move(out);
  }
  Eigen::Index cols = 0;
  for (int o : dag.outputs()) cols += values_[o].cols();
  Mat y(rows, cols);
  Eigen::Index at = 0;
  for (int o : dag.outputs()) {
    y.middleCols(at, values_[o].cols()) = values_[o];
    at += values_[o].cols();
  }
  return y;
}

Vec PointGradient::slopes(int n, Eigen::Index k) const {
  const int p = model_->dag().node(n).inputs[0];
  const BoundOp& op = *model_->op(n);
  std::vector<Interval> boxes;
  const std::vector<const Interval*> in = point_inputs(n, k, boxes);
  const Vec z = values_[p].row(k).transpose();
  Vec slope = secant(op, in, z, 1e-6 * (1.0 + z.array().abs()));
  if (op.linear_on_each_side_of_zero()) return slope;  // ReLU: flat below 0, and exact
  Vec wide;
  for (Eigen::Index i = 0; i < slope.size(); ++i) {
    if (slope[i] != 0 && std::isfinite(slope[i])) continue;
    if (wide.size() == 0) {
      const Vec& w = width_[p];
      wide = w.size() == z.size() ? secant(op, in, z, w.cwiseMax(1e-12)) : Vec::Zero(z.size());
    }
    slope[i] = std::isfinite(wide[i]) ? wide[i] : 0.0;
  }
  return slope;
}

void PointGradient::backward_row(int n, Eigen::Index k, const Vec& adj,
                                 std::vector<Mat>& adjoints) const {
  const DagNode& node = model_->dag().node(n);
  auto add = [&](int slot, const Vec& g) {
    Mat& into = adjoints[node.inputs[slot]];
    if (into.size() == 0) into = Mat::Zero(values_[n].rows(), g.size());
    into.row(k) += g.transpose();
  };
  if (elementwise_[n]) {
    add(0, adj.cwiseProduct(slopes(n, k)));
    return;
  }
  std::vector<Interval> boxes;
  const std::vector<const Interval*> in = point_inputs(n, k, boxes);
  const Vec y = values_[n].row(k).transpose();
  const BoundOp& op = *model_->op(n);
  const Relaxation r = op.relax(in, Interval{y, y});
  if (r.kind == Relaxation::Kind::kLinear) {
    if (r.lo_map().rows() > 0) add(0, r.lo_map().transpose() * adj);
    if (r.lo_map1().rows() > 0) add(1, r.lo_map1().transpose() * adj);
    return;
  }
  if (r.kind != Relaxation::Kind::kConstant) return;
  int64_t inputs = 0;
  for (const Interval* p : in) inputs += p != nullptr ? p->size() : 0;
  if (inputs > kDifferencedInputs) return;
  for (size_t slot = 0; slot < in.size(); ++slot) {
    if (in[slot] == nullptr) continue;
    Vec g(in[slot]->size());
    std::vector<Interval> moved = boxes;
    std::vector<const Interval*> at = in;
    at[slot] = &moved[slot];
    for (Eigen::Index j = 0; j < g.size(); ++j) {  // forward differences: one call per input
      const double z = boxes[slot].lo[j], h = 1e-6 * (1.0 + std::abs(z));
      moved[slot].lo[j] = moved[slot].hi[j] = z + h;
      const Interval f = op.interval(at);
      moved[slot].lo[j] = moved[slot].hi[j] = z;
      // The differences first: 1 - p_i of a saturated Softmax would round them away.
      const double d = adj.dot(0.5 * (f.lo + f.hi) - y) / h;
      g[j] = std::isfinite(d) ? d : 0.0;
    }
    add(static_cast<int>(slot), g);
  }
}

Mat PointGradient::backward(const Mat& dy) {
  const Dag& dag = model_->dag();
  const Eigen::Index rows = dy.rows();
  std::vector<Mat> adjoints(dag.size());
  Eigen::Index at = 0;
  for (int o : dag.outputs()) {
    accumulate(adjoints[o], Mat(dy.middleCols(at, model_->numel(o))));
    at += model_->numel(o);
  }
  Mat grad = Mat::Zero(rows, model_->input_size());
  for (int n = dag.size(); n-- > 0;) {  // reverse topological order
    Mat adj = std::move(adjoints[n]);
    adjoints[n] = Mat();
    if (adj.size() == 0) continue;
    const BoundOp* op = model_->op(n);
    if (op == nullptr) {
      grad.middleCols(offset_[n], adj.cols()) += adj;
    } else if (const auto* affine = dynamic_cast<const AffineOp*>(op)) {
      for (const LinearTerm& t : affine->terms())
        accumulate(adjoints[dag.node(n).inputs[t.slot]], times(adj, t));
    } else {
      for (Eigen::Index k = 0; k < rows; ++k) backward_row(n, k, adj.row(k).transpose(), adjoints);
    }
    values_[n] = Mat();  // its successors are done
  }
  return grad;
}

namespace {

// The loss at y (one point's outputs) and, where it is > 0, its gradient: the rows > 0 of the
// case with the smallest largest row, and of the cases tied with it (a saturated Softmax rounds
// 1 - p_i to 1 for every class i far behind: their gradients together still point the way).
double margin_loss(const AttackTarget& target, const Vec& y, Vec* dy) {
  std::vector<double> worst(target.c.size(), -std::numeric_limits<double>::infinity());
  double best = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < target.c.size(); ++i) {
    const Vec g = target.c[i] * y - target.rhs[i];
    for (Eigen::Index r = 0; r < g.size(); ++r)
      if (!(g[r] <= worst[i])) worst[i] = g[r];  // NaN counts as a miss
    best = std::min(best, worst[i]);
  }
  if (dy == nullptr) return best;
  *dy = Vec::Zero(y.size());
  const double tie = 1e-12 * std::max(1.0, std::abs(best));
  for (size_t i = 0; i < target.c.size(); ++i) {
    if (!(worst[i] <= best + tie)) continue;
    const Vec g = target.c[i] * y - target.rhs[i];
    for (Eigen::Index r = 0; r < g.size(); ++r)
      if (!(g[r] <= 0)) *dy += target.c[i].row(r).transpose();
  }
  return best;
}

}  // namespace

AttackTarget target_of(const std::vector<const SpecCase*>& cases) {
  AttackTarget target;
  for (const SpecCase* c : cases) {
    if (c->unsafe.empty()) continue;
    Mat rows(static_cast<Eigen::Index>(c->unsafe.size()), c->unsafe.front().coef.size());
    Vec rhs(rows.rows());
    for (Eigen::Index r = 0; r < rows.rows(); ++r) {
      rows.row(r) = c->unsafe[r].coef.transpose();
      rhs[r] = c->unsafe[r].rhs;
    }
    target.c.push_back(std::move(rows));
    target.rhs.push_back(std::move(rhs));
  }
  return target;
}

int point_rows(const Model& model, int most) {
  int64_t elements = 0;
  for (int n = 0; n < model.dag().size(); ++n) elements += model.numel(n);
  const int64_t fit = kHeldValues / std::max<int64_t>(1, elements);
  return static_cast<int>(std::clamp<int64_t>(fit, 1, std::max(1, most)));
}

common::Result<std::optional<Vec>> pgd_attack(const Model& model, const Interval& box,
                                              const AttackTarget& target,
                                              const AttackOptions& options, const Accept& accept) {
  const auto stop = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(options.seconds));
  if (target.c.empty() || options.seconds <= 0) return std::optional<Vec>();
  ASSIGN_OR_RETURN(PointGradient gradient, PointGradient::make(model, box));
  const int rows = point_rows(model, options.restarts);
  const Eigen::Index n = box.lo.size();
  const Vec width = box.hi - box.lo;
  std::mt19937_64 rng(options.seed);
  size_t given = 0;
  int sampled = 0;
  for (int round = 0; round < options.rounds; ++round) {
    Mat x(rows, n);
    for (int k = 0; k < rows; ++k) {
      const Vec start =
          given < options.starts.size() ? options.starts[given++] : sample(box, sampled++, rng);
      x.row(k) = start.cwiseMax(box.lo).cwiseMin(box.hi).transpose();
    }
    for (int t = 0;; ++t) {
      if (Clock::now() >= stop) return std::optional<Vec>();
      ASSIGN_OR_RETURN(Mat y, gradient.forward(x));
      Mat dy(rows, y.cols());
      for (int k = 0; k < rows; ++k) {
        Vec d;
        if (margin_loss(target, y.row(k).transpose(), &d) <= 0) {
          const Vec point = x.row(k).transpose();
          ASSIGN_OR_RETURN(bool yes, accept(point));
          if (yes) return std::optional<Vec>(point);
        }
        dy.row(k) = d.transpose();
      }
      if (t == options.steps) break;
      const Mat grad = gradient.backward(dy);
      const double a =
          0.005 + 0.2475 * (1 + std::cos(std::numbers::pi * t / std::max(1, options.steps)));
      for (int k = 0; k < rows; ++k) {
        const Vec step = grad.row(k).transpose().unaryExpr(
            [](double g) { return g > 0 ? 1.0 : (g < 0 ? -1.0 : 0.0); });
        x.row(k) = (x.row(k).transpose() - a * step.cwiseProduct(width))
                       .cwiseMax(box.lo)
                       .cwiseMin(box.hi)
                       .transpose();
      }
    }
  }
  return std::optional<Vec>();
}

}  // namespace propdag::internal

// The batched engine: crown.cc's forward (IBP, refined by CROWN where an input of a nonlinear op
// is affordable) and backward passes, on [K, n] bounds and [K, rows, n] coefficients.
#include "propdag/torch/torch_engine.h"

#include <ATen/Context.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <optional>
#include <utility>

#include "propdag/crown.h"
#include "propdag/torch/torch_alpha.h"
#include "propdag/torch/torch_ops.h"
#include "propdag/traverse.h"

namespace propdag::torch_engine {
namespace {

using common::Result;
using common::Status;
using internal::box_of;
using internal::intersect;
using internal::Kernel;
using internal::TBackward;
using internal::TBox;
using internal::to_boxes;
using propdag::internal::RefineRows;

common::Error error(std::string message) { return common::Error{"", "", "", std::move(message)}; }

class TorchEngine : public Engine {
 public:
  TorchEngine(const Model& model, at::TensorOptions opts) : m_(model), opts_(opts) {}

  Status prepare() {
    const Dag& dag = m_.dag();
    kernels_.resize(dag.size());
    offset_.assign(dag.size(), 0);
    int64_t at = 0;
    for (int i : dag.inputs()) offset_[i] = at, at += m_.numel(i);
    for (int n = 0; n < dag.size(); ++n) {
      if (m_.op(n) == nullptr) continue;
      ASSIGN_OR_RETURN(kernels_[n], internal::make_kernel(m_, n, opts_));
    }
    kinds_ = propdag::internal::refine_rows(m_);
    propdag::internal::Crown costs(m_, Options{});
    row_cost_.assign(dag.size(), 0);
    for (int n = 0; n < dag.size(); ++n)
      if (kinds_[n] != RefineRows::kNone ||
          std::find(dag.outputs().begin(), dag.outputs().end(), n) != dag.outputs().end())
        row_cost_[n] = costs.row_cost(n);
    box_chunk_ = internal::box_chunk(m_, row_cost_, opts_);
    return {};
  }

  Result<std::vector<Boxes>> output_bounds(const Boxes& input, const Options& opt) override {
    return guarded([&]() -> Result<std::vector<Boxes>> {
      std::vector<Boxes> out;
      for (Eigen::Index k0 = 0; k0 < input.count(); k0 += box_chunk_) {
        const Eigen::Index k = std::min(box_chunk_, input.count() - k0);
        ASSIGN_OR_RETURN(
            std::vector<Boxes> part,
            compute_outputs({input.lo.middleRows(k0, k), input.hi.middleRows(k0, k)}, opt));
        if (out.empty()) {
          for (const Boxes& p : part)
            out.push_back({Mat(input.count(), p.lo.cols()), Mat(input.count(), p.lo.cols())});
        }
        for (size_t o = 0; o < part.size(); ++o) {
          out[o].lo.middleRows(k0, k) = part[o].lo;
          out[o].hi.middleRows(k0, k) = part[o].hi;
        }
      }
      return out;
    });
  }
  Result<Boxes> linear_bounds(const Boxes& input, const std::vector<Mat>& c, const Options& opt,
                              std::vector<Mat>* lower_coef,
                              std::vector<Boxes>* node_bounds) override {
    return guarded([&]() -> Result<Boxes> {
      Boxes out;
      if (lower_coef != nullptr) lower_coef->clear();
      std::vector<Boxes> prior;  // the carried node bounds, per chunk of boxes
      if (node_bounds != nullptr) prior = std::exchange(*node_bounds, {});
      for (Eigen::Index k0 = 0; k0 < input.count(); k0 += box_chunk_) {
        const Eigen::Index k = std::min(box_chunk_, input.count() - k0);
        std::vector<TBox> nodes = internal::node_rows(m_, prior, k0, k, input.count(), opts_);
        ASSIGN_OR_RETURN(Boxes part,
                         compute_linear({input.lo.middleRows(k0, k), input.hi.middleRows(k0, k)}, c,
                                        opt, lower_coef, node_bounds ? &nodes : nullptr));
        if (node_bounds != nullptr) internal::store_rows(nodes, k0, input.count(), *node_bounds);
        if (k0 == 0) out = {Mat(input.count(), part.lo.cols()), Mat(input.count(), part.lo.cols())};
        out.lo.middleRows(k0, k) = part.lo;
        out.hi.middleRows(k0, k) = part.hi;
      }
      return out;
    });
  }

  std::vector<std::string> per_box_ops() const override {
    std::vector<std::string> out;
    for (int n = 0; n < m_.dag().size(); ++n)
      if (kernels_[n] && kernels_[n]->per_box())
        out.push_back(m_.graph().nodes[m_.dag().node(n).graph_node].op_type);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  std::map<std::string, int> kinds() const override {
    std::vector<std::string> all;
    for (const auto& k : kernels_)
      if (k) k->kinds(all);
    std::map<std::string, int> out;
    for (const std::string& k : all) ++out[k];
    return out;
  }

  // LibTorch reports failures (out of memory, a device error) by exceptions: one line each.
  template <class F>
  static auto guarded(F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const std::exception& e) {
      std::string what = e.what();
      return error("LibTorch: " + what.substr(0, what.find('\n')));
    }
  }

 private:
  Result<std::vector<Boxes>> compute_outputs(const Boxes& input, const Options& opt) {
    ASSIGN_OR_RETURN(TBox x, boxes(input, opt));
    std::vector<Boxes> out;
    if (opt.method == Method::kIbp) {
      ASSIGN_OR_RETURN(auto values, ibp(x));
      for (int o : m_.dag().outputs()) out.push_back(to_boxes(*values[o]));
      return out;
    }
    std::vector<TBox> b;
    std::vector<double> out_rows;
    for (int o : m_.dag().outputs()) out_rows.push_back(static_cast<double>(m_.numel(o)));
    RETURN_IF_ERROR(forward(x, opt, out_rows, b));
    for (int o : m_.dag().outputs()) {
      const int64_t n = m_.numel(o);
      if (!propdag::internal::output_affordable(opt, row_cost_[o] * static_cast<double>(n),
                                                x.lo.size(0))) {
        out.push_back(to_boxes(b[o]));
        continue;
      }
      ASSIGN_OR_RETURN(TBox r, backward(o, at::eye(n, opts_), x, b, opt));
      ASSIGN_OR_RETURN(r, internal::tuned_outputs({m_, kernels_, offset_, x, b}, o, r, opt));
      if (opt.intersect_ibp) intersect(r, b[o].lo, b[o].hi);
      out.push_back(to_boxes(r));
    }
    return out;
  }

  // `nodes` (optional): in, forward's `prior`; out, every node's bounds (cleared for IBP).
  Result<Boxes> compute_linear(const Boxes& input, const std::vector<Mat>& c, const Options& opt,
                               std::vector<Mat>* lower_coef, std::vector<TBox>* nodes) {
    const Dag& dag = m_.dag();
    if (c.size() != dag.outputs().size())
      return m_.graph().error("one objective matrix per graph output is needed");
    ASSIGN_OR_RETURN(TBox x, boxes(input, opt));
    Eigen::Index rows = 0;
    for (const Mat& m : c) rows = std::max(rows, m.rows());
    const bool use_ibp = opt.method == Method::kIbp;
    std::vector<TBox> b(dag.size());
    if (use_ibp) {
      ASSIGN_OR_RETURN(auto values, ibp(x));
      for (int o : dag.outputs()) b[o] = *values[o];
      if (nodes != nullptr) nodes->clear();
    } else {
      std::vector<double> out_rows;
      for (const Mat& m : c) out_rows.push_back(m.size() == 0 ? 0 : static_cast<double>(rows));
      RETURN_IF_ERROR(forward(x, opt, out_rows, b, nodes));
      if (nodes != nullptr) *nodes = b;
    }
    TBox total{at::zeros({input.count(), rows}, opts_), at::zeros({input.count(), rows}, opts_)};
    at::Tensor coef;  // [K, rows, inputs]: the lower bounds' input coefficients, when asked for
    if (lower_coef != nullptr) coef = at::zeros({input.count(), rows, m_.input_size()}, opts_);
    coef_ = lower_coef != nullptr ? &coef : nullptr;
    for (size_t o = 0; o < c.size(); ++o) {
      if (c[o].size() == 0) continue;
      const int node = dag.outputs()[o];
      if (c[o].cols() != m_.numel(node) || c[o].rows() != rows)
        return m_.graph().error("objective matrix for output " + std::to_string(o) +
                                " has the wrong size");
      at::Tensor ct = internal::to_tensor(c[o], opts_);
      const bool affordable =
          use_ibp || propdag::internal::output_affordable(
                         opt, row_cost_[node] * static_cast<double>(rows), input.count());
      TBox part;
      if (affordable && !use_ibp) {
        ASSIGN_OR_RETURN(at::Tensor tuned, internal::optimized_lower({m_, kernels_, offset_, x, b},
                                                                     node, ct, opt, coef_));
        ASSIGN_OR_RETURN(part, backward(node, ct, x, b, opt, !tuned.defined()));
        if (tuned.defined()) intersect(part, tuned, part.hi);
      } else {
        part = box_of(ct, b[node]);
      }
      if (!use_ibp && opt.intersect_ibp) {
        TBox loose = box_of(ct, b[node]);
        intersect(part, loose.lo, loose.hi);
      }
      total.lo = total.lo + part.lo;
      total.hi = total.hi + part.hi;
    }
    coef_ = nullptr;
    if (lower_coef != nullptr)
      for (Mat& m : internal::to_mats(coef)) lower_coef->push_back(std::move(m));
    return to_boxes(total);
  }

  Result<TBox> boxes(const Boxes& input, const Options& opt) const {
    if (input.lo.cols() != m_.input_size() || input.hi.cols() != m_.input_size() ||
        input.lo.rows() != input.hi.rows() || input.count() == 0)
      return m_.graph().error("input boxes have " + std::to_string(input.lo.cols()) +
                              " elements, the model takes " + std::to_string(m_.input_size()));
    return TBox{internal::to_tensor(input.lo, opts_), internal::to_tensor(input.hi, opts_)};
  }

  TBox input_part(const TBox& x, int node) const {
    return {x.lo.narrow(1, offset_[node], m_.numel(node)),
            x.hi.narrow(1, offset_[node], m_.numel(node))};
  }

  // IBP over the breadth-first schedule, each node's bounds dropped after its last consumer.
  Result<std::vector<std::optional<TBox>>> ibp(const TBox& x) const {
    auto hook = [&](int n, const std::vector<const TBox*>& in) -> Result<TBox> {
      if (m_.op(n) == nullptr) return input_part(x, n);
      return kernels_[n]->interval(in);
    };
    ASSIGN_OR_RETURN(auto r, run_forward<TBox>(m_.dag(), m_.dag().bfs_order(), hook, false));
    return std::move(r.values);
  }

  // crown.cc's Crown::forward without splits; `output_rows` as Crown::set_output_rows; `prior`
  // (one entry per Dag node, undefined: nothing known) as its `prior`.
  Status forward(const TBox& x, const Options& opt, const std::vector<double>& output_rows,
                 std::vector<TBox>& b, const std::vector<TBox>* prior = nullptr) {
    const Dag& dag = m_.dag();
    const bool binding = propdag::internal::budget_binding(m_, opt, kinds_, row_cost_, output_rows);
    b.assign(dag.size(), TBox{});
    const int64_t k = x.lo.size(0);
    if (opt.report != nullptr) opt.report->boxes += k;
    for (int n = 0; n < dag.size(); ++n) {
      if (m_.op(n) == nullptr) {
        b[n] = input_part(x, n);
        continue;
      }
      std::vector<const TBox*> in;
      for (int p : dag.node(n).inputs) in.push_back(p >= 0 ? &b[p] : nullptr);
      ASSIGN_OR_RETURN(b[n], kernels_[n]->interval(in));
      if (prior != nullptr && (*prior)[n].lo.defined())
        intersect(b[n], (*prior)[n].lo, (*prior)[n].hi);
      if (kinds_[n] == RefineRows::kNone) continue;
      const RefineRows kind =
          propdag::internal::refine_kind(m_, opt, n, kinds_[n], binding, row_cost_[n]);
      RETURN_IF_ERROR(refine(n, kind, x, opt, b));
    }
    return {};
  }

  // Crown::forward's refinement of node n, box by box: each box refines its own rows of `kind`
  // (refine_kind) when it affords their pass. One backward pass bounds the union of those rows;
  // each box keeps the new bounds of its own rows only, so that its bounds are the Eigen
  // engine's.
  Status refine(int n, RefineRows kind, const TBox& x, const Options& opt,
                std::vector<TBox>& b) const {
    const int64_t k = x.lo.size(0), numel = m_.numel(n);
    at::Tensor want = kind == RefineRows::kAll
                          ? at::ones({k, numel}, b[n].lo.options().dtype(at::kBool))
                          : ((b[n].lo >= 0).logical_or(b[n].hi <= 0)).logical_not();
    const at::Tensor counts = want.sum(1).to(at::kCPU, at::kLong).contiguous();
    const int64_t* count = counts.data_ptr<int64_t>();
    at::Tensor take = at::zeros({k, 1}, at::TensorOptions().dtype(at::kBool));
    auto taken = take.accessor<bool, 2>();
    bool any = false;
    for (int64_t i = 0; i < k; ++i) {
      taken[i][0] = propdag::internal::refine_rows_choice(opt, row_cost_[n], count[i]);
      any = any || taken[i][0];
    }
    if (!any) return {};
    want = want.logical_and(take.to(want.device()));
    const at::Tensor rows = want.any(0).nonzero().squeeze(1);
    at::Tensor id = at::zeros({rows.size(0), numel}, opts_);  // those rows of the identity
    id.scatter_(1, rows.unsqueeze(1), 1.0);
    ASSIGN_OR_RETURN(TBox c, backward(n, id, x, b, opt));
    const TBox old{b[n].lo.index_select(1, rows), b[n].hi.index_select(1, rows)};
    TBox tight = old;
    intersect(tight, c.lo, c.hi);
    const at::Tensor mine = want.index_select(1, rows);
    b[n].lo = b[n].lo.index_copy(1, rows, at::where(mine, tight.lo, old.lo));
    b[n].hi = b[n].hi.index_copy(1, rows, at::where(mine, tight.hi, old.hi));
    return {};
  }

  // Bounds of c * target ([K, rows]) for the objective c [rows, numel(target)]; `coefs`: the
  // lower bounds' input coefficients go to coef_ (when set).
  Result<TBox> backward(int target, const at::Tensor& c, const TBox& x, const std::vector<TBox>& b,
                        const Options& opt, bool coefs = true) const {
    const Dag& dag = m_.dag();
    std::vector<int> order = dag.backward_order(target);
    double widest = 0;
    for (int n : order) widest = std::max<double>(widest, static_cast<double>(m_.numel(n)));
    const int64_t k = x.lo.size(0), rows = c.size(0);
    const auto chunk = std::max<int64_t>(
        1, static_cast<int64_t>(opt.chunk_entries / (widest * static_cast<double>(k))));
    std::vector<at::Tensor> lo, hi;
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
      const int64_t rk = std::min(chunk, rows - r0);
      TBackward w{std::vector<at::Tensor>(dag.size()), std::vector<at::Tensor>(dag.size()),
                  at::zeros({k, rk}, opts_), at::zeros({k, rk}, opts_)};
      // [1, rows, n]: the same for every box until a nonlinear op's lines make it differ
      // (every step broadcasts a batch of 1 against the boxes).
      w.lam[target] = c.narrow(0, r0, rk).unsqueeze(0).contiguous();
      w.om[target] = w.lam[target];
      for (int n : order) {
        if (!w.lam[n].defined()) continue;
        if (m_.op(n) == nullptr) {
          concretize(input_part(x, n), w.lam[n], w.om[n], w);
          if (coefs && coef_ != nullptr)
            coef_->narrow(1, r0, rk).narrow(2, offset_[n], m_.numel(n)).add_(w.lam[n]);
        } else {
          RETURN_IF_ERROR(kernels_[n]->step(n, b, w));
        }
        w.lam[n] = at::Tensor();
        w.om[n] = at::Tensor();
      }
      lo.push_back(w.lb);
      hi.push_back(w.ub);
    }
    if (lo.size() == 1) return TBox{lo[0], hi[0]};
    return TBox{at::cat(lo, 1), at::cat(hi, 1)};
  }

  static void concretize(const TBox& in, const at::Tensor& lam, const at::Tensor& om,
                         TBackward& w) {
    at::Tensor center = ((in.lo + in.hi) * 0.5).unsqueeze(-1);
    at::Tensor radius = ((in.hi - in.lo) * 0.5).unsqueeze(-1);
    w.lb = w.lb + (at::matmul(lam, center) - at::matmul(lam.abs(), radius)).squeeze(-1);
    w.ub = w.ub + (at::matmul(om, center) + at::matmul(om.abs(), radius)).squeeze(-1);
  }

  const Model& m_;
  at::TensorOptions opts_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
  std::vector<int64_t> offset_;
  std::vector<RefineRows> kinds_;
  std::vector<double> row_cost_;
  Eigen::Index box_chunk_ = 1;
  at::Tensor* coef_ = nullptr;  // during compute_linear: where input coefficients go
};

}  // namespace

Result<std::unique_ptr<Engine>> create(const Model& model, const Device& device) {
  at::TensorOptions opts = at::TensorOptions().dtype(device.float32 ? at::kFloat : at::kDouble);
  if (device.device == "cuda") {
    if (!at::hasCUDA())
      return error("--device cuda: LibTorch sees no CUDA device (a CPU-only build or no GPU)");
    opts = opts.device(at::kCUDA);
  } else if (device.device != "cpu") {
    return error("unknown device '" + device.device + "' (cpu, cuda)");
  }
  return TorchEngine::guarded([&]() -> Result<std::unique_ptr<Engine>> {
    auto engine = std::make_unique<TorchEngine>(model, opts);
    RETURN_IF_ERROR(engine->prepare());
    return std::unique_ptr<Engine>(std::move(engine));
  });
}

}  // namespace propdag::torch_engine

extern "C" __attribute__((visibility("default"))) PropdagTorchCreate propdag_torch_entry() {
  return &propdag::torch_engine::create;
}

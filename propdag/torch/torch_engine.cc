// The batched engine: crown.cc's forward (IBP, refined by CROWN where an input of a nonlinear op
// is affordable) and backward passes, on [K, n] bounds and [K, rows, n] coefficients.
#include "propdag/torch/torch_engine.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
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
#include <memory>
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
using internal::TLines;
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
    pairs_ok_.assign(dag.size(), false);
    for (int n = 0; n < dag.size(); ++n) {
      if (kinds_[n] != RefineRows::kStraddling) continue;
      const std::vector<int> order = dag.backward_order(n);
      pairs_ok_[n] = std::none_of(order.begin(), order.end(), [&](int m) {
        return kernels_[m] != nullptr && kernels_[m]->per_box();
      });
    }
    return {};
  }

  Result<std::vector<Boxes>> output_bounds(const Boxes& input, const Options& opt) override {
    return guarded([&]() -> Result<std::vector<Boxes>> {
      std::vector<std::vector<Boxes>> parts;
      RETURN_IF_ERROR(over_chunks(
          input.count(), opt,
          [&](int64_t c, Eigen::Index k0, Eigen::Index k, const Options& o) -> Status {
            ASSIGN_OR_RETURN(
                parts[c],
                compute_outputs({input.lo.middleRows(k0, k), input.hi.middleRows(k0, k)}, o));
            return Status();
          },
          [&](int64_t chunks) { parts.resize(chunks); }));
      std::vector<Boxes> out;
      for (const Boxes& p : parts[0])
        out.push_back({Mat(input.count(), p.lo.cols()), Mat(input.count(), p.lo.cols())});
      Eigen::Index k0 = 0;
      for (const std::vector<Boxes>& part : parts) {
        const Eigen::Index k = part[0].lo.rows();
        for (size_t o = 0; o < part.size(); ++o) {
          out[o].lo.middleRows(k0, k) = part[o].lo;
          out[o].hi.middleRows(k0, k) = part[o].hi;
        }
        k0 += k;
      }
      return out;
    });
  }
  Result<Boxes> linear_bounds(const Boxes& input, const std::vector<Mat>& c, const Options& opt,
                              std::vector<Mat>* lower_coef,
                              std::vector<Boxes>* node_bounds) override {
    return guarded([&]() -> Result<Boxes> {
      if (lower_coef != nullptr) lower_coef->clear();
      std::vector<Boxes> prior;  // the carried node bounds, per chunk of boxes
      if (node_bounds != nullptr) prior = std::exchange(*node_bounds, {});
      std::vector<Boxes> parts;
      std::vector<std::vector<Mat>> coefs;
      std::vector<std::vector<TBox>> nodes;
      RETURN_IF_ERROR(over_chunks(
          input.count(), opt,
          [&](int64_t i, Eigen::Index k0, Eigen::Index k, const Options& o) -> Status {
            nodes[i] = internal::node_rows(m_, prior, k0, k, input.count(), opts_);
            ASSIGN_OR_RETURN(
                parts[i], compute_linear({input.lo.middleRows(k0, k), input.hi.middleRows(k0, k)},
                                         c, o, lower_coef != nullptr ? &coefs[i] : nullptr,
                                         node_bounds != nullptr ? &nodes[i] : nullptr));
            return Status();
          },
          [&](int64_t chunks) {
            parts.resize(chunks), coefs.resize(chunks), nodes.resize(chunks);
          }));
      Boxes out{Mat(input.count(), parts[0].lo.cols()), Mat(input.count(), parts[0].lo.cols())};
      Eigen::Index k0 = 0;
      for (size_t i = 0; i < parts.size(); ++i) {
        const Eigen::Index k = parts[i].lo.rows();
        out.lo.middleRows(k0, k) = parts[i].lo;
        out.hi.middleRows(k0, k) = parts[i].hi;
        if (node_bounds != nullptr) internal::store_rows(nodes[i], k0, input.count(), *node_bounds);
        if (lower_coef != nullptr)
          for (Mat& m : coefs[i]) lower_coef->push_back(std::move(m));
        k0 += k;
      }
      return out;
    });
  }

  // Runs f(chunk, first box, boxes, options) over the boxes in chunks of at most box_chunk_,
  // after size(chunks). On the CPU the chunks run on LibTorch's intra-op threads (at least one
  // chunk per thread; inside a chunk each op then runs on its thread alone), each with its own
  // BoundsReport, added to opt.report at the end; on CUDA one after another.
  template <class F, class G>
  Status over_chunks(Eigen::Index count, const Options& opt, F&& f, G&& size) const {
    const int64_t threads = opts_.device().is_cpu() ? at::get_num_threads() : 1;
    Eigen::Index chunk = box_chunk_;
    if (threads > 1)
      chunk = std::max<Eigen::Index>(1, std::min(chunk, (count + threads - 1) / threads));
    const int64_t chunks = (count + chunk - 1) / chunk;
    size(chunks);
    std::vector<Status> status(chunks);
    std::vector<BoundsReport> reports(chunks);
    auto run = [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        Options o = opt;
        if (opt.report != nullptr) o.report = &reports[c];
        const Eigen::Index k0 = c * chunk;
        status[c] = f(c, k0, std::min(chunk, count - k0), o);
      }
    };
    if (threads > 1 && chunks > 1)
      at::parallel_for(0, chunks, 1, run);
    else
      run(0, chunks);
    for (int64_t c = 0; c < chunks; ++c) {
      if (opt.report != nullptr) opt.report->add(reports[c]);
      if (!status[c].ok()) return status[c];
    }
    return {};
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
    std::vector<TLines> lines;
    RETURN_IF_ERROR(forward(x, opt, out_rows, b, lines));
    for (int o : m_.dag().outputs()) {
      const int64_t n = m_.numel(o);
      if (!propdag::internal::output_affordable(opt, row_cost_[o] * static_cast<double>(n),
                                                x.lo.size(0))) {
        out.push_back(to_boxes(b[o]));
        continue;
      }
      ASSIGN_OR_RETURN(TBox r, backward(o, at::eye(n, opts_), x, b, opt, nullptr, &lines));
      ASSIGN_OR_RETURN(r, internal::tuned_outputs({m_, kernels_, offset_, x, b}, o, r, opt));
      internal::nan_as_unbounded(r);
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
    std::vector<TLines> lines;
    if (use_ibp) {
      ASSIGN_OR_RETURN(auto values, ibp(x));
      for (int o : dag.outputs()) b[o] = *values[o];
      if (nodes != nullptr) nodes->clear();
    } else {
      std::vector<double> out_rows;
      for (const Mat& m : c) out_rows.push_back(m.size() == 0 ? 0 : static_cast<double>(rows));
      RETURN_IF_ERROR(forward(x, opt, out_rows, b, lines, nodes));
      if (nodes != nullptr) *nodes = b;
    }
    TBox total{at::zeros({input.count(), rows}, opts_), at::zeros({input.count(), rows}, opts_)};
    at::Tensor coef;  // [K, rows, inputs]: the lower bounds' input coefficients, when asked for
    if (lower_coef != nullptr) coef = at::zeros({input.count(), rows, m_.input_size()}, opts_);
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
        ASSIGN_OR_RETURN(at::Tensor tuned,
                         internal::optimized_lower({m_, kernels_, offset_, x, b}, node, ct, opt,
                                                   lower_coef != nullptr ? &coef : nullptr));
        at::Tensor* into = lower_coef != nullptr && !tuned.defined() ? &coef : nullptr;
        ASSIGN_OR_RETURN(part, backward(node, ct, x, b, opt, into, &lines));
        if (tuned.defined()) {
          TBox t{tuned, part.hi};
          internal::nan_as_unbounded(t);
          intersect(part, t.lo, part.hi);
        }
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
      ASSIGN_OR_RETURN(TBox y, kernels_[n]->interval(in));
      internal::nan_as_unbounded(y);
      return y;
    };
    ASSIGN_OR_RETURN(auto r, run_forward<TBox>(m_.dag(), m_.dag().bfs_order(), hook, false));
    return std::move(r.values);
  }

  // crown.cc's Crown::forward without splits; `output_rows` as Crown::set_output_rows; `prior`
  // (one entry per Dag node, undefined: nothing known) as its `prior`.
  Status forward(const TBox& x, const Options& opt, const std::vector<double>& output_rows,
                 std::vector<TBox>& b, std::vector<TLines>& lines,
                 const std::vector<TBox>* prior = nullptr) {
    const Dag& dag = m_.dag();
    const bool binding = propdag::internal::budget_binding(m_, opt, kinds_, row_cost_, output_rows);
    b.assign(dag.size(), TBox{});
    lines.assign(dag.size(), TLines{});
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
      internal::nan_as_unbounded(b[n]);
      if (prior != nullptr && (*prior)[n].lo.defined())
        intersect(b[n], (*prior)[n].lo, (*prior)[n].hi);
      if (kinds_[n] == RefineRows::kNone) continue;
      const RefineRows kind =
          propdag::internal::refine_kind(m_, opt, n, kinds_[n], binding, row_cost_[n]);
      RETURN_IF_ERROR(refine(n, kind, x, opt, b, lines));
    }
    return {};
  }

  // Crown::forward's refinement of node n, box by box: each box refines its own rows of `kind`
  // (refine_kind) when it affords their pass. One backward pass bounds the union of those rows;
  // each box keeps the new bounds of its own rows only, so that its bounds are the Eigen
  // engine's.
  Status refine(int n, RefineRows kind, const TBox& x, const Options& opt, std::vector<TBox>& b,
                std::vector<TLines>& lines) const {
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
    const int64_t pairs = want.sum().item<int64_t>();
    if (pairs_ok_[n] && 4 * pairs < 3 * k * rows.size(0))
      return refine_pairs(n, want, x, opt, b, lines);
    at::Tensor id = at::zeros({rows.size(0), numel}, opts_);  // those rows of the identity
    id.scatter_(1, rows.unsqueeze(1), 1.0);
    ASSIGN_OR_RETURN(TBox c, backward(n, id, x, b, opt, nullptr, &lines));
    const TBox old{b[n].lo.index_select(1, rows), b[n].hi.index_select(1, rows)};
    TBox tight = old;
    intersect(tight, c.lo, c.hi);
    const at::Tensor mine = want.index_select(1, rows);
    b[n].lo = b[n].lo.index_copy(1, rows, at::where(mine, tight.lo, old.lo));
    b[n].hi = b[n].hi.index_copy(1, rows, at::where(mine, tight.hi, old.hi));
    return {};
  }

  // refine() where the boxes' rows differ (each box refines its own straddling rows, and their
  // union would make most of the pass's work): one pass whose batch is the (box, row) pairs, each
  // with its box's input and node bounds and one identity row, so that every product has the
  // pairs as one large dimension and no box computes a row it does not refine. Used only where
  // every node of the pass has a batched kernel (pairs_ok_): a per-box rule would run per pair.
  Status refine_pairs(int n, const at::Tensor& want, const TBox& x, const Options& opt,
                      std::vector<TBox>& b, std::vector<TLines>& lines) const {
    const std::vector<int> order = m_.dag().backward_order(n);
    for (int m : order) {  // the boxes' lines, computed once, then taken per pair
      if (kernels_[m] == nullptr || kernels_[m]->affine() != nullptr || lines[m].lo_slope.defined())
        continue;
      ASSIGN_OR_RETURN(lines[m], kernels_[m]->lines(m, b));
    }
    double widest = 0;
    for (int m : order) widest = std::max<double>(widest, static_cast<double>(m_.numel(m)));
    const at::Tensor at_pair = want.nonzero();  // [P, 2]: box, row
    const int64_t total = at_pair.size(0), numel = m_.numel(n);
    const auto chunk =
        std::max<int64_t>(1, static_cast<int64_t>(opt.chunk_entries / std::max(1.0, widest)));
    for (int64_t p0 = 0; p0 < total; p0 += chunk) {
      const int64_t pk = std::min(chunk, total - p0);
      const at::Tensor box = at_pair.narrow(0, p0, pk).select(1, 0).contiguous();
      const at::Tensor row = at_pair.narrow(0, p0, pk).select(1, 1).contiguous();
      const TBox xs{x.lo.index_select(0, box), x.hi.index_select(0, box)};
      std::vector<TBox> bs(b.size());  // only what the affine steps need: none
      std::vector<TLines> ls(b.size());
      for (int m : order) {
        const TLines& l = lines[m];
        if (!l.lo_slope.defined()) continue;
        ls[m] = {l.lo_slope.index_select(0, box),
                 l.lo_bias.index_select(0, box),
                 l.up_slope.index_select(0, box),
                 l.up_bias.index_select(0, box),
                 at::Tensor(),
                 at::Tensor(),
                 l.input};
      }
      at::Tensor c = at::zeros({pk, 1, numel}, opts_);
      c.scatter_(2, row.view({pk, 1, 1}), 1.0);
      ASSIGN_OR_RETURN(TBox r, backward(n, c, xs, bs, opt, nullptr, &ls));
      const at::Tensor flat = box * numel + row;  // the pairs in b[n] seen as one vector
      const at::Tensor lo = b[n].lo.reshape(-1), hi = b[n].hi.reshape(-1);
      TBox tight{lo.index_select(0, flat), hi.index_select(0, flat)};
      intersect(tight, r.lo.squeeze(1), r.hi.squeeze(1));
      b[n].lo = lo.index_copy(0, flat, tight.lo).view_as(b[n].lo);
      b[n].hi = hi.index_copy(0, flat, tight.hi).view_as(b[n].hi);
    }
    return {};
  }

  // Bounds of c * target ([K, rows]) for the objective c: [rows, numel(target)], the same for
  // every box, or [K, rows, numel(target)], one per box. The lower bounds' input coefficients
  // are added to `coef` ([K, rows, inputs]) when it is given.
  Result<TBox> backward(int target, const at::Tensor& c, const TBox& x, const std::vector<TBox>& b,
                        const Options& opt, at::Tensor* coef = nullptr,
                        std::vector<TLines>* lines = nullptr) const {
    const Dag& dag = m_.dag();
    std::vector<int> order = dag.backward_order(target);
    double widest = 0;
    for (int n : order) widest = std::max<double>(widest, static_cast<double>(m_.numel(n)));
    const bool per_box = c.dim() == 3;
    const int64_t k = x.lo.size(0), rows = c.size(per_box ? 1 : 0);
    const auto chunk = std::max<int64_t>(
        1, static_cast<int64_t>(opt.chunk_entries / (widest * static_cast<double>(k))));
    std::vector<at::Tensor> lo, hi;
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
      const int64_t rk = std::min(chunk, rows - r0);
      TBackward w{std::vector<at::Tensor>(dag.size()), std::vector<at::Tensor>(dag.size()),
                  at::zeros({k, rk}, opts_), at::zeros({k, rk}, opts_), lines};
      // [1, rows, n]: the same for every box until a nonlinear op's lines make it differ
      // (every step broadcasts a batch of 1 against the boxes).
      w.lam[target] = per_box ? c.narrow(1, r0, rk).contiguous()
                              : c.narrow(0, r0, rk).unsqueeze(0).contiguous();
      w.om[target] = w.lam[target];
      for (int n : order) {
        if (!w.lam[n].defined()) continue;
        if (m_.op(n) == nullptr) {
          concretize(input_part(x, n), w.lam[n], w.om[n], w);
          if (coef != nullptr)
            coef->narrow(1, r0, rk).narrow(2, offset_[n], m_.numel(n)).add_(w.lam[n]);
        } else {
          RETURN_IF_ERROR(kernels_[n]->step(n, b, w));
        }
        w.lam[n] = at::Tensor();
        w.om[n] = at::Tensor();
      }
      lo.push_back(w.lb);
      hi.push_back(w.ub);
    }
    TBox out = lo.size() == 1 ? TBox{lo[0], hi[0]} : TBox{at::cat(lo, 1), at::cat(hi, 1)};
    internal::nan_as_unbounded(out);
    return out;
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
  std::vector<bool> pairs_ok_;  // per node: refine_pairs may refine it
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

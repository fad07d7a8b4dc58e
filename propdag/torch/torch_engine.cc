// The batched engine: loading (a kernel per node), the library calls over chunks of boxes, IBP,
// and the outputs' backward passes; crown.cc's forward and backward passes are in
// torch_passes.cc.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/isneginf.h>
#include <ATen/ops/nan_to_num.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <dlfcn.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>

#include "propdag/torch/torch_alpha.h"
#include "propdag/torch/torch_engine_impl.h"
#include "propdag/traverse.h"

namespace propdag::torch_engine {
namespace internal {

Status TorchEngine::prepare() {
  const Dag& dag = m_.dag();
  kernels_.resize(dag.size());
  offset_.assign(dag.size(), 0);
  int64_t at = 0;
  for (int i : dag.inputs()) offset_[i] = at, at += m_.numel(i);
  for (int n = 0; n < dag.size(); ++n) {
    if (m_.op(n) == nullptr) continue;
    ASSIGN_OR_RETURN(kernels_[n], internal::make_kernel(m_, n, opts_));
  }
  kinds_ = m_.crown_plan().kinds;
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
      return kernels_[m] != nullptr && !kernels_[m]->steps_by_lines();
    });
  }
  return {};
}

Result<std::vector<Boxes>> TorchEngine::output_bounds(const Boxes& input, const Options& opt) {
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

Result<Boxes> TorchEngine::linear_bounds(const Boxes& input, const std::vector<Mat>& c,
                                         const Options& opt, std::vector<Mat>* lower_coef,
                                         std::vector<Boxes>* node_bounds, Mat* lower_bias) {
  return guarded([&]() -> Result<Boxes> {
    if (lower_coef != nullptr) lower_coef->clear();
    if (lower_bias != nullptr) lower_bias->resize(0, 0);
    const bool biases = lower_bias != nullptr && lower_coef != nullptr;
    std::vector<Boxes> prior;  // the carried node bounds, per chunk of boxes
    if (node_bounds != nullptr) prior = std::exchange(*node_bounds, {});
    std::vector<Boxes> parts;
    std::vector<std::vector<Mat>> coefs;
    std::vector<std::vector<TBox>> nodes;
    std::vector<Mat> raw;
    RETURN_IF_ERROR(over_chunks(
        input.count(), opt,
        [&](int64_t i, Eigen::Index k0, Eigen::Index k, const Options& o) -> Status {
          nodes[i] = internal::node_rows(m_, prior, k0, k, input.count(), opts_);
          ASSIGN_OR_RETURN(
              parts[i], compute_linear({input.lo.middleRows(k0, k), input.hi.middleRows(k0, k)}, c,
                                       o, lower_coef != nullptr ? &coefs[i] : nullptr,
                                       node_bounds != nullptr ? &nodes[i] : nullptr,
                                       biases ? &raw[i] : nullptr));
          return Status();
        },
        [&](int64_t chunks) {
          parts.resize(chunks), coefs.resize(chunks), nodes.resize(chunks), raw.resize(chunks);
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
    if (biases && !raw.empty() && raw.front().size() > 0) {
      *lower_bias = Mat(input.count(), out.lo.cols());
      k0 = 0;
      for (const Mat& r : raw) {
        for (Eigen::Index j = 0; j < r.rows(); ++j, ++k0)
          lower_bias->row(k0) = propdag::internal::lower_bias(
                                    (*lower_coef)[static_cast<size_t>(k0)], r.row(j).transpose(),
                                    {input.lo.row(k0).transpose(), input.hi.row(k0).transpose()})
                                    .transpose();
      }
    }
    return out;
  });
}

std::vector<std::string> TorchEngine::per_box_ops() const {
  std::vector<std::string> out;
  for (int n = 0; n < m_.dag().size(); ++n)
    if (kernels_[n] && kernels_[n]->per_box())
      out.push_back(m_.graph().nodes[m_.dag().node(n).graph_node].op_type);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::map<std::string, int> TorchEngine::kinds() const {
  std::vector<std::string> all;
  for (const auto& k : kernels_)
    if (k) k->kinds(all);
  std::map<std::string, int> out;
  for (const std::string& k : all) ++out[k];
  return out;
}

Result<std::vector<Boxes>> TorchEngine::compute_outputs(const Boxes& input, const Options& opt) {
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
    // The identity's rows; an affine output's pass takes its weights' rows instead.
    const at::Tensor all = at::arange(n, opts_.dtype(at::kLong));
    const at::Tensor id = kernels_[o]->affine() != nullptr ? at::zeros({1, 1}, opts_).expand({n, n})
                                                           : at::eye(n, opts_);
    ASSIGN_OR_RETURN(TBox r, backward(o, id, x, b, opt, nullptr, &lines, &all));
    ASSIGN_OR_RETURN(r, internal::tuned_outputs({m_, kernels_, offset_, x, b}, o, r, opt));
    internal::nan_as_unbounded(r);
    if (opt.intersect_ibp) intersect(r, b[o].lo, b[o].hi);
    out.push_back(to_boxes(r));
  }
  return out;
}

Result<Boxes> TorchEngine::compute_linear(const Boxes& input, const std::vector<Mat>& c,
                                          const Options& opt, std::vector<Mat>* lower_coef,
                                          std::vector<TBox>* nodes, Mat* raw_lo) {
  const Dag& dag = m_.dag();
  if (c.size() != dag.outputs().size())
    return m_.graph().error("one objective matrix per graph output is needed");
  ASSIGN_OR_RETURN(TBox x, boxes(input, opt));
  Eigen::Index rows = 0;
  for (const Mat& m : c) rows = std::max(rows, m.rows());
  // The rows the budget judges a final pass by (Options::budget_rows).
  const Eigen::Index judged = opt.budget_rows > 0 ? std::min(rows, opt.budget_rows) : rows;
  const bool use_ibp = opt.method == Method::kIbp;
  std::vector<TBox> b(dag.size());
  std::vector<TLines> lines;
  if (use_ibp) {
    ASSIGN_OR_RETURN(auto values, ibp(x));
    for (int o : dag.outputs()) b[o] = *values[o];
    if (nodes != nullptr) nodes->clear();
  } else {
    std::vector<double> out_rows;
    for (const Mat& m : c) out_rows.push_back(m.size() == 0 ? 0 : static_cast<double>(judged));
    std::shared_ptr<const propdag::internal::Relevance> relevance;
    if (opt.objective_cone) relevance = propdag::internal::cached_relevance(m_, c);
    RETURN_IF_ERROR(forward(x, opt, out_rows, b, lines, nodes, relevance.get()));
    if (nodes != nullptr) *nodes = b;
  }
  TBox total{at::zeros({input.count(), rows}, opts_), at::zeros({input.count(), rows}, opts_)};
  int parts = 0;  // objective parts (graph outputs weighed)
  for (const Mat& m : c) parts += m.size() > 0 ? 1 : 0;
  at::Tensor coef;  // [K, rows, inputs]: the lower bounds' input coefficients, when asked for
  if (lower_coef != nullptr) coef = at::zeros({input.count(), rows, m_.input_size()}, opts_);
  // [K, rows]: the lower bounds those coefficients were concretized to (raw_lo).
  at::Tensor raw;
  if (raw_lo != nullptr && lower_coef != nullptr && !use_ibp)
    raw = at::zeros({input.count(), rows}, opts_);
  for (size_t o = 0; o < c.size(); ++o) {
    if (c[o].size() == 0) continue;
    const int node = dag.outputs()[o];
    if (c[o].cols() != m_.numel(node) || c[o].rows() != rows)
      return m_.graph().error("objective matrix for output " + std::to_string(o) +
                              " has the wrong size");
    at::Tensor ct = internal::to_tensor(c[o], opts_);
    const bool affordable =
        use_ibp || propdag::internal::output_affordable(
                       opt, row_cost_[node] * static_cast<double>(judged), input.count());
    TBox part;
    if (affordable && !use_ibp) {
      // CROWN first (with IBP's bounds): alpha keeps its coefficients for the rows it leaves,
      // and takes the rows in the order of their margins.
      at::Tensor part_coef;
      if (lower_coef != nullptr) part_coef = parts == 1 ? coef : at::zeros_like(coef);
      at::Tensor* into = lower_coef != nullptr ? &part_coef : nullptr;
      ASSIGN_OR_RETURN(part, backward(node, ct, x, b, opt, into, &lines));
      at::Tensor crown_lo = raw.defined() ? part.lo.clone() : at::Tensor();
      if (opt.intersect_ibp) {
        TBox loose = box_of(ct, b[node]);
        intersect(part, loose.lo, loose.hi);
      }
      ASSIGN_OR_RETURN(at::Tensor tuned,
                       internal::optimized_lower({m_, kernels_, offset_, x, b}, node, ct, opt, into,
                                                 part.lo, parts == 1 ? opt.goal : nullptr));
      if (lower_coef != nullptr && parts > 1) coef.add_(part_coef);
      if (raw.defined()) {
        // A tuned row's coefficients are those of its tuned bound (untuned rows: -inf there,
        // CROWN's coefficients); a NaN row says nothing.
        at::Tensor r = tuned.defined() ? at::where(tuned.isneginf(), crown_lo, tuned) : crown_lo;
        raw.add_(r);
      }
      if (tuned.defined()) {
        TBox t{tuned, part.hi};
        internal::nan_as_unbounded(t);
        intersect(part, t.lo, part.hi);
      }
    } else {
      part = box_of(ct, b[node]);
      if (raw.defined()) raw.add_(part.lo);  // no coefficients: the interval's lower end
    }
    total.lo = total.lo + part.lo;
    total.hi = total.hi + part.hi;
  }
  if (lower_coef != nullptr)
    for (Mat& m : internal::to_mats(coef)) lower_coef->push_back(std::move(m));
  if (raw.defined()) {  // NaN (inf - inf over parts, or from a row): nothing known
    const double inf = std::numeric_limits<double>::infinity();
    at::Tensor r = at::nan_to_num(raw, -inf, inf, -inf);
    *raw_lo = to_boxes({r, r}).lo;
  }
  return to_boxes(total);
}

Result<TBox> TorchEngine::boxes(const Boxes& input, const Options& opt) const {
  if (input.lo.cols() != m_.input_size() || input.hi.cols() != m_.input_size() ||
      input.lo.rows() != input.hi.rows() || input.count() == 0)
    return m_.graph().error("input boxes have " + std::to_string(input.lo.cols()) +
                            " elements, the model takes " + std::to_string(m_.input_size()));
  return TBox{internal::to_tensor(input.lo, opts_), internal::to_tensor(input.hi, opts_)};
}

TBox TorchEngine::input_part(const TBox& x, int node) const {
  return {x.lo.narrow(1, offset_[node], m_.numel(node)),
          x.hi.narrow(1, offset_[node], m_.numel(node))};
}

Result<std::vector<std::optional<TBox>>> TorchEngine::ibp(const TBox& x) const {
  auto hook = [&](int n, const std::vector<const TBox*>& in) -> Result<TBox> {
    if (m_.op(n) == nullptr) return input_part(x, n);
    ASSIGN_OR_RETURN(TBox y, kernels_[n]->interval(in));
    internal::nan_as_unbounded(y);
    return y;
  };
  ASSIGN_OR_RETURN(
      auto r, run_forward<TBox>(m_.dag(), m_.dag().bfs(), m_.dag().bfs_release(), hook, false));
  return std::move(r.values);
}

bool sequential_openblas() {
  void* lib = dlopen("libopenblas.so.0", RTLD_LAZY | RTLD_NOLOAD);
  if (lib == nullptr) return false;
  auto parallel = reinterpret_cast<int (*)()>(dlsym(lib, "openblas_get_parallel"));
  const bool sequential = parallel != nullptr && parallel() == 0;
  dlclose(lib);
  return sequential;
}

}  // namespace internal

common::Result<std::unique_ptr<Engine>> create(const Model& model, const Device& device) {
  if (device.threads > 0 && device.device == "cpu") at::set_num_threads(device.threads);
  if (internal::sequential_openblas() && at::get_num_threads() > 1) at::set_num_threads(1);
  at::TensorOptions opts = at::TensorOptions().dtype(device.float32 ? at::kFloat : at::kDouble);
  if (device.device == "cuda") {
    if (!at::hasCUDA())
      return internal::error(
          "--device cuda: LibTorch sees no CUDA device (a CPU-only build or no GPU)");
    opts = opts.device(at::kCUDA);
  } else if (device.device != "cpu") {
    return internal::error("unknown device '" + device.device + "' (cpu, cuda)");
  }
  return internal::TorchEngine::guarded([&]() -> common::Result<std::unique_ptr<Engine>> {
    auto engine = std::make_unique<internal::TorchEngine>(model, opts);
    RETURN_IF_ERROR(engine->prepare());
    return std::unique_ptr<Engine>(std::move(engine));
  });
}

}  // namespace propdag::torch_engine

extern "C" __attribute__((visibility("default"))) PropdagTorchCreate propdag_torch_entry() {
  return &propdag::torch_engine::create;
}

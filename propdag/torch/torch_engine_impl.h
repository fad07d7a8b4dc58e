// The batched engine's class (torch_engine.cc: loading, the library calls, IBP; torch_passes.cc:
// crown.cc's forward refinement and backward passes), on [K, n] bounds and [K, rows, n]
// coefficients. Internal to the propdag_torch library.
#pragma once

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "propdag/crown.h"
#include "propdag/torch/torch_engine.h"
#include "propdag/torch/torch_ops.h"

namespace propdag::torch_engine::internal {

using common::Result;
using common::Status;
using propdag::internal::RefineRows;

inline common::Error error(std::string message) {
  return common::Error{"", "", "", std::move(message)};
}

class TorchEngine : public Engine {
 public:
  TorchEngine(const Model& model, at::TensorOptions opts) : m_(model), opts_(opts) {}

  Status prepare();

  Result<std::vector<Boxes>> output_bounds(const Boxes& input, const Options& opt) override;
  Result<Boxes> linear_bounds(const Boxes& input, const std::vector<Mat>& c, const Options& opt,
                              std::vector<Mat>* lower_coef, std::vector<Boxes>* node_bounds,
                              Mat* lower_bias) override;

  // Runs f(chunk, first box, boxes, options) over the boxes in chunks of at most box_chunk_,
  // after size(chunks). On the CPU the chunks run on LibTorch's intra-op threads (at least one
  // chunk per thread; inside a chunk each op then runs on its thread alone), each with its own
  // BoundsReport, added to opt.report at the end; on CUDA one after another.
  template <class F, class G>
  Status over_chunks(Eigen::Index count, const Options& opt, F&& f, G&& size) const {
    const int64_t threads = cpu_paths(opts_.device()) ? at::get_num_threads() : 1;
    // At most all the boxes (box_chunk_ is the largest index on CUDA: count + chunk overflowed).
    Eigen::Index chunk = std::min<Eigen::Index>(box_chunk_, std::max<Eigen::Index>(count, 1));
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

  std::vector<std::string> per_box_ops() const override;

  std::map<std::string, int> kinds() const override;

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
  Result<std::vector<Boxes>> compute_outputs(const Boxes& input, const Options& opt);

  // `nodes` (optional): in, forward's `prior`; out, every node's bounds (cleared for IBP).
  // `raw_lo` (optional, with lower_coef): the lower bounds [K, rows] that the coefficients were
  // concretized to, before their intersection with interval bounds (lower_bias's raw_lo).
  Result<Boxes> compute_linear(const Boxes& input, const std::vector<Mat>& c, const Options& opt,
                               std::vector<Mat>* lower_coef, std::vector<TBox>* nodes,
                               Mat* raw_lo = nullptr);

  Result<TBox> boxes(const Boxes& input, const Options& opt) const;

  TBox input_part(const TBox& x, int node) const;

  // IBP over the breadth-first schedule, each node's bounds dropped after its last consumer.
  Result<std::vector<std::optional<TBox>>> ibp(const TBox& x) const;

  // crown.cc's Crown::forward without splits; `output_rows` as Crown::set_output_rows; `prior`
  // (one entry per Dag node, undefined: nothing known) as its `prior`.
  // With `relevance` (relevant_elements of the objective), only the rows it keeps are refined.
  Status forward(const TBox& x, const Options& opt, const std::vector<double>& output_rows,
                 std::vector<TBox>& b, std::vector<TLines>& lines,
                 const std::vector<TBox>* prior = nullptr,
                 const propdag::internal::Relevance* relevance = nullptr);

  // Crown::forward's refinement of node n, box by box: each box refines its own rows of `kind`
  // (refine_kind) when it affords their pass. One backward pass bounds the union of those rows;
  // each box keeps the new bounds of its own rows only, so that its bounds are the Eigen
  // engine's.
  Status refine(int n, RefineRows kind, const TBox& x, const Options& opt, std::vector<TBox>& b,
                std::vector<TLines>& lines, const std::vector<char>* keep) const;
  // Options::alpha_last_nodes: node n's refined elements (`rows`, [M] indices) with their lower
  // bounds and minus their upper bounds tuned by alpha, each box's bounds narrowed to them.
  Status tune_node(int n, const at::Tensor& rows, const TBox& x, const Options& opt,
                   std::vector<TBox>& b) const;

  // refine() where the boxes' rows differ (each box refines its own straddling rows, and their
  // union would make most of the pass's work): one pass whose batch is the (box, row) pairs, each
  // with its box's input and node bounds and one identity row, so that every product has the
  // pairs as one large dimension and no box computes a row it does not refine. Used only where
  // every node of the pass steps through its lines alone (pairs_ok_, Kernel::steps_by_lines).
  // A permutation of the rows of node n to refine (indices of its elements, [R]) whose
  // consecutive runs lie in few neighbouring kTile x kTile tiles of a [1, C, H, W] map (tile by
  // tile, each tile channel by channel): a backward pass takes its rows in chunks, and a
  // convolution's step works over the window of the chunk's nonzero coefficients only
  // (torch_maps.cc). With `box` ([R], the box of each row: refine_pairs' pairs), each box's rows
  // stay together. Undefined (keep the order) for other nodes.
  static constexpr int64_t kTile = 4;
  at::Tensor spatial_order(int n, const at::Tensor& rows, const at::Tensor& box = {}) const;
  Status refine_pairs(int n, const at::Tensor& want, const TBox& x, const Options& opt,
                      std::vector<TBox>& b, std::vector<TLines>& lines) const;

  // Bounds of c * target ([K, rows]) for the objective c: [rows, numel(target)], the same for
  // every box, or [K, rows, numel(target)], one per box. The lower bounds' input coefficients
  // are added to `coef` ([K, rows, inputs]) when it is given. `unit` (optional): c is the
  // identity's rows at these indices ([rows]; [K] for one row per box), so that an affine
  // target's first step takes its weights' rows instead of multiplying by them (c's entries are
  // then not read: callers pass an expanded zero of its shape).
  // With `late`: past Options::deadline between two chunks of rows, sets *late and returns no
  // bounds (a refinement pass then leaves its node's bounds as they are).
  Result<TBox> backward(int target, const at::Tensor& c, const TBox& x, const std::vector<TBox>& b,
                        const Options& opt, at::Tensor* coef = nullptr,
                        std::vector<TLines>* lines = nullptr, const at::Tensor* unit = nullptr,
                        bool* late = nullptr) const;

  static void concretize(const TBox& in, const at::Tensor& lam, const at::Tensor& om, TBackward& w);

  const Model& m_;
  at::TensorOptions opts_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
  std::vector<int64_t> offset_;
  std::vector<RefineRows> kinds_;
  std::vector<double> row_cost_;
  Eigen::Index box_chunk_ = 1;
  std::vector<bool> pairs_ok_;  // per node: refine_pairs may refine it
};

/// Whether the process's BLAS is OpenBLAS's sequential build (Debian's libopenblas0-serial, the
/// default alternative there). It shares its work buffers between threads without locks, so
/// products from two threads at once may corrupt each other: with 2 threads, this engine's
/// convolution and matrix-vector products did, and its bounds then differed from the Eigen
/// engine's. create() then runs LibTorch on one thread.
bool sequential_openblas();

}  // namespace propdag::torch_engine::internal

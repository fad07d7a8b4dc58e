// The batched engine's CROWN passes: crown.cc's forward (IBP refined by backward passes where an
// input of a nonlinear op is affordable, per box or per (box, row) pair) and its backward pass.
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/clamp_max.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "propdag/torch/torch_alpha.h"
#include "propdag/torch/torch_engine_impl.h"

namespace propdag::torch_engine::internal {
namespace {

// Options::alpha_last_nodes: the most coefficients per box that a node's tuned rows may hold.
// cGAN 32x32x1's last two refined nodes hold 1.05e7 and 1.71e7 (2.5 s, 1.6 s); TinyYOLO's last
// 3.15e8, whose tuning took longer than its whole full CROWN bound.
constexpr double kTunedNodeEntries = 5e7;

// The window (torch_ops.h) of the rows `rows` ([M] indices) of the identity on a node of shape
// `d`: known on [1, C, H, W] maps.
Window rows_window(const common::Dims& d, const at::Tensor& rows) {
  if (d.size() != 4 || d[0] != 1) return {};
  Window win{d[1], d[2], d[3], d[2], 0, d[3], 0};
  const at::Tensor r = rows.to(at::kCPU, at::kLong).contiguous();
  const int64_t* row = r.data_ptr<int64_t>();
  for (int64_t i = 0; i < r.size(0); ++i) {
    const int64_t y = row[i] / win.w % win.h, x = row[i] % win.w;
    win.r0 = std::min(win.r0, y), win.r1 = std::max(win.r1, y + 1);
    win.c0 = std::min(win.c0, x), win.c1 = std::max(win.c1, x + 1);
  }
  return win;
}

// The elements of a node in the objective's cone (relevance.h: `keep`), as a [numel] mask.
at::Tensor cone_mask(const std::vector<char>& keep, const at::Device& device) {
  return at::from_blob(const_cast<char*>(keep.data()), {static_cast<int64_t>(keep.size())},
                       at::TensorOptions().dtype(at::kChar))
      .to(device, at::kBool);
}

}  // namespace

Status TorchEngine::forward(const TBox& x, const Options& opt,
                            const std::vector<double>& output_rows, std::vector<TBox>& b,
                            std::vector<TLines>& lines, const std::vector<TBox>* prior,
                            const propdag::internal::Relevance* relevance) {
  const Dag& dag = m_.dag();
  const bool binding = propdag::internal::budget_binding(m_, opt, kinds_, row_cost_, output_rows);
  b.assign(dag.size(), TBox{});
  lines.assign(dag.size(), TLines{});
  // Options::alpha_last_nodes: the refined nodes from this index on are tuned.
  int tuned_from = dag.size();
  if (opt.method == Method::kAlpha)
    for (int n = dag.size() - 1, left = opt.alpha_last_nodes; n >= 0 && left > 0; --n)
      if (kinds_[n] != RefineRows::kNone) tuned_from = n, --left;
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
    const std::vector<char>* keep =
        relevance != nullptr && !(*relevance)[n].empty() ? &(*relevance)[n] : nullptr;
    RETURN_IF_ERROR(refine(n, kind, x, opt, b, lines, keep));
    if (n >= tuned_from && !opt.past_deadline()) {
      at::Tensor want = kind == RefineRows::kAll
                            ? at::ones({m_.numel(n)}, b[n].lo.options().dtype(at::kBool))
                            : (b[n].lo < 0).logical_and(b[n].hi > 0).any(0);
      if (keep != nullptr) want = want.logical_and(cone_mask(*keep, want.device()));
      const at::Tensor rows = want.nonzero().squeeze(1);
      if (rows.size(0) > 0) RETURN_IF_ERROR(tune_node(n, rows, x, opt, b));
    }
  }
  return {};
}

Status TorchEngine::tune_node(int n, const at::Tensor& rows, const TBox& x, const Options& opt,
                              std::vector<TBox>& b) const {
  const int64_t r = rows.size(0);
  double per_row = 0;  // coefficients per box and row
  for (int q : m_.dag().backward_order(n)) per_row += static_cast<double>(m_.numel(q));
  if (2 * static_cast<double>(r) * per_row > kTunedNodeEntries) return {};
  const at::Tensor id =
      at::zeros({r, m_.numel(n)}, opts_).scatter_(1, rows.unsqueeze(1).to(opts_.device()), 1.0);
  const at::Tensor lo = b[n].lo.index_select(1, rows), hi = b[n].hi.index_select(1, rows);
  // Goals out of reach: every row is tuned, as many at a time as fit.
  const Vec never = Vec::Constant(2 * r, std::numeric_limits<double>::infinity());
  ASSIGN_OR_RETURN(at::Tensor tuned,
                   internal::optimized_lower({m_, kernels_, offset_, x, b}, n, at::cat({id, -id}),
                                             opt, nullptr, at::cat({lo, -hi}, 1), &never));
  if (!tuned.defined()) return {};
  TBox t{tuned.narrow(1, 0, r), -tuned.narrow(1, r, r)};
  internal::nan_as_unbounded(t);
  b[n].lo = b[n].lo.index_copy(1, rows, at::maximum(lo, t.lo));
  b[n].hi = b[n].hi.index_copy(1, rows, at::minimum(hi, t.hi));
  return {};
}

Status TorchEngine::refine(int n, RefineRows kind, const TBox& x, const Options& opt,
                           std::vector<TBox>& b, std::vector<TLines>& lines,
                           const std::vector<char>* keep) const {
  const int64_t k = x.lo.size(0), numel = m_.numel(n);
  at::Tensor want = kind == RefineRows::kAll
                        ? at::ones({k, numel}, b[n].lo.options().dtype(at::kBool))
                        : ((b[n].lo >= 0).logical_or(b[n].hi <= 0)).logical_not();
  if (keep != nullptr)  // rows outside the objective's cone (relevance.h)
    want = want.logical_and(cone_mask(*keep, want.device()).unsqueeze(0));
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
  at::Tensor rows = want.any(0).nonzero().squeeze(1);
  if (const at::Tensor p = spatial_order(n, rows); p.defined()) rows = rows.index_select(0, p);
  const int64_t pairs = want.sum().item<int64_t>();
  if (pairs_ok_[n] && 4 * pairs < 3 * k * rows.size(0))
    return refine_pairs(n, want, x, opt, b, lines);
  // Those rows of the identity; an affine node's pass takes its weights' rows instead.
  const at::Tensor id =
      kernels_[n]->affine() != nullptr
          ? at::zeros({1, 1}, opts_).expand({rows.size(0), numel})
          : at::zeros({rows.size(0), numel}, opts_).scatter_(1, rows.unsqueeze(1), 1.0);
  bool late = false;
  ASSIGN_OR_RETURN(TBox c, backward(n, id, x, b, opt, nullptr, &lines, &rows, &late));
  if (late) {  // the deadline passed during the pass: every box keeps its bounds of n
    int64_t boxes = 0, elements = 0;
    for (int64_t i = 0; i < k; ++i)
      if (taken[i][0]) ++boxes, elements += count[i];
    propdag::internal::count_late(opt, row_cost_[n] * static_cast<double>(elements), elements,
                                  boxes);
    return {};
  }
  const TBox old{b[n].lo.index_select(1, rows), b[n].hi.index_select(1, rows)};
  TBox tight = old;
  intersect(tight, c.lo, c.hi);
  const at::Tensor mine = want.index_select(1, rows);
  b[n].lo = b[n].lo.index_copy(1, rows, at::where(mine, tight.lo, old.lo));
  b[n].hi = b[n].hi.index_copy(1, rows, at::where(mine, tight.hi, old.hi));
  return {};
}

at::Tensor TorchEngine::spatial_order(int n, const at::Tensor& rows, const at::Tensor& box) const {
  const common::Dims& d = m_.shape(n);
  const int64_t count = rows.size(0);
  if (d.size() != 4 || d[0] != 1 || d[2] * d[3] < 4 * kTile * kTile || count < 2) return {};
  const int64_t c = d[1], h = d[2], w = d[3], across = (w + kTile - 1) / kTile;
  const int64_t span = (h + kTile - 1) / kTile * across * c * kTile * kTile;  // keys of one box
  const at::Tensor r = rows.to(at::kCPU, at::kLong).contiguous();
  const at::Tensor bx = box.defined() ? box.to(at::kCPU, at::kLong).contiguous() : at::Tensor();
  const int64_t* row = r.data_ptr<int64_t>();
  std::vector<std::pair<int64_t, int64_t>> key(static_cast<size_t>(count));  // (key, position)
  for (int64_t i = 0; i < count; ++i) {
    const int64_t ch = row[i] / (h * w), y = row[i] / w % h, x = row[i] % w;
    const int64_t tile = y / kTile * across + x / kTile;
    int64_t k = ((tile * c + ch) * kTile + y % kTile) * kTile + x % kTile;
    if (bx.defined()) k += bx.data_ptr<int64_t>()[i] * span;  // each box's pairs together
    key[static_cast<size_t>(i)] = {k, i};
  }
  std::sort(key.begin(), key.end());
  std::vector<int64_t> order(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    order[static_cast<size_t>(i)] = key[static_cast<size_t>(i)].second;
  const at::Tensor perm =
      at::from_blob(order.data(), {count}, at::TensorOptions().dtype(at::kLong)).clone();
  return perm.to(rows.device());
}

Status TorchEngine::refine_pairs(int n, const at::Tensor& want, const TBox& x, const Options& opt,
                                 std::vector<TBox>& b, std::vector<TLines>& lines) const {
  const std::vector<int> order = m_.dag().backward_order(n);
  for (int m : order) {  // the boxes' lines, computed once, then taken per pair
    if (kernels_[m] == nullptr || kernels_[m]->affine() != nullptr || lines[m].lo_slope.defined())
      continue;
    ASSIGN_OR_RETURN(lines[m], kernels_[m]->lines(m, b));
  }
  double widest = 0;
  for (int m : order) widest = std::max<double>(widest, static_cast<double>(m_.numel(m)));
  const bool affine = kernels_[n]->affine() != nullptr;
  at::Tensor at_pair = want.nonzero();  // [P, 2]: box, row
  if (const at::Tensor p = spatial_order(n, at_pair.select(1, 1), at_pair.select(1, 0));
      p.defined())
    at_pair = at_pair.index_select(0, p);
  const int64_t total = at_pair.size(0), numel = m_.numel(n);
  const auto chunk =
      std::max<int64_t>(1, static_cast<int64_t>(opt.chunk_entries / std::max(1.0, widest)));
  for (int64_t p0 = 0; p0 < total; p0 += chunk) {
    if (p0 > 0 && opt.past_deadline()) {  // the pairs left keep their bounds
      const at::Tensor left =
          at_pair.narrow(0, p0, total - p0).select(1, 0).to(at::kCPU, at::kLong).contiguous();
      const int64_t* box_of = left.data_ptr<int64_t>();
      const auto boxes =
          static_cast<int64_t>(std::set<int64_t>(box_of, box_of + left.size(0)).size());
      propdag::internal::count_late(opt, row_cost_[n] * static_cast<double>(total - p0), total - p0,
                                    boxes);
      break;
    }
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
    // Each pair's row of the identity; an affine node's pass takes its weights' rows instead.
    at::Tensor c = affine ? at::zeros({1, 1, 1}, opts_).expand({pk, 1, numel})
                          : at::zeros({pk, 1, numel}, opts_).scatter_(2, row.view({pk, 1, 1}), 1.0);
    ASSIGN_OR_RETURN(TBox r, backward(n, c, xs, bs, opt, nullptr, &ls, &row));
    const at::Tensor flat = box * numel + row;  // the pairs in b[n] seen as one vector
    const at::Tensor lo = b[n].lo.reshape(-1), hi = b[n].hi.reshape(-1);
    TBox tight{lo.index_select(0, flat), hi.index_select(0, flat)};
    intersect(tight, r.lo.squeeze(1), r.hi.squeeze(1));
    b[n].lo = lo.index_copy(0, flat, tight.lo).view_as(b[n].lo);
    b[n].hi = hi.index_copy(0, flat, tight.hi).view_as(b[n].hi);
  }
  return {};
}

Result<TBox> TorchEngine::backward(int target, const at::Tensor& c, const TBox& x,
                                   const std::vector<TBox>& b, const Options& opt, at::Tensor* coef,
                                   std::vector<TLines>* lines, const at::Tensor* unit,
                                   bool* late) const {
  const Dag& dag = m_.dag();
  std::vector<int> order = dag.backward_order(target);
  double widest = 0;
  for (int n : order) widest = std::max<double>(widest, static_cast<double>(m_.numel(n)));
  const bool per_box = c.dim() == 3;
  const int64_t k = x.lo.size(0), rows = c.size(per_box ? 1 : 0);
  const TAffine* first = kernels_[target] != nullptr ? kernels_[target]->affine() : nullptr;
  if (per_box && rows != 1) unit = nullptr;
  const auto chunk = std::max<int64_t>(
      1, static_cast<int64_t>(opt.chunk_entries / (widest * static_cast<double>(k))));
  const int64_t chunks = (rows + chunk - 1) / chunk;
  std::vector<at::Tensor> lo(static_cast<size_t>(chunks)), hi(static_cast<size_t>(chunks));
  // Chunk i of the rows, its lines cached in `ls` (nullptr: computed where needed).
  auto run = [&](int64_t i, std::vector<TLines>* ls) -> Status {
    const int64_t r0 = i * chunk, rk = std::min(chunk, rows - r0);
    TBackward w{std::vector<at::Tensor>(dag.size()),
                std::vector<at::Tensor>(dag.size()),
                at::zeros({k, rk}, opts_),
                at::zeros({k, rk}, opts_),
                ls,
                std::vector<Window>(dag.size())};
    // [1, rows, n]: the same for every box until a nonlinear op's lines make it differ
    // (every step broadcasts a batch of 1 against the boxes).
    if (unit != nullptr && first != nullptr) {  // the target's step on rows of the identity
      const at::Tensor idx = per_box ? *unit : unit->narrow(0, r0, rk);
      const Window from = rows_window(m_.shape(target), idx);
      for (const auto& [in, map] : first->terms) {
        Window to;
        at::Tensor l = map->adjoint_rows(idx, m_.numel(target), opts_, from, &to);
        l = per_box ? l.view({k, 1, -1}) : l.unsqueeze(0);
        add_coef(w, in, l, l, to);
      }
      const at::Tensor bias = first->bias.index_select(0, idx);
      w.lb = w.lb + (per_box ? bias.view({k, 1}) : bias.unsqueeze(0));
      w.ub = w.lb.clone();  // the steps add to each in place
    } else {
      w.lam[target] = per_box ? c.narrow(1, r0, rk).contiguous()
                              : c.narrow(0, r0, rk).unsqueeze(0).contiguous();
      w.om[target] = w.lam[target];
    }
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
    lo[static_cast<size_t>(i)] = w.lb;
    hi[static_cast<size_t>(i)] = w.ub;
    return {};
  };
  // The first chunk alone (it fills the lines' cache), then the others on LibTorch's threads
  // unless this call already runs on one of them (over_chunks' chunks of boxes): each thread
  // takes the next chunk, with its own copy of the cache, each op of it on that thread alone.
  RETURN_IF_ERROR(run(0, lines));
  const int64_t threads = cpu_paths(opts_.device()) && !at::in_parallel_region()
                              ? std::min<int64_t>(at::get_num_threads(), chunks - 1)
                              : 1;
  std::atomic<int64_t> next{1};
  std::atomic<bool> past{false};
  std::vector<Status> status(static_cast<size_t>(std::max<int64_t>(threads, 1)));
  auto worker = [&](int64_t t) {
    std::vector<TLines> own;
    if (lines != nullptr && threads > 1) own = *lines;
    std::vector<TLines>* ls = lines == nullptr ? nullptr : threads > 1 ? &own : lines;
    for (int64_t i = next++; i < chunks && status[static_cast<size_t>(t)].ok(); i = next++) {
      if (late != nullptr && (past || opt.past_deadline())) {
        past = true;
        return;
      }
      status[static_cast<size_t>(t)] = guarded([&] { return run(i, ls); });
    }
  };
  if (threads > 1)
    at::parallel_for(0, threads, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) worker(t);
    });
  else if (chunks > 1)
    worker(0);
  for (const Status& st : status) RETURN_IF_ERROR(st);
  if (past) {
    *late = true;
    return TBox{};
  }
  TBox out = lo.size() == 1 ? TBox{lo[0], hi[0]} : TBox{at::cat(lo, 1), at::cat(hi, 1)};
  internal::nan_as_unbounded(out);
  return out;
}

void TorchEngine::concretize(const TBox& in, const at::Tensor& lam, const at::Tensor& om,
                             TBackward& w) {
  // Each coefficient takes the end its sign selects, as Crown::concretize.
  const at::Tensor lo = in.lo.unsqueeze(-1), hi = in.hi.unsqueeze(-1);
  w.lb = w.lb + (at::matmul(lam.clamp_min(0), lo) + at::matmul(lam.clamp_max(0), hi)).squeeze(-1);
  w.ub = w.ub + (at::matmul(om.clamp_min(0), hi) + at::matmul(om.clamp_max(0), lo)).squeeze(-1);
}
}  // namespace propdag::torch_engine::internal

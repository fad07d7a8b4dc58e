// CaseSearch's parallel input splitting (SplitOptions::threads): the case's box cut into parts,
// each searched as a case of its own on one of several threads.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "propdag/case_search.h"
#include "propdag/op.h"

namespace propdag::internal {
namespace {

// Builds every lazily built matrix of the model (op.h: LinearTerm::sparse is not thread-safe on
// first use), so that the threads only read the model.
void build_lazy_terms(const Model& model) {
  for (int node = 0; node < model.dag().size(); ++node) {
    const auto* affine = dynamic_cast<const AffineOp*>(model.op(node));
    if (affine == nullptr) continue;
    for (const LinearTerm& t : affine->terms())
      if (!t.dense) t.sparse();
  }
}

}  // namespace

bool CaseSearch::parallel() const {
  return split_.threads > 1 && bounder_ == nullptr && small_model_ && integer_dims_.empty() &&
         evaluator_ == nullptr && !full_pays() && stop_ == nullptr;
}

std::vector<Interval> CaseSearch::left_open() const {
  const Search* best = nullptr;
  double least = std::numeric_limits<double>::infinity();
  for (const Search& search : searches_) {
    double volume = 0;
    for (const Open& o : search.open) {
      double v = 1;
      for (Eigen::Index d = 0; d < o.box.size(); ++d) {
        const double whole = case_.box.hi[d] - case_.box.lo[d];
        if (whole > 0) v *= (o.box.hi[d] - o.box.lo[d]) / whole;
      }
      volume += v;
    }
    if (volume < least) least = volume, best = &search;
  }
  std::vector<Interval> out;
  if (best != nullptr)
    for (const Open& o : best->open) out.push_back(o.box);
  return out;
}

common::Result<Verdict> CaseSearch::run_parallel() {
  const auto threads = static_cast<size_t>(split_.threads);
  // The first parts: the box halved along its steepest dimension under the whole box's bounds
  // (the widest under IBP), part by part, until there is one per thread.
  std::vector<Interval> first = {case_.box};
  while (first.size() < threads) {
    std::vector<Interval> cut;
    for (const Interval& box : first) {
      const Eigen::Index dim = steepest(box, *whole_);
      if (!splittable(box, dim)) {
        cut.push_back(box);
        continue;
      }
      auto [lo, hi] = halves(box, dim);
      cut.push_back(std::move(lo));
      cut.push_back(std::move(hi));
    }
    if (cut.size() == first.size()) break;
    first = std::move(cut);
  }
  std::vector<Interval> queue = std::move(first);
  // Whether alpha's tuning pays is judged on the samples of all parts (as one search would).
  SharedSamples samples;
  samples.sampled = alpha_sampled_;
  samples.only = alpha_only_;
  build_lazy_terms(model_);
  SplitOptions one = split_;
  one.threads = 1;
  one.full_crown = nullptr;  // parallel() holds only where it did not pay

  std::atomic<bool> stop{false};
  std::mutex mutex;  // guards what follows
  std::condition_variable wake;
  size_t busy = 0;
  bool open = false;  // a part ended open for good (time, a box no split can narrow)
  std::optional<common::Error> failure;
  std::optional<Vec> point;
  bool by_bounds = false;
  int64_t boxes = 0, untuned = 0;
  auto work = [&]() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return stop || !queue.empty() || busy == 0; });
      if (stop || queue.empty() || out_of_time()) return;
      SpecCase c = case_;
      c.box = std::move(queue.back());
      queue.pop_back();
      ++busy;
      one.max_boxes = std::min(split_.part_boxes, split_.max_boxes - boxes);
      const SplitOptions mine = one;
      lock.unlock();
      // Each part counts into its own report (BoundsReport is not shared between threads).
      BoundsReport report;
      Options options = options_;
      if (options.report != nullptr) options.report = &report;
      CaseSearch part(model_, c, options, mine, deadline_, nullptr);
      part.stop_ = &stop;
      part.shared_samples_ = &samples;
      common::Result<Verdict> v = part.start();
      if (v.ok() && *v == Verdict::kOpen) v = part.run();
      std::vector<Interval> left;
      if (v.ok() && *v == Verdict::kOpen && part.budget_spent_) left = part.left_open();
      lock.lock();
      if (options_.report != nullptr) options_.report->add(report);
      --busy;
      boxes += part.boxes();
      untuned += part.untuned();
      by_bounds = by_bounds || part.proved_by_bounds();
      if (!v.ok()) {
        if (!failure) failure = v.error();
        stop = true;
      } else if (*v == Verdict::kFalsified) {
        if (!point) point = part.counterexample();
        stop = true;
      } else if (*v == Verdict::kOpen) {
        if (left.empty() || boxes >= split_.max_boxes) {
          open = true;  // the other parts go on: one may hold a counterexample
        } else {
          for (Interval& box : left) queue.push_back(std::move(box));
        }
      }
      wake.notify_all();
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  boxes_ += boxes;
  untuned_ += untuned;
  proved_by_bounds_ = proved_by_bounds_ || by_bounds;
  if (failure) return *failure;
  if (point) {
    counterexample_ = std::move(*point);
    return Verdict::kFalsified;
  }
  return open || !queue.empty() || out_of_time() ? Verdict::kOpen : Verdict::kProved;
}

}  // namespace propdag::internal

// CaseSearch's input splitting in parts (SplitOptions::threads, and on one thread for ReLU-like
// networks): the case's box searched part by part, each part as a case of its own, the parts
// taken from one queue by one or several threads.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "propdag/case_search.h"
#include "propdag/crown.h"
#include "propdag/op.h"

namespace propdag::internal {
namespace {

// SplitOptions::part_boxes by default: ReLU-like networks' parts (three searches taking turns)
// hand their open boxes on sooner than smooth networks' (one search). --threads 2, alpha, alone:
// ACAS Xu 3_3 prop_2 / 1_1 prop_6 / 4_2 prop_2 31.2 / 31.1 / 18.5 s with parts of 20,000, 20.3
// / 22.9 / 13.1 s with 5,000, 13.9 / 13.9 / 8.5 s with 2,000 (49.6 / 35.9 / 29.8 s on one
// thread); lsnc quadrotor2d_state_3 (slimmed) 29.4 / 32.5 / 39.9 s (49.0 s on one).
constexpr int64_t kPartBoxes = 2000;
constexpr int64_t kSmoothPartBoxes = 20000;

// probe(): at most this long (and a twentieth of --timeout), and only where one round of its
// search (each candidate dimension's halves bounded) costs at most kProbeCost multiply-adds of
// full CROWN, about 0.1 s: ACAS Xu 3.3e7 (3.0e6 a bound), lsnc 1.8e5; not tllverifybench
// N=M=16 (1.8e8 a bound measured), linearizenn, cGAN.
constexpr double kProbeSeconds = 0.1;
constexpr double kProbeCost = 1e8;

// Builds every lazily built matrix of the model that the engine multiplies by (op.h:
// LinearTerm::sparse is not thread-safe on first use; a gather's is never used), so that the
// threads only read the model.
void build_lazy_terms(const Model& model) {
  for (int node = 0; node < model.dag().size(); ++node) {
    const auto* affine = dynamic_cast<const AffineOp*>(model.op(node));
    if (affine == nullptr) continue;
    for (const LinearTerm& t : affine->terms())
      if (!t.dense && !t.gather) t.sparse();
  }
}

}  // namespace

bool CaseSearch::parallel() const {
  // Parts are fresh searches of their regions, each with its own turns between dimension
  // ratios, which pays on ReLU-like networks even on one thread (ACAS Xu 3_3 prop_2 / 1_1 prop_6
  // / 4_2 prop_2, alpha: 49.6 / 35.9 / 29.8 s -> 24.6 / 19.7 / 14.8 s); smooth networks' one
  // search loses by restarting (lsnc quadrotor2d_state_3 49.0 -> 56.1 s), so they take parts on
  // several threads only.
  return (split_.threads > 1 || !smooth_) && small_model_ && searched_alone();
}

bool CaseSearch::searched_alone() const {
  return bounder_ == nullptr && integer_dims_.empty() && evaluator_ == nullptr && !full_pays() &&
         stop_ == nullptr;
}

void CaseSearch::start_workers() {
  if (split_.threads <= 1 || !searched_alone()) return;
  build_lazy_terms(model_);
  workers_ = std::make_unique<Workers>(split_.threads);
}

common::Result<std::vector<CaseSearch::Bounds>> CaseSearch::bound_on_workers(
    const std::vector<Interval>& boxes, const std::vector<const Bounds*>& from) {
  // Each box's choices first, in order, as bound() makes them one box at a time.
  struct Job {
    size_t box;
    bool tune;
  };
  std::vector<Job> jobs;
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  std::vector<size_t> second(boxes.size(), kNone);  // a sampled box's job bounding it both ways
  const bool alpha = options_.method == Method::kAlpha;
  for (size_t i = 0; i < boxes.size(); ++i) {
    if (!alpha || from[i] == nullptr) {
      jobs.push_back({i, alpha});
      continue;
    }
    const bool tune = alpha_pays();
    if (!tune) ++untuned_;
    jobs.push_back({i, tune});
    if (sample_now(tune)) second[i] = jobs.size(), jobs.push_back({i, !tune});
  }
  // Each worker counts into its own report (BoundsReport is not shared between threads).
  const auto n = static_cast<size_t>(workers_->size());
  std::vector<BoundsReport> reports(n);
  std::vector<Options> tuned(n, options_), untuned(n, untuned_options_);
  for (size_t w = 0; w < n && options_.report != nullptr; ++w)
    tuned[w].report = untuned[w].report = &reports[w];
  std::vector<std::optional<common::Result<Bounds>>> got(jobs.size());
  workers_->run(jobs.size(), [&](size_t j, int w) {
    const Job& job = jobs[j];
    const bool with = job.tune || !alpha;
    got[j] = compute(boxes[job.box], from[job.box], nullptr, job.tune,
                     with ? tuned[static_cast<size_t>(w)] : untuned[static_cast<size_t>(w)]);
  });
  boxes_ += static_cast<int64_t>(jobs.size());
  for (const BoundsReport& r : reports)
    if (options_.report != nullptr) options_.report->add(r);
  for (const auto& g : got)
    if (!g->ok()) return g->error();
  std::vector<Bounds> out;
  out.reserve(boxes.size());
  for (size_t j = 0; j < jobs.size(); ++j) {
    const size_t i = jobs[j].box;
    if (second[i] == j) continue;  // taken with the box's first
    Bounds b = std::move(**got[j]);
    if (second[i] != kNone) sampled(b, std::move(**got[second[i]]), jobs[j].tune);
    out.push_back(std::move(b));
  }
  return out;
}

common::Result<Verdict> CaseSearch::probe() {
  if (split_.max_boxes <= 1 || !whole_ || !small() || !small_model_ || relu_splits_ ||
      !searched_alone() || out_of_time() || split_.probe_boxes <= 0)
    return Verdict::kOpen;
  if (options_.method != Method::kIbp) {
    std::vector<double> rows;
    for (const Mat& c : objective_) rows.push_back(static_cast<double>(c.rows()));
    const double round = static_cast<double>(2 * free_dims_ + 1);
    if (full_crown_cost(model_, options_, rows) * round > kProbeCost) return Verdict::kOpen;
  }
  ASSIGN_OR_RETURN(std::vector<Eigen::Index> integer, find_integer_dims());
  if (!integer.empty()) return Verdict::kOpen;
  SplitOptions mine = split_;
  mine.max_boxes = std::min(split_.probe_boxes, split_.max_boxes - boxes_);  // of the budget
  if (mine.max_boxes <= 1) return Verdict::kOpen;
  mine.threads = 1;
  mine.full_crown = nullptr;
  double seconds = kProbeSeconds;
  if (split_.seconds > 0) seconds = std::min(seconds, split_.seconds / 20);
  mine.seconds = seconds;
  Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                               std::chrono::duration<double>(seconds));
  if (split_.seconds > 0) until = std::min(until, deadline_);
  const std::atomic<bool> never{false};
  CaseSearch part(model_, case_, options_, mine, until, nullptr);
  part.whole_ = whole_;
  part.stop_ = &never;  // one search of the box, not parts (searched_alone())
  part.shared_samples_ = &alpha_samples();
  ASSIGN_OR_RETURN(Verdict v, part.run());
  boxes_ += part.boxes();
  untuned_ += part.untuned();
  proved_by_bounds_ = proved_by_bounds_ || part.proved_by_bounds();
  if (v == Verdict::kFalsified) counterexample_ = part.counterexample();
  return v == Verdict::kProved || v == Verdict::kFalsified ? v : Verdict::kOpen;
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

common::Result<Verdict> CaseSearch::run_parallel(int64_t turn) {
  const auto threads = static_cast<size_t>(split_.threads);
  if (parallel_state_ == nullptr) {
    parallel_state_ = std::make_unique<ParallelState>();
    // The first part is the case's box: the search of one thread (clipping it, choosing its
    // splits) until it runs out of part_boxes, when what it left open is handed on. Cutting the
    // box up front along its steepest dimension instead made some parts far harder than the
    // whole (lsnc quadrotor2d_state_0's case Y_7 <= -3: 2,445 bound computations for the whole
    // box, one of its halves open after 130,000).
    parallel_state_->queue = {case_.box};
    parallel_state_->before = boxes_;
    build_lazy_terms(model_);
  }
  ParallelState& state = *parallel_state_;
  // Parts are taken while the turn and the budget last.
  const int64_t budget = split_.max_boxes - state.before;  // for all parts
  const int64_t limit = turn > 0 ? std::min(state.boxes + turn, budget) : budget;
  const int64_t part_boxes =
      split_.part_boxes > 0 ? split_.part_boxes : (smooth_ ? kSmoothPartBoxes : kPartBoxes);
  SplitOptions one = split_;
  one.threads = 1;
  one.full_crown = nullptr;  // parallel() holds only where it did not pay

  std::atomic<bool> stop{false};
  std::mutex mutex;  // guards what follows
  std::condition_variable wake;
  size_t busy = 0;
  std::optional<common::Error> failure;
  std::optional<Vec> point;
  bool by_bounds = false;
  int64_t boxes = 0, untuned = 0;  // this turn's
  auto work = [&]() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock,
                [&] { return stop || busy == 0 || (!state.queue.empty() && state.boxes < limit); });
      if (stop || state.queue.empty() || state.boxes >= limit || out_of_time()) return;
      SpecCase c = case_;
      c.box = std::move(state.queue.back());
      state.queue.pop_back();
      const bool first = state.first;
      state.first = false;
      ++busy;
      // A part given all that is left of the budget ends the case where it stops.
      const bool last = budget - state.boxes <= part_boxes;
      one.max_boxes = std::min(part_boxes, budget - state.boxes);
      const SplitOptions mine = one;
      lock.unlock();
      // Each part counts into its own report (BoundsReport is not shared between threads).
      BoundsReport report;
      Options options = options_;
      if (options.report != nullptr) options.report = &report;
      CaseSearch part(model_, c, options, mine, deadline_, nullptr);
      if (first) part.whole_ = whole_;
      part.stop_ = &stop;
      part.shared_samples_ = &samples_;  // alpha_pays() judged on all parts
      common::Result<Verdict> v = part.start();
      if (v.ok() && *v == Verdict::kOpen) v = part.run();
      std::vector<Interval> left;
      // A part's searches stopped by its budget (or at the end of a turn) cover every point of
      // it they have not proved; one stopped otherwise (time, a box no split narrows) is open.
      if (v.ok() && ((*v == Verdict::kOpen && part.budget_spent_) || *v == Verdict::kRoundOver))
        left = part.left_open();
      lock.lock();
      if (options_.report != nullptr) options_.report->add(report);
      --busy;
      boxes += part.boxes();
      state.boxes += part.boxes();
      untuned += part.untuned();
      by_bounds = by_bounds || part.proved_by_bounds();
      if (!v.ok()) {
        if (!failure) failure = v.error();
        stop = true;
      } else if (*v == Verdict::kFalsified) {
        if (!point) point = part.counterexample();
        stop = true;
      } else if (*v != Verdict::kProved) {
        if (left.empty() || last) {
          state.open = true;  // the other parts go on: one may hold a counterexample
        } else {
          for (Interval& box : left) state.queue.push_back(std::move(box));
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
  if (out_of_time() || state.boxes >= budget) {
    return state.queue.empty() && !state.open ? Verdict::kProved : Verdict::kOpen;
  }
  if (!state.queue.empty()) return Verdict::kRoundOver;  // the turn is over
  return state.open ? Verdict::kOpen : Verdict::kProved;
}

}  // namespace propdag::internal

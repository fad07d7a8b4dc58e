// Running independent jobs on a few threads while their results are taken in order.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace common {

/// Runs `work(i)` for every i in [0, n) on up to `jobs` threads and calls `done(i, result)` on the
/// calling thread in the order of i, each as soon as job i has finished (and every job before it
/// has been handed to `done`). At most `jobs` jobs run at once; with jobs <= 1 everything runs
/// on the calling thread, one job after the other. `work` must not throw: an exception leaving a
/// worker thread ends the process.
template <class Work, class Done>
void ordered_parallel(size_t n, size_t jobs, Work&& work, Done&& done) {
  using Out = std::invoke_result_t<Work&, size_t>;
  if (jobs <= 1 || n <= 1) {
    for (size_t i = 0; i < n; ++i) done(i, work(i));
    return;
  }
  std::vector<std::optional<Out>> results(n);
  std::mutex mu;
  std::condition_variable finished;
  size_t next = 0;
  auto worker = [&] {
    for (;;) {
      size_t i = 0;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (next == n) return;
        i = next++;
      }
      Out out = work(i);
      {
        std::lock_guard<std::mutex> lock(mu);
        results[i] = std::move(out);
      }
      finished.notify_all();
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 0; t < std::min(jobs, n); ++t) threads.emplace_back(worker);
  for (size_t i = 0; i < n; ++i) {
    std::unique_lock<std::mutex> lock(mu);
    finished.wait(lock, [&] { return results[i].has_value(); });
    Out out = std::move(*results[i]);
    results[i].reset();
    lock.unlock();
    done(i, std::move(out));
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace common

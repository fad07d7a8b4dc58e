// A fixed set of threads that run the jobs of one call beside the calling thread: the search of
// a smooth network's small input bounds each round's boxes on them (SplitOptions::threads).
// Not installed.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace propdag::internal {

class Workers {
 public:
  // `threads` in all, the caller's included (at least 1).
  explicit Workers(int threads);
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  int size() const { return static_cast<int>(threads_.size()) + 1; }
  // Runs job(i, worker) for every i in [0, count), each once, and returns when all are done.
  // `worker` in [0, size()) names the thread running it (0: the caller), which runs one job at
  // a time, so per-worker state needs no lock.
  void run(size_t count, const std::function<void(size_t, int)>& job);

 private:
  void loop(int worker);
  void take(int worker);  // jobs of the current call until none is left

  std::mutex mutex_;  // guards what follows, but next_
  std::condition_variable wake_, done_;
  const std::function<void(size_t, int)>* job_ = nullptr;
  size_t count_ = 0;
  int64_t call_ = 0;  // calls so far: a worker waits for the next
  int running_ = 0;   // worker threads still in the current call
  bool quit_ = false;
  std::atomic<size_t> next_{0};  // the next job to take
  std::vector<std::thread> threads_;
};

}  // namespace propdag::internal

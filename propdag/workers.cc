#include "propdag/workers.h"

namespace propdag::internal {

Workers::Workers(int threads) {
  for (int w = 1; w < threads; ++w) threads_.emplace_back([this, w] { loop(w); });
}

Workers::~Workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void Workers::run(size_t count, const std::function<void(size_t, int)>& job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    count_ = count;
    next_.store(0, std::memory_order_relaxed);
    running_ = static_cast<int>(threads_.size());
    ++call_;
  }
  wake_.notify_all();
  take(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return running_ == 0; });
  job_ = nullptr;
}

void Workers::take(int worker) {
  for (size_t i = next_.fetch_add(1, std::memory_order_relaxed); i < count_;
       i = next_.fetch_add(1, std::memory_order_relaxed))
    (*job_)(i, worker);
}

void Workers::loop(int worker) {
  int64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return quit_ || call_ != seen; });
    if (quit_) return;
    seen = call_;
    lock.unlock();
    take(worker);
    lock.lock();
    if (--running_ == 0) done_.notify_one();
  }
}

}  // namespace propdag::internal

#include "common/ordered_parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

namespace common {
namespace {

// Later jobs finish first (job i sleeps longer the smaller i is), yet `done` sees them in order,
// on the calling thread, each once, with its own result.
TEST(OrderedParallel, HandsResultsOverInOrderOnTheCallingThread) {
  const size_t n = 12;
  std::vector<size_t> seen;
  std::vector<std::thread::id> done_threads;
  ordered_parallel(
      n, 3,
      [&](size_t i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2 * (n - i)));
        return i * i;
      },
      [&](size_t i, size_t square) {
        EXPECT_EQ(square, i * i);
        seen.push_back(i);
        done_threads.push_back(std::this_thread::get_id());
      });
  std::vector<size_t> want(n);
  for (size_t i = 0; i < n; ++i) want[i] = i;
  EXPECT_EQ(seen, want);
  for (std::thread::id id : done_threads) EXPECT_EQ(id, std::this_thread::get_id());
}

// No more than `jobs` jobs run at once, and with several jobs more than one does.
TEST(OrderedParallel, RunsAtMostJobsAtOnce) {
  std::atomic<int> running{0}, most{0};
  ordered_parallel(
      16, 2,
      [&](size_t) {
        const int now = ++running;
        for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        --running;
        return 0;
      },
      [](size_t, int) {});
  EXPECT_EQ(most.load(), 2);
}

// jobs <= 1: every job on the calling thread, each handed over before the next starts.
TEST(OrderedParallel, OneJobRunsInlineOneAfterTheOther) {
  std::vector<int> events;
  const std::thread::id caller = std::this_thread::get_id();
  ordered_parallel(
      3, 1,
      [&](size_t i) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
        events.push_back(static_cast<int>(i));
        return static_cast<int>(i);
      },
      [&](size_t, int r) { events.push_back(100 + r); });
  EXPECT_EQ(events, (std::vector<int>{0, 100, 1, 101, 2, 102}));
}

}  // namespace
}  // namespace common

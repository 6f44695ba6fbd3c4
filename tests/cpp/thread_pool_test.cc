// ThreadPool: every index covered exactly once, concurrent and nested callers, exceptions, and
// the parallel GEMM split against the serial product.
#include "core/runtime_context_internals.h"
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "kernels/math/linalg_util.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

void ExpectEachIndexOnce(ThreadPool* pool, int64_t n, int64_t max_tasks) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::atomic<int> ranges{0};
  const auto fn = [&](int64_t begin, int64_t end) {
    ASSERT_LE(0, begin);
    ASSERT_LT(begin, end);
    ASSERT_LE(end, n);
    ranges.fetch_add(1);
    for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
  };
  if (pool != nullptr) {
    pool->ParallelFor(n, fn, max_tasks);
  } else {
    ParallelFor(nullptr, n, 1, fn);
  }
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "index " << i;
  if (n > 0 && max_tasks > 0) {
    EXPECT_LE(ranges.load(), max_tasks);
  }
}

TEST(ThreadPool, CoversEveryIndexOnce) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.num_threads(), 3);
  for (int64_t n : {0, 1, 2, 3, 7, 100, 1001}) {
    for (int64_t tasks : {0, 1, 2, 5, 64}) ExpectEachIndexOnce(&pool, n, tasks);
  }
  ExpectEachIndexOnce(nullptr, 17, 0);
}

TEST(ThreadPool, BalancedSplitCoversEveryIndexOnceInMoreRangesThanThreads) {
  ThreadPool pool(2);
  for (int64_t n : {0, 1, 5, 8, 9, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::atomic<int> ranges{0};
    ParallelForBalanced(&pool, n, 1, [&](int64_t begin, int64_t end) {
      ranges.fetch_add(1);
      for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "index " << i;
    EXPECT_EQ(ranges.load(), std::clamp<int64_t>(n, n > 0 ? 1 : 0, 2 * kBalancedRangesPerThread)) << "n " << n;
  }
  // A minimum task size caps the split; one thread runs inline.
  std::atomic<int> ranges{0};
  ParallelForBalanced(&pool, 100, 40, [&](int64_t, int64_t) { ranges.fetch_add(1); });
  EXPECT_EQ(ranges.load(), 2);
  ThreadPool single(1);
  ranges = 0;
  ParallelForBalanced(&single, 100, 1, [&](int64_t, int64_t) { ranges.fetch_add(1); });
  EXPECT_EQ(ranges.load(), 1);
}

// Units are claimed one at a time: while one slot is held up on a unit, the other slot runs every
// remaining unit (with an even split made up front, half of them would wait behind the slow one
// and this test would time out). Every unit runs once, and a slot never runs two units at once.
TEST(ThreadPool, SlotsClaimUnitsSoASlowSlotDoesNotHoldTheOthersBack) {
  ThreadPool pool(2);
  constexpr int64_t kUnits = 40;
  std::vector<std::atomic<int>> hits(kUnits);
  std::atomic<int> busy[2] = {0, 0};
  std::atomic<int64_t> done{0};
  std::atomic<bool> overlapped{false};
  std::atomic<bool> timed_out{false};
  ParallelForSlots(&pool, kUnits, 2, [&](int64_t unit, int64_t slot) {
    ASSERT_LT(slot, 2);
    if (busy[slot].fetch_add(1) != 0) overlapped = true;
    if (unit == 0) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (done.load() < kUnits - 1) {
        if (std::chrono::steady_clock::now() > deadline) {
          timed_out = true;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    hits[static_cast<size_t>(unit)].fetch_add(1);
    done.fetch_add(1);
    busy[slot].fetch_sub(1);
  });
  EXPECT_FALSE(timed_out.load()) << "the other slot did not take the units the held-up slot left";
  EXPECT_FALSE(overlapped.load());
  for (int64_t u = 0; u < kUnits; ++u) EXPECT_EQ(hits[static_cast<size_t>(u)].load(), 1) << "unit " << u;
}

TEST(ThreadPool, ContiguousSlotsRunEachUnitOnceInTheSlotItWasDealtTo) {
  ThreadPool pool(2);
  for (const int64_t units : {1, 2, 7, 40}) {
    for (const int64_t slots : {1, 2, 3}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(units));
      std::vector<std::atomic<int64_t>> slot_of(static_cast<size_t>(units));
      std::atomic<int64_t> last[3] = {-1, -1, -1};
      std::atomic<bool> out_of_order{false};
      ParallelForContiguousSlots(&pool, units, slots, [&](int64_t unit, int64_t slot) {
        ASSERT_LT(slot, slots);
        hits[static_cast<size_t>(unit)].fetch_add(1);
        slot_of[static_cast<size_t>(unit)] = slot;
        // A slot's units run one after another, in order.
        if (last[slot].exchange(unit) >= unit) out_of_order = true;
      });
      EXPECT_FALSE(out_of_order.load());
      const int64_t tasks = std::min(slots, units);
      for (int64_t u = 0; u < units; ++u) {
        EXPECT_EQ(hits[static_cast<size_t>(u)].load(), 1) << "unit " << u;
        const int64_t t = slot_of[static_cast<size_t>(u)].load();
        EXPECT_TRUE(units * t / tasks <= u && u < units * (t + 1) / tasks)
            << "unit " << u << " of " << units << " ran in slot " << t << " of " << tasks;
      }
    }
  }
}

TEST(ThreadPool, SingleThreadPoolRunsInline) {
  ThreadPool pool(1);
  const std::thread::id caller = std::this_thread::get_id();
  pool.ParallelFor(10, [&](int64_t, int64_t) { EXPECT_EQ(std::this_thread::get_id(), caller); }, 4);
  ExpectEachIndexOnce(&pool, 10, 4);
}

TEST(ThreadPool, UsesWorkerThreads) {
  ThreadPool pool(2);
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  // Two tasks that wait for each other can only finish if a worker runs one of them.
  pool.ParallelFor(2, [&](int64_t, int64_t) {
    inside.fetch_add(1);
    for (int spin = 0; spin < 100000000 && inside.load() < 2; ++spin) std::this_thread::yield();
    overlapped = inside.load() == 2;
  }, 2);
  EXPECT_TRUE(overlapped.load());
}

TEST(ThreadPool, ConcurrentCallersShareThePool) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  // More callers than the pool has slots for posted regions: the others run their own ranges.
  for (int c = 0; c < 12; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 200; ++round) {
        const int64_t n = 50 + (c * 37 + round) % 300;
        std::atomic<int64_t> sum{0};
        pool.ParallelFor(n, [&](int64_t begin, int64_t end) {
          int64_t local = 0;
          for (int64_t i = begin; i < end; ++i) local += i;
          sum.fetch_add(local);
        });
        if (sum.load() != n * (n - 1) / 2) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ThreadPool, ShortRegionsBackToBackEachCoverTheirRangesOnce) {
  // Regions far shorter than a worker's way into them: workers join regions whose ranges are
  // already claimed or whose caller is about to return, and must neither run a range twice nor
  // touch a region after its caller returned (its job lives on the caller's stack).
  ThreadPool pool(3);
  int64_t wrong = 0;
  for (int round = 0; round < 20000; ++round) {
    const int64_t n = 1 + round % 7;
    std::vector<int> hits(static_cast<size_t>(n), 0);
    pool.ParallelFor(n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
    }, n);
    wrong += std::count_if(hits.begin(), hits.end(), [](int h) { return h != 1; });
  }
  EXPECT_EQ(wrong, 0);
}

TEST(ThreadPool, ForkedChildRunsRegionsOnItsOwnThread) {
  ThreadPool pool(2);
  pool.ParallelFor(2, [](int64_t, int64_t) {}, 2);  // the worker has started and polls
  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    // The worker did not survive the fork: every range must run here, and the pool's
    // destructor must not wait for it.
    std::atomic<int64_t> total{0};
    const std::thread::id me = std::this_thread::get_id();
    bool elsewhere = false;
    for (int round = 0; round < 100; ++round) {
      pool.ParallelFor(64, [&](int64_t begin, int64_t end) {
        if (std::this_thread::get_id() != me) elsewhere = true;
        total.fetch_add(end - begin);
      }, 8);
    }
    _exit(total.load() == 6400 && !elsewhere ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  ExpectEachIndexOnce(&pool, 100, 0);  // the parent's workers are untouched
}

TEST(ThreadPool, NestedCallsFinish) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  pool.ParallelFor(8, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      pool.ParallelFor(100, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
    }
  }, 8);
  EXPECT_EQ(total.load(), 800);
}

TEST(ThreadPool, FirstExceptionIsRethrownAfterAllRangesFinish) {
  ThreadPool pool(3);
  std::atomic<int> finished{0};
  EXPECT_THROW(pool.ParallelFor(6, [&](int64_t begin, int64_t) {
    finished.fetch_add(1);
    if (begin % 2 == 1) throw std::runtime_error("range failed");
  }, 6), std::runtime_error);
  EXPECT_EQ(finished.load(), 6);
  ExpectEachIndexOnce(&pool, 100, 0);  // still usable
}

TEST(ThreadPool, ContextsInheritThePoolInChildrenAndCopies) {
  ThreadPool pool(2);
  RuntimeContext rt = testing::MakeContext();
  EXPECT_EQ(rt.thread_pool(), nullptr);
  RuntimeContextInternals::SetThreadPool(rt, &pool);
  for (ChildContextKind kind : testing::kAllChildKinds) {
    EXPECT_EQ(rt.CreateChild(kind).thread_pool(), &pool) << static_cast<int>(kind);
  }
  const RuntimeContext copy = rt;
  EXPECT_EQ(copy.thread_pool(), &pool);
}

TEST(ThreadPool, ParallelGemmMatchesSerial) {
  ThreadPool pool(3);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  struct Case { bool ta, tb; int64_t m, n, k; };
  for (const Case c : {Case{false, false, 7, 300, 90}, Case{false, true, 300, 9, 90}, Case{true, false, 1, 777, 200},
                       Case{true, true, 260, 250, 33}, Case{false, false, 129, 3, 500}}) {
    std::vector<float> a(static_cast<size_t>(c.m * c.k)), b(static_cast<size_t>(c.k * c.n));
    for (float& v : a) v = dist(rng);
    for (float& v : b) v = dist(rng);
    const int64_t lda = c.ta ? c.m : c.k;
    const int64_t ldb = c.tb ? c.k : c.n;
    std::vector<float> serial(static_cast<size_t>(c.m * c.n), 0.5f), parallel = serial;
    Gemm<float>(c.ta, c.tb, c.m, c.n, c.k, 0.75, a.data(), lda, b.data(), ldb, 0.5, serial.data(), c.n);
    Gemm<float>(c.ta, c.tb, c.m, c.n, c.k, 0.75, a.data(), lda, b.data(), ldb, 0.5, parallel.data(), c.n, &pool);
    for (size_t i = 0; i < serial.size(); ++i) ASSERT_NEAR(parallel[i], serial[i], 1e-4) << "m" << c.m << " n" << c.n;
  }
}

}  // namespace
}  // namespace onnx_light::runtime

#pragma once
// The intra-op thread pool kernels split work over with ParallelFor. The calling thread always
// takes part, so a pool of N threads starts N - 1 workers. Idle workers poll for about 2 ms
// before blocking, so back-to-back regions and runs do not pay a wake-up each.
//
// A pool either owns its workers (the process-wide pool, or one a host makes with
// SharedThreadPool) or is a session's view of such a pool: a view splits each region into its own
// number of ranges but starts no thread, and runs them on the workers of the pool it shares.
//
// Thread safety: ParallelFor may be called from any number of threads at once (sessions are run
// concurrently from several threads, and several sessions share one pool) and from inside a
// ParallelFor task. Each call posts its region in one of kPostedSlots slots that idle workers
// poll, without a lock; when every slot is taken, a call runs its ranges on its own thread.
// Construction and destruction are not concurrent with calls.

#include <absl/functional/function_ref.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace onnx_light::runtime {

class ThreadPool {
 public:
  /// A pool of `num_threads` threads in total (the caller included); at least 1. Throws
  /// Error(kFailedPrecondition) when the system refuses a thread, after joining those started.
  explicit ThreadPool(int num_threads);
  /// A view of `workers` (a pool that owns its threads, kept alive by the view) that splits each
  /// region into `num_threads` ranges (at least 1); it starts no thread.
  ThreadPool(std::shared_ptr<ThreadPool> workers, int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Ranges a region is split into by default (for an owner: its workers and the caller).
  int num_threads() const noexcept { return num_threads_; }
  /// Threads the pool's work runs on at most at once: the owner's workers and one caller.
  int thread_budget() const noexcept { return base_ ? base_->thread_budget() : static_cast<int>(workers_.size()) + 1; }

  /// Calls fn(begin, end) over consecutive ranges covering [0, n), in at most `max_tasks`
  /// ranges (0: one per thread), and returns when all have finished. The first exception a
  /// range throws is rethrown here after the others have finished.
  void ParallelFor(int64_t n, absl::FunctionRef<void(int64_t, int64_t)> fn, int64_t max_tasks = 0);

 private:
  struct Job;
  // Regions posted at once; a further concurrent call runs its ranges on its caller.
  static constexpr int kPostedSlots = 8;
  // What a worker is reading: a caller does not return while a worker's hazard names its job.
  struct alignas(64) Hazard {
    std::atomic<Job*> job{nullptr};
  };

  void WorkerLoop(Hazard& hazard);
  int FindPosted() const noexcept;  // a slot holding a region, or -1
  void Unpost(Job& job) noexcept;
  void RunTasks(Job& job) noexcept;
  void WaitForWorkersToLeave(const Job& job) const noexcept;
  void StopWorkers() noexcept;

  alignas(64) std::array<std::atomic<Job*>, kPostedSlots> posted_{};
  alignas(64) std::atomic<uint32_t> wake_epoch_{0};  // bumped, and waited on, to wake sleeping workers
  std::atomic<int> sleeping_{0};
  std::atomic<bool> stopping_{false};
  std::unique_ptr<Hazard[]> hazards_;  // one per worker
  std::vector<std::thread> workers_;
  std::shared_ptr<ThreadPool> base_;  // set for a view: the pool whose workers run its ranges
  int num_threads_ = 1;
  uint64_t fork_generation_ = 0;  // a forked child (another generation) has none of workers_
};

/// Runs fn over [0, n) on `pool`, or inline when `pool` is null or the range holds fewer than
/// two tasks of at least `min_per_task` items.
inline void ParallelFor(ThreadPool* pool, int64_t n, int64_t min_per_task,
                        absl::FunctionRef<void(int64_t, int64_t)> fn) {
  const int64_t tasks = pool == nullptr ? 1 : std::min<int64_t>(pool->num_threads(), n / std::max<int64_t>(min_per_task, 1));
  if (tasks <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  pool->ParallelFor(n, fn, tasks);
}

/// ParallelFor for ranges that are cheap to start and independent of each other: split into up
/// to kBalancedRangesPerThread ranges per thread (each of at least `min_per_task` items), which
/// the threads claim one at a time. A thread that starts late or runs slower (a worker still
/// waking up, a vCPU the host lends elsewhere) then takes fewer ranges, where an even split into
/// one range per thread would make every region wait for it.
inline constexpr int64_t kBalancedRangesPerThread = 4;
inline void ParallelForBalanced(ThreadPool* pool, int64_t n, int64_t min_per_task,
                                absl::FunctionRef<void(int64_t, int64_t)> fn) {
  const int64_t threads = pool == nullptr ? 1 : pool->num_threads();
  const int64_t tasks = std::min<int64_t>(threads * kBalancedRangesPerThread, n / std::max<int64_t>(min_per_task, 1));
  if (threads <= 1 || tasks <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  pool->ParallelFor(n, fn, tasks);
}

/// Tasks ParallelForSlots may run at once for `units` items: per-task scratch is sized by this.
inline int64_t ParallelSlots(const ThreadPool* pool, int64_t units) {
  return pool == nullptr ? 1 : std::clamp<int64_t>(units, 1, pool->num_threads());
}

/// Calls fn(unit, slot) for every unit in [0, units), spread over at most `slots` tasks
/// (ParallelSlots); the units of one slot run one after another on one thread, so scratch
/// indexed by slot needs no locking. Each task claims the next unclaimed unit until none is
/// left, so which slot runs which unit varies from run to run: fn must not carry anything from
/// one unit to the next through its slot's scratch.
inline void ParallelForSlots(ThreadPool* pool, int64_t units, int64_t slots,
                             absl::FunctionRef<void(int64_t, int64_t)> fn) {
  const int64_t tasks = std::clamp<int64_t>(slots, 1, std::max<int64_t>(units, 1));
  if (tasks <= 1) {
    for (int64_t u = 0; u < units; ++u) fn(u, 0);
    return;
  }
  std::atomic<int64_t> next{0};
  ParallelFor(pool, tasks, 1, [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      for (int64_t u = next.fetch_add(1, std::memory_order_relaxed); u < units;
           u = next.fetch_add(1, std::memory_order_relaxed)) {
        fn(u, t);
      }
    }
  });
}

/// ParallelForSlots with the units dealt out in advance: slot t runs units [units * t / slots,
/// units * (t + 1) / slots), one after another. The calling thread normally takes slot 0, so
/// consecutive regions over the same units (the channels of one layer, then of the next) leave
/// each thread's share of the data in its own cache, and no unit pays for an atomic claim; a
/// thread that starts late holds up its region instead of handing its units over. Measured on
/// the depthwise layers of mobilenet_v3 and efficientnet_b0 at two threads (docs/performance.md).
inline void ParallelForContiguousSlots(ThreadPool* pool, int64_t units, int64_t slots,
                                       absl::FunctionRef<void(int64_t, int64_t)> fn) {
  const int64_t tasks = std::clamp<int64_t>(slots, 1, std::max<int64_t>(units, 1));
  if (tasks <= 1) {
    for (int64_t u = 0; u < units; ++u) fn(u, 0);
    return;
  }
  ParallelFor(pool, tasks, 1, [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      for (int64_t u = units * t / tasks; u < units * (t + 1) / tasks; ++u) fn(u, t);
    }
  });
}

}  // namespace onnx_light::runtime

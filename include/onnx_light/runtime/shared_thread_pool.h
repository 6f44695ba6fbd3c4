#pragma once
// SharedThreadPool: worker threads that sessions share, so a process runs as many intra-op
// threads as its budget allows however many sessions and PersistentValueStates it builds
// (docs/scaling.md). Every session uses the process-wide pool unless its options name another.

#include <memory>

#include "onnx_light/runtime/export.h"

namespace onnx_light::runtime {

class ThreadPool;

/// Ownership: sessions built with a pool share ownership of it; its threads stop and are joined
/// when the last owner lets go (the process-wide pool lives until the process exits).
///
/// Threading: immutable after construction; any number of sessions may run regions on one pool
/// at once. Each region is posted where idle workers look for work (up to eight regions at a
/// time); a run whose region finds no free place, or the workers busy elsewhere, does its ranges
/// on its own thread, so no run waits for another to finish.
class ONNX_LIGHT_API SharedThreadPool {
 public:
  /// A pool of `num_threads` threads in total, 1 to kMaxNumThreads: it starts num_threads - 1
  /// workers, since the thread that runs a session always takes part. Throws
  /// Error(kInvalidArgument) out of range, Error(kFailedPrecondition) when the system refuses a
  /// thread (after joining those started).
  explicit SharedThreadPool(int num_threads);
  ~SharedThreadPool();
  SharedThreadPool(const SharedThreadPool&) = delete;
  SharedThreadPool& operator=(const SharedThreadPool&) = delete;

  /// The budget: workers started plus the calling thread.
  int num_threads() const noexcept;

  /// The process-wide pool, started on first use with ProcessThreadBudget() threads.
  /// Thread-safe.
  static std::shared_ptr<SharedThreadPool> Process();

 private:
  friend class RuntimeSession;
  std::shared_ptr<ThreadPool> pool_;
};

/// Sets the process-wide pool's thread budget (1 to kMaxNumThreads; 0: one per core). Effective
/// only before the pool is first used (the first session built without a pool of its own):
/// afterwards a different value throws Error(kFailedPrecondition), since a running pool does
/// not change size. Thread-safe.
ONNX_LIGHT_API void SetProcessThreadBudget(int num_threads);

/// The process-wide pool's thread budget: the value set, or one per core
/// (std::thread::hardware_concurrency, at most kMaxNumThreads). Thread-safe.
ONNX_LIGHT_API int ProcessThreadBudget();

}  // namespace onnx_light::runtime

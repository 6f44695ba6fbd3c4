#include "onnx_light/runtime/shared_thread_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <thread>

#include "core/thread_pool.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/runtime_session.h"

namespace onnx_light::runtime {

namespace {

void CheckThreads(const char* what, int num_threads, int low) {
  if (num_threads < low || num_threads > kMaxNumThreads) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{} must be in [{}, {}], got {}", what, low, kMaxNumThreads, num_threads));
  }
}

int CoreCount() {
  return static_cast<int>(
      std::clamp(std::thread::hardware_concurrency(), 1u, static_cast<unsigned>(kMaxNumThreads)));
}

struct ProcessPool {
  std::mutex mutex;
  int budget = 0;  // 0: one per core
  std::shared_ptr<SharedThreadPool> pool;
};

// Never destroyed: sessions that outlive static destruction (a host's globals) keep their own
// reference, and the pool's threads are joined when the last one goes.
ProcessPool& ProcessPoolState() {
  static ProcessPool* process = new ProcessPool;
  return *process;
}

}  // namespace

SharedThreadPool::SharedThreadPool(int num_threads) {
  CheckThreads("SharedThreadPool num_threads", num_threads, 1);
  pool_ = std::make_shared<ThreadPool>(num_threads);
}

SharedThreadPool::~SharedThreadPool() = default;

int SharedThreadPool::num_threads() const noexcept { return pool_->thread_budget(); }

std::shared_ptr<SharedThreadPool> SharedThreadPool::Process() {
  ProcessPool& process = ProcessPoolState();
  std::lock_guard lock(process.mutex);
  if (!process.pool) {
    process.pool = std::make_shared<SharedThreadPool>(process.budget > 0 ? process.budget : CoreCount());
  }
  return process.pool;
}

void SetProcessThreadBudget(int num_threads) {
  CheckThreads("the process thread budget", num_threads, 0);
  ProcessPool& process = ProcessPoolState();
  std::lock_guard lock(process.mutex);
  const int wanted = num_threads > 0 ? num_threads : CoreCount();
  if (process.pool) {
    if (process.pool->num_threads() == wanted) return;
    throw Error(ErrorCode::kFailedPrecondition,
                fmt::format("the process thread budget is already {} (its pool is running since the "
                            "first session was built); it can be set to {} only before that",
                            process.pool->num_threads(), wanted));
  }
  process.budget = wanted;
}

int ProcessThreadBudget() {
  ProcessPool& process = ProcessPoolState();
  std::lock_guard lock(process.mutex);
  if (process.pool) return process.pool->num_threads();
  return process.budget > 0 ? process.budget : CoreCount();
}

}  // namespace onnx_light::runtime

#include "core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <system_error>

#include <unistd.h>

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

// One ParallelFor call: `tasks` ranges handed out through `next`; the caller waits on `done`.
struct ThreadPool::Job {
  Job(int64_t n, int64_t tasks, absl::FunctionRef<void(int64_t, int64_t)> fn) : n(n), tasks(tasks), fn(fn) {}

  const int64_t n;
  const int64_t tasks;
  absl::FunctionRef<void(int64_t, int64_t)> fn;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> finished{0};
  std::mutex mutex;
  std::condition_variable done;
  std::exception_ptr error;  // guarded by mutex
};

namespace {

// How long an idle worker polls for the next region before it blocks. Kernels issue regions
// back to back and runs follow each other in a serving loop, while waking a blocked thread on a
// loaded or virtualised machine costs tens of microseconds and may leave it queued behind the
// caller on the caller's core, where it cannot help until the scheduler moves it. Polling a
// little longer than one decoder step keeps workers on their own cores between runs; an idle
// pool costs at most this much CPU per worker after its last region.
constexpr auto kWorkerSpin = std::chrono::milliseconds(2);
// How long the caller polls for the other ranges of its region to finish before it blocks. As
// long as a worker's: a caller that blocked after 100 us paid a wake-up of its own vCPU on every
// region whose ranges finished unevenly, which made 2 threads slower than 1 on this VM
// (squeezenet1_1 8.8 ms against 7.4; 4.2 ms with the longer poll).
constexpr auto kCallerSpin = std::chrono::milliseconds(2);

// A spin-wait hint: on a core shared with another hardware thread (the two vCPUs of a cloud VM
// may be one core's siblings) the poll then leaves the core's units to the thread doing work.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls `ready` until it returns true or `budget` has passed; returns its last value.
template <typename Ready>
bool SpinUntil(std::chrono::microseconds budget, Ready&& ready) {
  const auto deadline = std::chrono::steady_clock::now() + budget;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    CpuRelax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= deadline) return false;
  }
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(num_threads, 1)), owner_pid_(getpid()) {
  const int workers = num_threads_ - 1;
  try {
    workers_.reserve(static_cast<size_t>(workers));
    for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  } catch (const std::system_error& e) {
    // A joinable std::thread destroyed during unwinding would call std::terminate: stop and
    // join the workers already started first.
    const size_t started = workers_.size();
    StopWorkers();
    throw Error(ErrorCode::kFailedPrecondition,
                fmt::format("could not start the thread pool's threads: {} of {} workers started "
                            "before the system refused another ({}); use fewer threads "
                            "(num_threads)",
                            started, workers, e.what()));
  }
}

ThreadPool::ThreadPool(std::shared_ptr<ThreadPool> workers, int num_threads)
    : base_(std::move(workers)), num_threads_(std::max(num_threads, 1)) {}

ThreadPool::~ThreadPool() { StopWorkers(); }

void ThreadPool::StopWorkers() noexcept {
  if (workers_.empty()) return;
  if (getpid() != owner_pid_) {
    // A forked child has the thread objects but not the threads: joining would wait forever.
    // Leak the handles instead (ParallelFor in the child already runs every range itself).
    for (std::thread& t : workers_) static_cast<void>(new std::thread(std::move(t)));
    workers_.clear();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    stopping_flag_.store(true, std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::RunTasks(Job& job) {
  for (int64_t t = job.next.fetch_add(1); t < job.tasks; t = job.next.fetch_add(1)) {
    const int64_t begin = job.n * t / job.tasks;
    const int64_t end = job.n * (t + 1) / job.tasks;
    try {
      job.fn(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(job.mutex);
      if (!job.error) job.error = std::current_exception();
    }
    if (job.finished.fetch_add(1) + 1 == job.tasks) {
      std::lock_guard<std::mutex> lock(job.mutex);  // pairs with the waiter's predicate check
      job.done.notify_all();
    }
  }
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    std::shared_ptr<Job> job;
    SpinUntil(kWorkerSpin, [this] { return stopping_flag_.load(std::memory_order_acquire) ||
                                           queued_.load(std::memory_order_acquire) > 0; });
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (queue_.empty() && !stopping_) wake_.wait(lock);
      if (queue_.empty()) {
        if (stopping_) return;
        // Woken after the caller had already run every range itself (a slow wake-up): poll
        // again rather than block at once, or this worker would stay one region behind.
        continue;
      }
      job = queue_.front();
      // A job whose ranges are all claimed leaves the queue; its claimers finish it.
      if (job->next.load() + 1 >= job->tasks) Pop(queue_.begin());
    }
    RunTasks(*job);
  }
}

void ThreadPool::ParallelFor(int64_t n, absl::FunctionRef<void(int64_t, int64_t)> fn, int64_t max_tasks) {
  if (n <= 0) return;
  if (base_) {
    base_->ParallelFor(n, fn, max_tasks > 0 ? max_tasks : num_threads_);
    return;
  }
  int64_t tasks = std::min<int64_t>(n, max_tasks > 0 ? max_tasks : num_threads());
  if (tasks <= 1 || workers_.empty()) {
    fn(0, n);
    return;
  }
  auto job = std::make_shared<Job>(n, tasks, fn);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(job);
    queued_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  RunTasks(*job);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = std::find(queue_.begin(), queue_.end(), job);
    if (it != queue_.end()) Pop(it);
  }
  const auto all_done = [&] { return job->finished.load(std::memory_order_acquire) == job->tasks; };
  if (!SpinUntil(kCallerSpin, all_done)) {
    std::unique_lock<std::mutex> lock(job->mutex);
    job->done.wait(lock, all_done);
  }
  std::lock_guard<std::mutex> lock(job->mutex);
  if (job->error) std::rethrow_exception(job->error);
}

void ThreadPool::Pop(std::deque<std::shared_ptr<Job>>::iterator it) {
  queue_.erase(it);
  queued_.fetch_sub(1, std::memory_order_release);
}

}  // namespace onnx_light::runtime

#include "core/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <system_error>

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

// One ParallelFor call, on its caller's stack: `tasks` ranges handed out through `next`. What a
// worker reads to join and what it writes as it goes share one cache line, so joining a region
// moves few lines between cores.
struct alignas(64) ThreadPool::Job {
  Job(int64_t n, int32_t tasks, absl::FunctionRef<void(int64_t, int64_t)> fn) : n(n), tasks(tasks), fn(fn) {}

  std::atomic<int32_t> next{0};
  std::atomic<int32_t> finished{0};  // waited on by a caller that stopped polling
  std::atomic<bool> caller_sleeps{false};
  std::atomic<bool> failed{false};
  int32_t slot = -1;  // the index in posted_ while some range is unclaimed
  const int64_t n;
  const int32_t tasks;
  absl::FunctionRef<void(int64_t, int64_t)> fn;
  std::exception_ptr error;  // written by the range that set `failed`
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

// Counts fork() children: a pool built in another generation has no running workers here.
std::atomic<uint64_t> fork_generation{0};

uint64_t CurrentForkGeneration() {
  static std::once_flag registered;
  std::call_once(registered, [] {
    pthread_atfork(nullptr, nullptr, [] { fork_generation.fetch_add(1, std::memory_order_relaxed); });
  });
  return fork_generation.load(std::memory_order_relaxed);
}

}  // namespace

ThreadPool::ThreadPool(int num_threads)
    : num_threads_(std::max(num_threads, 1)), fork_generation_(CurrentForkGeneration()) {
  const int workers = num_threads_ - 1;
  hazards_ = std::make_unique<Hazard[]>(static_cast<size_t>(std::max(workers, 0)));
  try {
    workers_.reserve(static_cast<size_t>(workers));
    for (int i = 0; i < workers; ++i) workers_.emplace_back([this, i] { WorkerLoop(hazards_[i]); });
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
  if (fork_generation.load(std::memory_order_relaxed) != fork_generation_) {
    // A forked child has the thread objects but not the threads: joining would wait forever.
    // Leak the handles instead (ParallelFor in the child already runs every range itself).
    for (std::thread& t : workers_) static_cast<void>(new std::thread(std::move(t)));
    workers_.clear();
    return;
  }
  stopping_.store(true, std::memory_order_seq_cst);
  wake_epoch_.fetch_add(1, std::memory_order_seq_cst);
  wake_epoch_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

int ThreadPool::FindPosted() const noexcept {
  for (size_t s = 0; s < posted_.size(); ++s) {
    if (posted_[s].load(std::memory_order_relaxed) != nullptr) return static_cast<int>(s);
  }
  return -1;
}

void ThreadPool::Unpost(Job& job) noexcept {
  Job* expected = &job;
  posted_[static_cast<size_t>(job.slot)].compare_exchange_strong(expected, nullptr, std::memory_order_seq_cst);
}

void ThreadPool::RunTasks(Job& job) noexcept {
  // A plain load first: workers polling a region whose ranges are all claimed must not take its
  // line away from the threads still writing to it.
  while (job.next.load(std::memory_order_relaxed) < job.tasks) {
    const int32_t t = job.next.fetch_add(1, std::memory_order_relaxed);
    if (t >= job.tasks) break;
    if (t == job.tasks - 1) Unpost(job);  // the last range is claimed: workers stop finding it
    const int64_t begin = job.n * t / job.tasks;
    const int64_t end = job.n * (t + 1) / job.tasks;
    try {
      job.fn(begin, end);
    } catch (...) {
      if (!job.failed.exchange(true, std::memory_order_relaxed)) job.error = std::current_exception();
    }
    if (job.finished.fetch_add(1, std::memory_order_seq_cst) + 1 == job.tasks &&
        job.caller_sleeps.load(std::memory_order_seq_cst)) {
      job.finished.notify_all();
    }
  }
}

void ThreadPool::WorkerLoop(Hazard& hazard) {
  for (;;) {
    int slot = -1;
    SpinUntil(kWorkerSpin, [&] {
      slot = FindPosted();
      return slot >= 0 || stopping_.load(std::memory_order_relaxed);
    });
    if (stopping_.load(std::memory_order_acquire)) return;
    if (slot < 0) {
      // Announce the sleep before looking once more, so a caller posting now either is seen
      // here or sees this worker asleep and wakes it.
      const uint32_t epoch = wake_epoch_.load(std::memory_order_seq_cst);
      sleeping_.fetch_add(1, std::memory_order_seq_cst);
      if (FindPosted() < 0 && !stopping_.load(std::memory_order_seq_cst)) wake_epoch_.wait(epoch);
      sleeping_.fetch_sub(1, std::memory_order_relaxed);
      continue;
    }
    // The job lives on its caller's stack: name it in the hazard, then check that it is still
    // posted, so its caller either sees the hazard and waits or has unposted it before this
    // worker touches it.
    Job* job = posted_[static_cast<size_t>(slot)].load(std::memory_order_acquire);
    if (job == nullptr) continue;
    hazard.job.store(job, std::memory_order_seq_cst);
    if (posted_[static_cast<size_t>(slot)].load(std::memory_order_seq_cst) == job) RunTasks(*job);
    hazard.job.store(nullptr, std::memory_order_release);
  }
}

void ThreadPool::WaitForWorkersToLeave(const Job& job) const noexcept {
  for (size_t w = 0; w < workers_.size(); ++w) {
    for (int i = 0; hazards_[w].job.load(std::memory_order_seq_cst) == &job; ++i) {
      // A worker between joining and leaving: a few instructions, unless it was preempted.
      if (i < 4096) {
        CpuRelax();
      } else {
        std::this_thread::yield();
      }
    }
  }
}

void ThreadPool::ParallelFor(int64_t n, absl::FunctionRef<void(int64_t, int64_t)> fn, int64_t max_tasks) {
  if (n <= 0) return;
  if (base_) {
    base_->ParallelFor(n, fn, max_tasks > 0 ? max_tasks : num_threads_);
    return;
  }
  // Ranges counted in int32 with room to spare: threads that pass RunTasks' check together may
  // each add one past the last range.
  constexpr int64_t kMaxTasks = int64_t{1} << 30;
  const int64_t tasks = std::min<int64_t>({n, max_tasks > 0 ? max_tasks : num_threads(), kMaxTasks});
  if (tasks <= 1 || workers_.empty() || fork_generation.load(std::memory_order_relaxed) != fork_generation_) {
    fn(0, n);
    return;
  }
  Job job(n, static_cast<int32_t>(tasks), fn);
  bool posted = false;
  for (size_t s = 0; s < posted_.size() && !posted; ++s) {
    Job* empty = nullptr;
    job.slot = static_cast<int32_t>(s);  // read by whoever claims the last range, after the post
    posted = posted_[s].compare_exchange_strong(empty, &job, std::memory_order_seq_cst);
  }
  if (!posted) {
    // Every slot holds another caller's region, which keeps the workers busy anyway.
    fn(0, n);
    return;
  }
  if (sleeping_.load(std::memory_order_seq_cst) > 0) {
    wake_epoch_.fetch_add(1, std::memory_order_seq_cst);
    wake_epoch_.notify_all();
  }
  RunTasks(job);
  const auto all_done = [&] { return job.finished.load(std::memory_order_acquire) == job.tasks; };
  if (!SpinUntil(kCallerSpin, all_done)) {
    job.caller_sleeps.store(true, std::memory_order_seq_cst);
    for (int32_t done = job.finished.load(std::memory_order_seq_cst); done != job.tasks;
         done = job.finished.load(std::memory_order_seq_cst)) {
      job.finished.wait(done);
    }
  }
  WaitForWorkersToLeave(job);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace onnx_light::runtime

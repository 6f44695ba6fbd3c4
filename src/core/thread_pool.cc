#include "core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>

namespace onnx_light::runtime {

// One ParallelFor call: `tasks` ranges handed out through `next`; the caller waits on `done`.
struct ThreadPool::Job {
  Job(int64_t n, int64_t tasks, absl::FunctionRef<void(int64_t, int64_t)> fn) : n(n), tasks(tasks), fn(fn) {}

  const int64_t n;
  const int64_t tasks;
  absl::FunctionRef<void(int64_t, int64_t)> fn;
  std::atomic<int64_t> next{0};
  std::mutex mutex;
  std::condition_variable done;
  int64_t finished = 0;  // guarded by mutex
  std::exception_ptr error;  // guarded by mutex
};

ThreadPool::ThreadPool(int num_threads) {
  const int workers = std::max(num_threads, 1) - 1;
  workers_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::RunTasks(Job& job) {
  for (int64_t t = job.next.fetch_add(1); t < job.tasks; t = job.next.fetch_add(1)) {
    const int64_t begin = job.n * t / job.tasks;
    const int64_t end = job.n * (t + 1) / job.tasks;
    std::exception_ptr error;
    try {
      job.fn(begin, end);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(job.mutex);
    if (error && !job.error) job.error = error;
    if (++job.finished == job.tasks) job.done.notify_all();
  }
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      job = queue_.front();
      // A job whose ranges are all claimed leaves the queue; its claimers finish it.
      if (job->next.load() + 1 >= job->tasks) queue_.pop_front();
    }
    RunTasks(*job);
  }
}

void ThreadPool::ParallelFor(int64_t n, absl::FunctionRef<void(int64_t, int64_t)> fn, int64_t max_tasks) {
  if (n <= 0) return;
  int64_t tasks = std::min<int64_t>(n, max_tasks > 0 ? max_tasks : num_threads());
  if (tasks <= 1 || workers_.empty()) {
    fn(0, n);
    return;
  }
  auto job = std::make_shared<Job>(n, tasks, fn);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(job);
  }
  wake_.notify_all();
  RunTasks(*job);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = std::find(queue_.begin(), queue_.end(), job);
    if (it != queue_.end()) queue_.erase(it);
  }
  std::unique_lock<std::mutex> lock(job->mutex);
  job->done.wait(lock, [&] { return job->finished == job->tasks; });
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace onnx_light::runtime

// RuntimeContext's run guard, stop requests and run timeout (see core/run_control.h).
#include "core/run_control.h"

#include <fmt/format.h>

#include <limits>
#include <string>

#include "core/runtime_context_internals.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/runtime_context.h"

namespace onnx_light::runtime {

namespace {

[[noreturn]] void ThrowBusy(std::string_view operation) {
  throw Error(ErrorCode::kFailedPrecondition,
              fmt::format("{}: the RuntimeContext is already running (on another thread, or "
                          "re-entered from inside a run); a context serves one run at a time, so "
                          "give each thread its own RuntimeContext",
                          operation));
}

std::string Where(const Node* node, std::string_view graph_name) {
  if (node != nullptr) return fmt::format("before node '{}' ({})", node->name, node->op_type);
  return fmt::format("at the start of graph '{}'", graph_name);
}

std::string SecondsText(int64_t ns) { return fmt::format("{:.9g} s", static_cast<double>(ns) * 1e-9); }

}  // namespace

void StopRunIfDue(RuntimeContext& rt, const Node* node, std::string_view graph_name) {
  if (RuntimeContextInternals::RunControlOf(rt).TryConsumeStop()) {
    throw Error(ErrorCode::kCancelled,
                fmt::format("run stopped by a stop request (RuntimeContext::RequestStop, Python "
                            "request_stop()) {}",
                            Where(node, graph_name)));
  }
  const int64_t deadline = RuntimeContextInternals::RunDeadlineNs(rt);
  if (deadline != 0 && SteadyNowNs() >= deadline) {
    throw Error(ErrorCode::kCancelled,
                fmt::format("run stopped: it exceeded the run timeout of {} (RuntimeContext::"
                            "set_run_timeout, Python run_timeout) {}",
                            SecondsText(RuntimeContextInternals::RunDeadlineTimeoutNs(rt)), Where(node, graph_name)));
  }
}

RuntimeContext::RunGuard::RunGuard(RuntimeContext& rt) : rt_(rt) {
  if (rt.busy_.held.exchange(true, std::memory_order_acquire)) ThrowBusy("run");
  // Read only once the context is ours: the run that held it writes them back as it leaves.
  saved_deadline_ns_ = rt.deadline_ns_;
  saved_deadline_timeout_ns_ = rt.deadline_timeout_ns_;
  RunControl& control = *rt.run_control_;
  control.EnterRun();
  if (control.stop_pending() && control.TryConsumeStop()) {
    // A request made while no run was in flight stops this one before it touches anything.
    control.LeaveRun();
    rt.busy_.held.store(false, std::memory_order_release);
    throw Error(ErrorCode::kCancelled,
                "run stopped by a stop request (RuntimeContext::RequestStop, Python "
                "request_stop()) made before the run started");
  }
  if (rt.run_timeout_ns_ > 0) {
    const int64_t now = SteadyNowNs();
    const int64_t deadline = rt.run_timeout_ns_ > std::numeric_limits<int64_t>::max() - now
                                 ? std::numeric_limits<int64_t>::max()
                                 : now + rt.run_timeout_ns_;
    if (rt.deadline_ns_ == 0 || deadline < rt.deadline_ns_) {
      rt.deadline_ns_ = deadline;
      rt.deadline_timeout_ns_ = rt.run_timeout_ns_;
    }
  }
}

RuntimeContext::RunGuard::~RunGuard() {
  rt_.deadline_ns_ = saved_deadline_ns_;
  rt_.deadline_timeout_ns_ = saved_deadline_timeout_ns_;
  rt_.run_control_->LeaveRun();
  rt_.busy_.held.store(false, std::memory_order_release);
}

void RuntimeContext::CheckNotRunning(std::string_view operation) const {
  if (running()) ThrowBusy(operation);
}

void RuntimeContext::RequestStop() noexcept { run_control_->RequestStop(); }

void RuntimeContext::set_run_timeout(std::chrono::nanoseconds timeout) {
  if (timeout.count() < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("run timeout must be >= 0 (0: none), got {} ns", timeout.count()));
  }
  run_timeout_ns_ = timeout.count();
}

}  // namespace onnx_light::runtime

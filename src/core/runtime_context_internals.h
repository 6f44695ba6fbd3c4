#pragma once
// RuntimeContextInternals: what the session, the executor and persistent state set on a
// RuntimeContext while they run it. Kept out of the public header so host code cannot move a
// context's dispatch position, thread pool, deadline or persistent sink.

#include <cstdint>

#include "onnx_light/runtime/runtime_context.h"

namespace onnx_light::runtime {

struct RuntimeContextInternals {
  /// The node being dispatched: installed around one KernelBase::Run.
  static void SetDispatchFrame(RuntimeContext& rt, DispatchFrame* frame) noexcept { rt.frame_ = frame; }
  static DispatchFrame* DispatchFrameOf(const RuntimeContext& rt) noexcept { return rt.frame_; }
  static void SetCurrentNodeIndex(RuntimeContext& rt, int64_t index) noexcept { rt.current_node_index_ = index; }
  static void SetThreadPool(RuntimeContext& rt, ThreadPool* pool) noexcept { rt.thread_pool_ = pool; }
  /// The run (and its session) whose events the context records: set around one session Run.
  static void SetRunIds(RuntimeContext& rt, uint64_t run_id, uint64_t session_id) noexcept {
    rt.run_id_ = run_id;
    rt.session_id_ = session_id;
  }
  static uint64_t RunIdOf(const RuntimeContext& rt) noexcept { return rt.run_id_; }
  static uint64_t SessionIdOf(const RuntimeContext& rt) noexcept { return rt.session_id_; }
  static void SetPersistentAppendSink(RuntimeContext& rt, PersistentAppendSink* sink) noexcept {
    rt.append_sink_ = sink;
  }
  /// The stop state shared with related contexts, and the deadline of the run holding the
  /// context (steady-clock nanoseconds, 0: none) with the timeout that set it.
  static RunControl& RunControlOf(const RuntimeContext& rt) noexcept { return *rt.run_control_; }
  static int64_t RunDeadlineNs(const RuntimeContext& rt) noexcept { return rt.deadline_ns_; }
  static int64_t RunDeadlineTimeoutNs(const RuntimeContext& rt) noexcept { return rt.deadline_timeout_ns_; }
};

}  // namespace onnx_light::runtime

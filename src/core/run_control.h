#pragma once
// RunControl: the stop state a RuntimeContext shares with its copies and children, and the check
// the executor makes before every node and at the start of every graph it runs.
//
// The fast path is one relaxed load of `word` (plus a clock read when a deadline is armed); the
// message is built only on the slow path, when the run really stops.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>

namespace onnx_light::runtime {

class RuntimeContext;
struct Node;

struct RunControl {
  static constexpr uint64_t kStopBit = 1;
  static constexpr uint64_t kOneRun = 2;

  // Bit 0: a stop was requested and no run has consumed it yet. Bits 1 and up: RunGuards alive in
  // the related contexts (runs in flight), so the last run to leave can drop a request no run
  // consumed instead of letting it stop an unrelated later run.
  std::atomic<uint64_t> word{0};

  void RequestStop() noexcept { word.fetch_or(kStopBit, std::memory_order_acq_rel); }
  void EnterRun() noexcept { word.fetch_add(kOneRun, std::memory_order_acq_rel); }
  void LeaveRun() noexcept {
    uint64_t old = word.load(std::memory_order_relaxed);
    uint64_t next;
    do {
      next = old - kOneRun;
      if (next < kOneRun) next = 0;  // the last run out drops an unconsumed request
    } while (!word.compare_exchange_weak(old, next, std::memory_order_acq_rel,
                                         std::memory_order_relaxed));
  }
  bool stop_pending() const noexcept {
    return (word.load(std::memory_order_relaxed) & kStopBit) != 0;
  }
  /// Clears a pending request; true when this caller cleared it (and so must stop).
  bool TryConsumeStop() noexcept {
    return (word.fetch_and(~kStopBit, std::memory_order_acq_rel) & kStopBit) != 0;
  }
};

inline int64_t SteadyNowNs() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The slow path of CheckRunStop: throws Error(kCancelled) when a stop request is pending (and
/// this run consumes it) or the deadline has passed; otherwise returns (another related run took
/// the request). `node` is the node about to run, or null at the start of graph `graph_name`.
void StopRunIfDue(RuntimeContext& rt, const Node* node, std::string_view graph_name);

/// The check made before every node and at the start of every graph run.
inline void CheckRunStop(RuntimeContext& rt, const RunControl& control, int64_t deadline_ns,
                         const Node* node, std::string_view graph_name) {
  if (control.stop_pending() || (deadline_ns != 0 && SteadyNowNs() >= deadline_ns)) [[unlikely]] {
    StopRunIfDue(rt, node, graph_name);
  }
}

}  // namespace onnx_light::runtime

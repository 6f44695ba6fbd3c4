#pragma once
// EventLog: the append-only list of RuntimeEvents shared by a root context and every context
// derived from it (copies, subgraph, function, feedback and half-precision scratch contexts).

#include <mutex>
#include <vector>

#include "onnx_light/runtime/export.h"
#include "onnx_light/runtime/runtime_event.h"

namespace onnx_light::runtime {

/// Threading: Append and Clear are serialised by an internal mutex, so children running on
/// different threads may record concurrently. entries() hands out the vector itself and requires
/// that nothing records or clears at the same time; Snapshot() copies under the lock.
class ONNX_LIGHT_API EventLog {
 public:
  void Append(RuntimeEvent event) {
    std::lock_guard lock(mutex_);
    entries_.push_back(std::move(event));  // allocation failures propagate to the recorder
  }
  void Clear() {
    std::lock_guard lock(mutex_);
    entries_.clear();
  }
  std::vector<RuntimeEvent> Snapshot() const {
    std::lock_guard lock(mutex_);
    return entries_;
  }
  const std::vector<RuntimeEvent>& entries() const noexcept { return entries_; }

 private:
  mutable std::mutex mutex_;
  std::vector<RuntimeEvent> entries_;
};

}  // namespace onnx_light::runtime

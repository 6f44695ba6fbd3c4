#pragma once
// KernelUsageRecorder: the names of the kernel implementations that actually ran, shared by a
// root context, its copies and its subgraph/function children.

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/export.h"

namespace onnx_light::runtime {

/// Threading: every method is thread-safe. While disabled, Record costs one relaxed atomic load.
/// Keeps the first `limit` names (duplicates included) and drops the rest until Clear().
class ONNX_LIGHT_API KernelUsageRecorder {
 public:
  explicit KernelUsageRecorder(size_t limit) : limit_(limit) {}

  bool enabled() const noexcept { return enabled_.load(std::memory_order_relaxed); }
  void set_enabled(bool enabled) noexcept { enabled_.store(enabled, std::memory_order_relaxed); }

  void Record(std::string_view name) {
    if (!enabled()) return;
    std::lock_guard lock(mutex_);
    if (names_.size() < limit_) names_.emplace_back(name);
  }
  /// An owned copy of the recorded names, in recording order.
  std::vector<std::string> Snapshot() const {
    std::lock_guard lock(mutex_);
    return names_;
  }
  void Clear() {
    std::lock_guard lock(mutex_);
    names_.clear();
  }

 private:
  const size_t limit_;
  std::atomic<bool> enabled_{false};
  mutable std::mutex mutex_;
  std::vector<std::string> names_;
};

}  // namespace onnx_light::runtime

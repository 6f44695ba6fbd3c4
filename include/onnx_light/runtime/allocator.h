#pragma once
// Memory for tensors. An Allocator hands out aligned blocks and tracks live and peak bytes; those
// counters are the `allocated_bytes` / `peak_bytes` reported in runtime events.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "onnx_light/runtime/export.h"

namespace onnx_light::runtime {

/// Abstract allocator. Implementations must be thread-safe: sessions running on several threads
/// share one allocator.
class ONNX_LIGHT_API Allocator {
 public:
  virtual ~Allocator() = default;

  /// Returns a block of at least `bytes` bytes aligned to 64 bytes. Throws std::bad_alloc.
  virtual void* Allocate(size_t bytes) = 0;
  /// Releases a block returned by Allocate with the same `bytes`.
  virtual void Free(void* block, size_t bytes) noexcept = 0;

  /// Bytes currently allocated and not yet freed.
  virtual int64_t live_bytes() const noexcept = 0;
  /// Largest value live_bytes() has reached since construction or the last ResetPeak().
  virtual int64_t peak_bytes() const noexcept = 0;
  /// Sets the peak to the current live bytes (to measure one run).
  virtual void ResetPeak() noexcept = 0;
};

/// Heap allocator with atomic live/peak tracking. Thread-safe.
///
/// Freed blocks are kept, keyed by size class, up to `max_cached_bytes` in total, and handed out
/// again: repeated runs of one model then allocate nothing from the system (fresh large blocks
/// would otherwise be mapped and page-faulted on every run). Below 64 KiB a class is the size
/// rounded up to 64 bytes and a request takes a block of its own class; from 64 KiB on there are
/// eight classes per power of two, so temporaries that grow slightly from run to run (over a
/// growing KV cache) still find a block, and a request takes the most recently freed block of
/// its class or of a larger one up to twice its size: that block's lines are the likeliest to be
/// in cache still, where a block of the request's own class may not have been touched since the
/// previous run. Cached blocks do not count as live bytes.
class ONNX_LIGHT_API CpuAllocator final : public Allocator {
 public:
  static constexpr size_t kDefaultMaxCachedBytes = size_t{256} << 20;

  explicit CpuAllocator(size_t max_cached_bytes = kDefaultMaxCachedBytes)
      : max_cached_bytes_(max_cached_bytes) {}
  ~CpuAllocator() override;
  CpuAllocator(const CpuAllocator&) = delete;
  CpuAllocator& operator=(const CpuAllocator&) = delete;

  void* Allocate(size_t bytes) override;
  void Free(void* block, size_t bytes) noexcept override;
  int64_t live_bytes() const noexcept override { return live_.load(std::memory_order_relaxed); }
  int64_t peak_bytes() const noexcept override { return peak_.load(std::memory_order_relaxed); }
  void ResetPeak() noexcept override { peak_.store(live_bytes(), std::memory_order_relaxed); }
  /// Bytes held in the cache of freed blocks.
  size_t cached_bytes() const;
  /// Returns every cached block to the system.
  void ReleaseCache() noexcept;

 private:
  void CountAllocation(size_t bytes) noexcept;

  struct CachedBlock {
    void* block;
    uint64_t freed;  // free_clock_ when it was freed
  };
  // The cached block to hand out for a request of `rounded` bytes, removed from the cache, and
  // its size class; null when none fits. cache_mutex_ held.
  void* TakeCached(size_t rounded, size_t* capacity);

  const size_t max_cached_bytes_;
  std::atomic<int64_t> live_{0};
  std::atomic<int64_t> peak_{0};
  mutable std::mutex cache_mutex_;
  std::unordered_map<size_t, std::vector<CachedBlock>> cache_;  // size class -> free blocks, oldest first
  std::unordered_map<void*, size_t> larger_class_;  // live blocks handed out from a larger class than asked
  uint64_t free_clock_ = 0;
  size_t cached_bytes_ = 0;
};

/// A fresh CpuAllocator. Each root RuntimeContext gets its own unless its options name one.
ONNX_LIGHT_API std::shared_ptr<Allocator> MakeCpuAllocator();

/// Allocates `bytes` from `allocator` and returns an owner that frees the block when the last
/// reference goes away. The owner keeps the allocator alive.
ONNX_LIGHT_API std::shared_ptr<void> AllocateBuffer(const std::shared_ptr<Allocator>& allocator, size_t bytes);

/// Whether `owner` was returned by AllocateBuffer: runtime memory, never a caller's, a model's or
/// a custom kernel's buffer. Cheap (no allocation, no lock).
ONNX_LIGHT_API bool IsAllocatorBuffer(const std::shared_ptr<void>& owner) noexcept;

}  // namespace onnx_light::runtime

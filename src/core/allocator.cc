#include "onnx_light/runtime/allocator.h"

#include <bit>
#include <cstdlib>
#include <limits>
#include <new>

namespace onnx_light::runtime {

namespace {
constexpr size_t kAlignment = 64;

constexpr size_t kSizeClassThreshold = size_t{64} << 10;

// The size a request is served (and cached) at. Blocks of 64 KiB and more come in eight size
// classes per power of two (at most 12.5% unused), so a temporary that grows a little from run to
// run (attention scores and key copies over a growing KV cache) finds the block the previous run
// freed instead of mapping, faulting in and unmapping fresh pages every time.
size_t RoundedSize(size_t bytes) {
  if (bytes < kSizeClassThreshold) {
    const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    return rounded == 0 ? kAlignment : rounded;
  }
  const size_t step = size_t{1} << (std::bit_width(bytes) - 4);
  if (bytes > std::numeric_limits<size_t>::max() - step) return bytes;  // aligned_alloc refuses it
  return (bytes + step - 1) / step * step;
}
}  // namespace

CpuAllocator::~CpuAllocator() { ReleaseCache(); }

void CpuAllocator::CountAllocation(size_t bytes) noexcept {
  const int64_t live = live_.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed) +
                       static_cast<int64_t>(bytes);
  int64_t peak = peak_.load(std::memory_order_relaxed);
  while (live > peak && !peak_.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

void* CpuAllocator::TakeCached(size_t rounded, size_t* capacity) {
  // Below the size classes only the request's own size; from them on, classes up to twice it.
  const size_t largest = rounded < kSizeClassThreshold || rounded > std::numeric_limits<size_t>::max() / 2
                             ? rounded
                             : 2 * rounded;
  std::vector<CachedBlock>* best = nullptr;
  size_t best_class = 0;
  for (size_t c = rounded; c <= largest;) {
    auto it = cache_.find(c);
    if (it != cache_.end() && !it->second.empty() &&
        (best == nullptr || it->second.back().freed > best->back().freed)) {
      best = &it->second;
      best_class = c;
    }
    const size_t next = RoundedSize(c + 1);
    if (next <= c) break;
    c = next;
  }
  if (best == nullptr) return nullptr;
  void* block = best->back().block;
  best->pop_back();
  cached_bytes_ -= best_class;
  *capacity = best_class;
  return block;
}

void* CpuAllocator::Allocate(size_t bytes) {
  const size_t rounded = RoundedSize(bytes);
  void* block = nullptr;
  if (max_cached_bytes_ > 0) {
    std::lock_guard lock(cache_mutex_);
    size_t capacity = 0;
    block = TakeCached(rounded, &capacity);
    if (block != nullptr && capacity != rounded) {
      try {
        larger_class_[block] = capacity;
      } catch (...) {  // no memory for the bookkeeping: put the block back, map a fresh one
        cache_[capacity].push_back({block, ++free_clock_});
        cached_bytes_ += capacity;
        block = nullptr;
      }
    }
  }
  if (block == nullptr) {
    block = std::aligned_alloc(kAlignment, rounded);
    if (block == nullptr) throw std::bad_alloc();
  }
  CountAllocation(bytes);
  return block;
}

void CpuAllocator::Free(void* block, size_t bytes) noexcept {
  if (block == nullptr) return;
  live_.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  size_t capacity = RoundedSize(bytes);
  if (max_cached_bytes_ > 0) {
    std::lock_guard lock(cache_mutex_);
    if (capacity >= kSizeClassThreshold) {
      const auto it = larger_class_.find(block);
      if (it != larger_class_.end()) {
        capacity = it->second;
        larger_class_.erase(it);
      }
    }
    if (capacity <= max_cached_bytes_ && cached_bytes_ + capacity <= max_cached_bytes_) {
      try {
        cache_[capacity].push_back({block, ++free_clock_});
        cached_bytes_ += capacity;
        return;
      } catch (...) {  // no memory for the bookkeeping: give the block back instead
      }
    }
  }
  std::free(block);
}

size_t CpuAllocator::cached_bytes() const {
  std::lock_guard lock(cache_mutex_);
  return cached_bytes_;
}

void CpuAllocator::ReleaseCache() noexcept {
  std::lock_guard lock(cache_mutex_);
  for (auto& [size, blocks] : cache_) {
    for (const CachedBlock& cached : blocks) std::free(cached.block);
  }
  cache_.clear();
  cached_bytes_ = 0;
}

std::shared_ptr<Allocator> MakeCpuAllocator() { return std::make_shared<CpuAllocator>(); }

namespace {
// A named deleter type, so IsAllocatorBuffer can recognise AllocateBuffer's owners.
struct BufferDeleter {
  std::shared_ptr<Allocator> allocator;
  size_t bytes;
  void operator()(void* p) const noexcept { allocator->Free(p, bytes); }
};
}  // namespace

std::shared_ptr<void> AllocateBuffer(const std::shared_ptr<Allocator>& allocator, size_t bytes) {
  void* block = allocator->Allocate(bytes);
  return std::shared_ptr<void>(block, BufferDeleter{allocator, bytes});
}

bool IsAllocatorBuffer(const std::shared_ptr<void>& owner) noexcept {
  return std::get_deleter<BufferDeleter>(owner) != nullptr;
}

}  // namespace onnx_light::runtime

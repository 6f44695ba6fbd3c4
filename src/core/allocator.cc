#include "onnx_light/runtime/allocator.h"

#include <cstdlib>
#include <new>

namespace onnx_light::runtime {

namespace {
constexpr size_t kAlignment = 64;
}

void* CpuAllocator::Allocate(size_t bytes) {
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* block = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (block == nullptr) throw std::bad_alloc();
  const int64_t live = live_.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed) +
                       static_cast<int64_t>(bytes);
  int64_t peak = peak_.load(std::memory_order_relaxed);
  while (live > peak && !peak_.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
  return block;
}

void CpuAllocator::Free(void* block, size_t bytes) noexcept {
  if (block == nullptr) return;
  std::free(block);
  live_.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
}

std::shared_ptr<Allocator> MakeCpuAllocator() { return std::make_shared<CpuAllocator>(); }

std::shared_ptr<void> AllocateBuffer(const std::shared_ptr<Allocator>& allocator, size_t bytes) {
  void* block = allocator->Allocate(bytes);
  return std::shared_ptr<void>(block, [allocator, bytes](void* p) { allocator->Free(p, bytes); });
}

}  // namespace onnx_light::runtime

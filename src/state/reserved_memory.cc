#include "state/reserved_memory.h"

#if defined(__linux__) || defined(__APPLE__)
#include <sys/mman.h>
#endif

namespace onnx_light::runtime {

std::shared_ptr<void> ReserveLazilyBackedMemory(size_t bytes) noexcept {
#if defined(__linux__) || defined(__APPLE__)
  if (bytes == 0) return nullptr;
#if defined(MAP_NORESERVE)
  constexpr int kFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
#else
  constexpr int kFlags = MAP_PRIVATE | MAP_ANONYMOUS;
#endif
  void* block = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, kFlags, -1, 0);
  if (block == MAP_FAILED) return nullptr;
  try {
    return std::shared_ptr<void>(block, [bytes](void* p) { munmap(p, bytes); });
  } catch (...) {
    munmap(block, bytes);
    return nullptr;
  }
#else
  (void)bytes;
  return nullptr;
#endif
}

}  // namespace onnx_light::runtime

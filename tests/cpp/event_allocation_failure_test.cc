// An allocation failure while recording an event propagates to the caller and leaves the log as
// it was. The failure is injected by replacing the global allocation functions for this test
// binary with malloc-based ones that fail while a thread-local switch is on.

#include <gtest/gtest.h>

#include <cstdlib>
#include <new>

#include "onnx_light/runtime/runtime_context.h"
#include "test_util.h"

namespace {
thread_local bool g_fail_allocations = false;

void* AllocateOrThrow(std::size_t size) {
  if (g_fail_allocations) throw std::bad_alloc();
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* AllocateOrNull(std::size_t size) noexcept {
  if (g_fail_allocations) return nullptr;
  return std::malloc(size == 0 ? 1 : size);
}
}  // namespace

// Every non-aligned form is replaced so that allocation and release always pair malloc with free.
void* operator new(std::size_t size) { return AllocateOrThrow(size); }
void* operator new[](std::size_t size) { return AllocateOrThrow(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return AllocateOrNull(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return AllocateOrNull(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace onnx_light::runtime {
namespace {

TEST(EventAllocationFailureTest, FailureWhileAppendingPropagatesAndKeepsTheLog) {
  RuntimeContext rt = testing::MakeContext(true);
  rt.RecordEvent({.name = "first"});
  ASSERT_EQ(rt.events().size(), 1u);
  ASSERT_EQ(rt.events().capacity(), 1u);  // the next append must grow the vector

  RuntimeEvent second{.action = RuntimeEventAction::kPersistentStorage, .storage_allocations = 2};
  bool threw = false;
  g_fail_allocations = true;
  try {
    rt.RecordEvent(std::move(second));
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  g_fail_allocations = false;

  EXPECT_TRUE(threw);
  ASSERT_EQ(rt.events().size(), 1u);
  EXPECT_EQ(rt.events()[0].name, "first");
  rt.RecordEvent({.name = "after"});
  EXPECT_EQ(rt.events().size(), 2u);
}

TEST(EventAllocationFailureTest, DisabledRecordingDoesNotAllocate) {
  RuntimeContext rt = testing::MakeContext(false);
  RuntimeEvent event{.action = RuntimeEventAction::kPersistentStorage, .storage_allocations = 2};
  g_fail_allocations = true;
  rt.RecordEvent(std::move(event));  // would throw if it allocated
  rt.RecordKernelUsage("MatMul/float32/blas");
  g_fail_allocations = false;
  EXPECT_TRUE(rt.events().empty());
}

}  // namespace
}  // namespace onnx_light::runtime

// CpuAllocator: alignment and live/peak accounting; AllocateBuffer ownership.

#include "onnx_light/runtime/allocator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace onnx_light::runtime {
namespace {

TEST(AllocatorTest, AlignedBlocksAndLiveBytes) {
  CpuAllocator allocator;
  EXPECT_EQ(allocator.live_bytes(), 0);
  EXPECT_EQ(allocator.peak_bytes(), 0);
  void* a = allocator.Allocate(10);
  void* b = allocator.Allocate(100);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 64, 0u);
  std::memset(b, 0xab, 100);  // the whole requested size is usable
  // Counters report requested bytes, not rounded block sizes.
  EXPECT_EQ(allocator.live_bytes(), 110);
  EXPECT_EQ(allocator.peak_bytes(), 110);
  allocator.Free(a, 10);
  EXPECT_EQ(allocator.live_bytes(), 100);
  EXPECT_EQ(allocator.peak_bytes(), 110);
  allocator.Free(b, 100);
  EXPECT_EQ(allocator.live_bytes(), 0);
  EXPECT_EQ(allocator.peak_bytes(), 110);
}

TEST(AllocatorTest, ZeroBytesGivesAUsablePointer) {
  CpuAllocator allocator;
  void* p = allocator.Allocate(0);
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(allocator.live_bytes(), 0);
  allocator.Free(p, 0);
  allocator.Free(nullptr, 0);  // freeing null is a no-op
  EXPECT_EQ(allocator.live_bytes(), 0);
}

TEST(AllocatorTest, ResetPeakStartsFromLiveBytes) {
  CpuAllocator allocator;
  void* a = allocator.Allocate(1000);
  void* b = allocator.Allocate(24);
  allocator.Free(a, 1000);
  EXPECT_EQ(allocator.peak_bytes(), 1024);
  allocator.ResetPeak();
  EXPECT_EQ(allocator.peak_bytes(), 24);
  void* c = allocator.Allocate(8);
  EXPECT_EQ(allocator.peak_bytes(), 32);
  allocator.Free(b, 24);
  allocator.Free(c, 8);
}

TEST(AllocatorTest, EachCpuAllocatorCountsOnItsOwn) {
  auto a = MakeCpuAllocator();
  auto b = MakeCpuAllocator();
  EXPECT_NE(a, b);
  auto block = AllocateBuffer(a, 64);
  EXPECT_EQ(a->live_bytes(), 64);
  EXPECT_EQ(b->live_bytes(), 0);
}

TEST(AllocatorTest, AllocateBufferFreesWithTheLastOwnerAndKeepsTheAllocatorAlive) {
  std::shared_ptr<void> block;
  std::weak_ptr<Allocator> weak;
  {
    auto allocator = MakeCpuAllocator();
    weak = allocator;
    block = AllocateBuffer(allocator, 48);
    std::shared_ptr<void> second = block;
    EXPECT_EQ(allocator->live_bytes(), 48);
  }
  ASSERT_FALSE(weak.expired());
  EXPECT_EQ(weak.lock()->live_bytes(), 48);
  block.reset();
  EXPECT_TRUE(weak.expired());
}

TEST(AllocatorTest, ConcurrentAllocationsBalance) {
  auto allocator = MakeCpuAllocator();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&allocator, t] {
      for (int i = 0; i < 1'000; ++i) {
        const size_t bytes = static_cast<size_t>(1 + (t * 131 + i) % 512);
        auto block = AllocateBuffer(allocator, bytes);
        static_cast<char*>(block.get())[bytes - 1] = 1;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(allocator->live_bytes(), 0);
  EXPECT_GT(allocator->peak_bytes(), 0);
  EXPECT_LE(allocator->peak_bytes(), 8 * 512);
}

}  // namespace
}  // namespace onnx_light::runtime

namespace onnx_light::runtime {
namespace {

TEST(CpuAllocatorCache, ReusesFreedBlocksOfTheSameSizeWithoutCountingThemLive) {
  CpuAllocator allocator(1 << 20);
  void* a = allocator.Allocate(1000);
  allocator.Free(a, 1000);
  EXPECT_EQ(allocator.live_bytes(), 0);
  EXPECT_EQ(allocator.cached_bytes(), 1024u);
  void* b = allocator.Allocate(1000);
  EXPECT_EQ(a, b);
  EXPECT_EQ(allocator.cached_bytes(), 0u);
  EXPECT_EQ(allocator.live_bytes(), 1000);
  void* c = allocator.Allocate(5000);
  EXPECT_NE(c, b);
  allocator.Free(b, 1000);
  allocator.Free(c, 5000);
  allocator.ReleaseCache();
  EXPECT_EQ(allocator.cached_bytes(), 0u);
}

// From 64 KiB on, blocks come in eight size classes per power of two: a request a little larger
// than a freed one (a temporary over a KV cache one row longer) gets the freed block back, live
// bytes still count what was asked for, and the next class is a different block.
TEST(CpuAllocatorCache, LargeBlocksAreCachedBySizeClass) {
  CpuAllocator allocator(size_t{8} << 20);
  constexpr size_t kMiB = size_t{1} << 20;
  void* a = allocator.Allocate(kMiB + 1000);
  allocator.Free(a, kMiB + 1000);
  EXPECT_EQ(allocator.cached_bytes(), kMiB + kMiB / 8);
  void* b = allocator.Allocate(kMiB + 5000);
  EXPECT_EQ(a, b);
  EXPECT_EQ(allocator.live_bytes(), static_cast<int64_t>(kMiB + 5000));
  void* c = allocator.Allocate(kMiB + kMiB / 8 + 1);  // the next class up
  EXPECT_NE(c, b);
  allocator.Free(b, kMiB + 5000);
  allocator.Free(c, kMiB + kMiB / 8 + 1);
  EXPECT_EQ(allocator.cached_bytes(), kMiB + kMiB / 8 + kMiB + kMiB / 4);
  // Below 64 KiB the rounding stays at 64 bytes.
  allocator.ReleaseCache();
  allocator.Free(allocator.Allocate(65000), 65000);
  EXPECT_EQ(allocator.cached_bytes(), 65024u);
}

// A large request takes the most recently freed block among its class and the classes up to
// twice its size (its lines are the likeliest to be cached); the block keeps its class when it
// comes back, whatever the request that held it asked for.
TEST(CpuAllocatorCache, LargeRequestsTakeTheMostRecentlyFreedBlockUpToTwiceTheirSize) {
  CpuAllocator allocator(size_t{64} << 20);
  constexpr size_t kKiB = size_t{1} << 10;
  void* older = allocator.Allocate(256 * kKiB);  // class 256 KiB
  void* newer = allocator.Allocate(384 * kKiB);  // class 384 KiB
  void* too_large = allocator.Allocate(1024 * kKiB);
  allocator.Free(too_large, 1024 * kKiB);
  allocator.Free(older, 256 * kKiB);
  allocator.Free(newer, 384 * kKiB);
  EXPECT_EQ(allocator.cached_bytes(), (1024 + 256 + 384) * kKiB);

  void* first = allocator.Allocate(200 * kKiB);  // class 208 KiB: 256 and 384 KiB fit, not 1 MiB
  EXPECT_EQ(first, newer);
  EXPECT_EQ(allocator.live_bytes(), static_cast<int64_t>(200 * kKiB));
  void* second = allocator.Allocate(200 * kKiB);
  EXPECT_EQ(second, older);
  void* third = allocator.Allocate(200 * kKiB);  // only 1 MiB is left: more than twice
  EXPECT_NE(third, too_large);
  EXPECT_EQ(allocator.cached_bytes(), 1024 * kKiB);

  // Back in their own classes: a 384 KiB request finds the block a 200 KiB request held.
  allocator.Free(first, 200 * kKiB);
  allocator.Free(second, 200 * kKiB);
  EXPECT_EQ(allocator.cached_bytes(), (1024 + 256 + 384) * kKiB);
  EXPECT_EQ(allocator.Allocate(384 * kKiB), newer);
  EXPECT_EQ(allocator.live_bytes(), static_cast<int64_t>(584 * kKiB));
  allocator.Free(newer, 384 * kKiB);
  allocator.Free(third, 200 * kKiB);
  EXPECT_EQ(allocator.live_bytes(), 0);

  // Below 64 KiB a request takes its own size only.
  void* small = allocator.Allocate(4096);
  allocator.Free(small, 4096);
  void* smaller = allocator.Allocate(2048);
  EXPECT_NE(smaller, small);
  allocator.Free(smaller, 2048);
  EXPECT_EQ(allocator.Allocate(4096), small);
  allocator.Free(small, 4096);
}

// Threads allocating and freeing large blocks of mixed sizes, so that requests take blocks of
// larger classes and hand them back: no block is ever held by two owners (each writes its own
// pattern over the whole block and finds it intact before freeing), and every byte returns.
TEST(CpuAllocatorCache, LargeBlocksLentAcrossClassesUnderContention) {
  CpuAllocator allocator(size_t{64} << 20);
  std::atomic<int> corrupted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&allocator, &corrupted, t] {
      for (int i = 0; i < 300; ++i) {
        const size_t bytes = (size_t{64} << 10) + static_cast<size_t>((t * 7919 + i * 104729) % (448 << 10));
        auto* block = static_cast<unsigned char*>(allocator.Allocate(bytes));
        const auto pattern = static_cast<unsigned char>(t * 64 + i % 64);
        std::memset(block, pattern, bytes);
        std::this_thread::yield();
        for (size_t b = 0; b < bytes; b += 4096) {
          if (block[b] != pattern || block[bytes - 1] != pattern) ++corrupted;
        }
        allocator.Free(block, bytes);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(corrupted.load(), 0);
  EXPECT_EQ(allocator.live_bytes(), 0);
  // Every block came back to the cache under its own class: releasing it empties the count.
  EXPECT_GT(allocator.cached_bytes(), 0u);
  allocator.ReleaseCache();
  EXPECT_EQ(allocator.cached_bytes(), 0u);
}

TEST(CpuAllocatorCache, KeepsAtMostTheCap) {
  CpuAllocator allocator(4096);
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(allocator.Allocate(1024));
  for (void* p : blocks) allocator.Free(p, 1024);
  EXPECT_EQ(allocator.cached_bytes(), 4096u);
  EXPECT_EQ(allocator.live_bytes(), 0);
  CpuAllocator no_cache(0);
  no_cache.Free(no_cache.Allocate(64), 64);
  EXPECT_EQ(no_cache.cached_bytes(), 0u);
}

}  // namespace
}  // namespace onnx_light::runtime

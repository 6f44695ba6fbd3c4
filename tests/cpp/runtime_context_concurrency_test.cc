// Concurrent recording through related contexts: event appends are serialised by the shared log
// and every kernel-usage operation is thread-safe. Run these under TSan (ctest -R Concurrency).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "onnx_light/runtime/runtime_context.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

using testing::MakeContext;

constexpr int kThreads = 8;

TEST(ConcurrencyTest, ChildrenRecordEventsIntoOneLog) {
  constexpr uint64_t kEventsPerThread = 10'000;
  RuntimeContext root = MakeContext(true);
  std::vector<RuntimeContext> children;
  for (int t = 0; t < kThreads; ++t) {
    const auto kind = testing::kAllChildKinds[static_cast<size_t>(t) % testing::kAllChildKinds.size()];
    // Each child is tagged with its thread through subgraph_node_index (function-like kinds report
    // their parent's position, so give them a subgraph parent of their own).
    RuntimeContext tagged = root.CreateChild(ChildContextKind::kSubgraph, t, "body");
    children.push_back(kind == ChildContextKind::kSubgraph ? tagged : tagged.CreateChild(kind));
  }
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      RuntimeContext& child = children[static_cast<size_t>(t)];
      for (uint64_t i = 0; i < kEventsPerThread; ++i) {
        child.RecordEvent({.action = RuntimeEventAction::kPersistentStorage,
                           .storage_append_copied_bytes = i,
                           .storage_reuse_count = static_cast<uint64_t>(t)});
      }
    });
  }
  go.store(true);
  for (std::thread& thread : threads) thread.join();

  const std::vector<RuntimeEvent>& events = root.events();
  ASSERT_EQ(events.size(), kThreads * kEventsPerThread);
  uint64_t total = 0;
  std::vector<uint64_t> per_thread_count(kThreads, 0);
  std::vector<uint64_t> per_thread_next(kThreads, 0);
  for (const RuntimeEvent& e : events) {
    total += e.storage_append_copied_bytes;
    const auto t = static_cast<size_t>(e.subgraph_node_index);
    ASSERT_LT(t, static_cast<size_t>(kThreads));
    ASSERT_EQ(e.storage_reuse_count, t);
    // Each thread's events appear in the order that thread recorded them.
    ASSERT_EQ(e.storage_append_copied_bytes, per_thread_next[t]);
    ++per_thread_next[t];
    ++per_thread_count[t];
  }
  EXPECT_EQ(total, kThreads * (kEventsPerThread * (kEventsPerThread - 1) / 2));
  for (uint64_t count : per_thread_count) EXPECT_EQ(count, kEventsPerThread);
}

TEST(ConcurrencyTest, KernelUsageOperationsFromManyThreads) {
  constexpr size_t kLimit = RuntimeContext::kKernelUsageLimit;
  constexpr int kIterations = 5'000;
  RuntimeContext root = MakeContext();
  root.set_kernel_usage_enabled(true);
  std::vector<RuntimeContext> related;
  for (int t = 0; t < kThreads; ++t) {
    related.push_back(t % 2 == 0 ? RuntimeContext(root)
                                 : root.CreateChild(testing::kAllChildKinds[t % 4]));
  }
  const std::set<std::string> known = {"MatMul/float32/blas", "Add/float32", "Relu/float32"};
  std::atomic<bool> go{false};
  std::atomic<bool> bad_snapshot{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      RuntimeContext& rt = related[static_cast<size_t>(t)];
      for (int i = 0; i < kIterations; ++i) {
        switch ((t + i) % 8) {
          case 0: rt.set_kernel_usage_enabled(i % 3 != 0); break;
          case 1: rt.ClearKernelUsage(); break;
          case 2:
          case 3: {
            const std::vector<std::string> names = rt.GetKernelUsage();
            if (names.size() > kLimit) bad_snapshot = true;
            for (const std::string& n : names) {
              if (!known.contains(n)) bad_snapshot = true;
            }
            break;
          }
          case 4: (void)rt.kernel_usage_enabled(); break;
          default: rt.RecordKernelUsage(*std::next(known.begin(), (t + i) % 3)); break;
        }
      }
    });
  }
  go.store(true);
  for (std::thread& thread : threads) thread.join();
  EXPECT_FALSE(bad_snapshot.load());
  EXPECT_LE(root.GetKernelUsage().size(), kLimit);

  // The shared recorder is still coherent: one clear and N records give exactly N names.
  root.set_kernel_usage_enabled(true);
  root.ClearKernelUsage();
  for (int i = 0; i < 10; ++i) {
    related[static_cast<size_t>(i % kThreads)].RecordKernelUsage("Add/float32");
  }
  EXPECT_EQ(root.GetKernelUsage(), std::vector<std::string>(10, "Add/float32"));
}

TEST(ConcurrencyTest, ConcurrentKernelUsageRecordingStopsExactlyAtTheLimit) {
  constexpr size_t kLimit = RuntimeContext::kKernelUsageLimit;
  RuntimeContext root = MakeContext();
  root.set_kernel_usage_enabled(true);
  std::vector<RuntimeContext> children;
  for (int t = 0; t < kThreads; ++t) children.push_back(root.CreateChild(ChildContextKind::kFunction));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      RuntimeContext& child = children[static_cast<size_t>(t)];
      const std::string name = fmt::format("t{}", t);
      for (size_t i = 0; i < kLimit; ++i) child.RecordKernelUsage(name);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(root.GetKernelUsage().size(), kLimit);
}

TEST(ConcurrencyTest, SharedAllocatorCountsConcurrentTraffic) {
  auto allocator = MakeCpuAllocator();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&allocator] {
      for (int i = 0; i < 2'000; ++i) {
        Tensor tensor = Tensor::Allocate(DataType::kFloat, {16}, allocator);
        tensor.data<float>()[0] = 1.0f;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(allocator->live_bytes(), 0);
  EXPECT_GE(allocator->peak_bytes(), 64);
  EXPECT_LE(allocator->peak_bytes(), 64 * kThreads);
}

}  // namespace
}  // namespace onnx_light::runtime

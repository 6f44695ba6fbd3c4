// Kernel-usage recording: off by default, independent of events, shared by related contexts,
// bounded by kKernelUsageLimit.

#include <fmt/format.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "onnx_light/runtime/kernel_base.h"
#include "onnx_light/runtime/runtime_context.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

using testing::kAllChildKinds;
using testing::MakeContext;
using Names = std::vector<std::string>;

static_assert(RuntimeContext::kKernelUsageLimit == 1024);
static_assert(std::is_same_v<decltype(std::declval<RuntimeContext&>().GetKernelUsage()), Names>);

TEST(KernelUsageTest, OffByDefault) {
  RuntimeContext rt = MakeContext();
  EXPECT_FALSE(rt.kernel_usage_enabled());
  rt.RecordKernelUsage("MatMul/float32/blas");
  EXPECT_TRUE(rt.GetKernelUsage().empty());
}

TEST(KernelUsageTest, IndependentOfEventRecording) {
  RuntimeContext events_on = MakeContext(true);
  EXPECT_FALSE(events_on.kernel_usage_enabled());
  events_on.RecordKernelUsage("Add/float32");
  EXPECT_TRUE(events_on.GetKernelUsage().empty());

  events_on.set_kernel_usage_enabled(true);
  events_on.RecordKernelUsage("Add/float32");
  EXPECT_EQ(events_on.GetKernelUsage(), Names{"Add/float32"});
  EXPECT_TRUE(events_on.events().empty());  // usage is not an event

  RuntimeContext events_off = MakeContext(false);
  events_off.set_kernel_usage_enabled(true);
  EXPECT_FALSE(events_off.events_enabled());
  events_off.RecordKernelUsage("Relu/float32");
  EXPECT_EQ(events_off.GetKernelUsage(), Names{"Relu/float32"});

  // Clearing one kind of record leaves the other alone.
  events_on.RecordEvent({.name = "e"});
  events_on.ClearEvents();
  EXPECT_EQ(events_on.GetKernelUsage(), Names{"Add/float32"});
  events_on.RecordEvent({.name = "e"});
  events_on.ClearKernelUsage();
  EXPECT_EQ(events_on.events().size(), 1u);
}

TEST(KernelUsageTest, RecordsInOrderWithDuplicates) {
  RuntimeContext rt = MakeContext();
  rt.set_kernel_usage_enabled(true);
  EXPECT_TRUE(rt.kernel_usage_enabled());
  rt.RecordKernelUsage("MatMul/float32/blas");
  rt.RecordKernelUsage("Add/float32");
  rt.RecordKernelUsage("MatMul/float32/blas");
  EXPECT_EQ(rt.GetKernelUsage(), (Names{"MatMul/float32/blas", "Add/float32", "MatMul/float32/blas"}));
}

TEST(KernelUsageTest, DisablingKeepsTheNamesAndStopsRecording) {
  RuntimeContext rt = MakeContext();
  rt.set_kernel_usage_enabled(true);
  rt.RecordKernelUsage("A");
  rt.set_kernel_usage_enabled(false);
  EXPECT_FALSE(rt.kernel_usage_enabled());
  EXPECT_EQ(rt.GetKernelUsage(), Names{"A"});
  rt.RecordKernelUsage("B");
  EXPECT_EQ(rt.GetKernelUsage(), Names{"A"});
  rt.set_kernel_usage_enabled(true);
  rt.RecordKernelUsage("C");
  EXPECT_EQ(rt.GetKernelUsage(), (Names{"A", "C"}));
}

TEST(KernelUsageTest, ClearKernelUsageClearsOnlyTheNames) {
  RuntimeContext rt = MakeContext();
  rt.set_kernel_usage_enabled(true);
  rt.RecordKernelUsage("A");
  rt.ClearKernelUsage();
  EXPECT_TRUE(rt.GetKernelUsage().empty());
  EXPECT_TRUE(rt.kernel_usage_enabled());
  rt.RecordKernelUsage("B");
  EXPECT_EQ(rt.GetKernelUsage(), Names{"B"});
}

TEST(KernelUsageTest, SnapshotOwnsItsStrings) {
  RuntimeContext rt = MakeContext();
  rt.set_kernel_usage_enabled(true);
  {
    // A heap-allocated name (longer than any small-string buffer) that dies right away.
    std::string name(64, 'k');
    rt.RecordKernelUsage(name);
    name.assign(64, 'x');
  }
  Names snapshot = rt.GetKernelUsage();
  rt.Clear();
  rt.ClearKernelUsage();
  rt.RecordKernelUsage("other");
  ASSERT_EQ(snapshot.size(), 1u);
  EXPECT_EQ(snapshot[0], std::string(64, 'k'));
}

TEST(KernelUsageTest, ClearPreservesRecordingStateAndNames) {
  RuntimeContext rt = MakeContext(true);
  rt.set_kernel_usage_enabled(true);
  rt.RecordKernelUsage("run1");
  rt.Clear();
  EXPECT_TRUE(rt.kernel_usage_enabled());
  rt.RecordKernelUsage("run2");
  EXPECT_EQ(rt.GetKernelUsage(), (Names{"run1", "run2"}));

  rt.set_kernel_usage_enabled(false);
  rt.Clear();
  EXPECT_FALSE(rt.kernel_usage_enabled());
  EXPECT_EQ(rt.GetKernelUsage().size(), 2u);
}

TEST(KernelUsageTest, KeepsTheFirstLimitNamesUntilCleared) {
  constexpr size_t kLimit = RuntimeContext::kKernelUsageLimit;
  RuntimeContext rt = MakeContext();
  rt.set_kernel_usage_enabled(true);
  for (size_t i = 0; i < kLimit + 10; ++i) rt.RecordKernelUsage(fmt::format("k{}", i));
  Names names = rt.GetKernelUsage();
  ASSERT_EQ(names.size(), kLimit);
  EXPECT_EQ(names.front(), "k0");
  EXPECT_EQ(names.back(), fmt::format("k{}", kLimit - 1));
  rt.RecordKernelUsage("late");
  EXPECT_EQ(rt.GetKernelUsage(), names);  // still dropped
  rt.Clear();                             // Clear() is not ClearKernelUsage()
  rt.RecordKernelUsage("late");
  EXPECT_EQ(rt.GetKernelUsage(), names);

  rt.ClearKernelUsage();
  rt.RecordKernelUsage("fresh");
  EXPECT_EQ(rt.GetKernelUsage(), Names{"fresh"});
}

TEST(KernelUsageTest, DuplicatesCountTowardsTheLimit) {
  constexpr size_t kLimit = RuntimeContext::kKernelUsageLimit;
  RuntimeContext rt = MakeContext();
  rt.set_kernel_usage_enabled(true);
  for (size_t i = 0; i < kLimit; ++i) rt.RecordKernelUsage("Add/float32");
  rt.RecordKernelUsage("Mul/float32");
  Names names = rt.GetKernelUsage();
  ASSERT_EQ(names.size(), kLimit);
  EXPECT_EQ(names, Names(kLimit, "Add/float32"));
}

TEST(KernelUsageTest, CopiesAndChildrenShareTheRecorderIncludingLaterToggles) {
  RuntimeContext root = MakeContext();
  RuntimeContext copy(root);
  std::vector<RuntimeContext> children;
  for (ChildContextKind kind : kAllChildKinds) children.push_back(root.CreateChild(kind));
  // Enabled after the children were created.
  root.set_kernel_usage_enabled(true);
  EXPECT_TRUE(copy.kernel_usage_enabled());
  for (const RuntimeContext& child : children) EXPECT_TRUE(child.kernel_usage_enabled());

  copy.RecordKernelUsage("copy");
  for (RuntimeContext& child : children) child.RecordKernelUsage("child");
  EXPECT_EQ(root.GetKernelUsage(), (Names{"copy", "child", "child", "child", "child"}));
  EXPECT_EQ(children[2].GetKernelUsage(), root.GetKernelUsage());

  // A child disabling it disables it for everyone; a child clearing clears for everyone.
  children[0].set_kernel_usage_enabled(false);
  EXPECT_FALSE(root.kernel_usage_enabled());
  EXPECT_FALSE(children[3].kernel_usage_enabled());
  children[1].ClearKernelUsage();
  EXPECT_TRUE(root.GetKernelUsage().empty());
}

TEST(KernelUsageTest, GrandchildrenShareTheRecorder) {
  RuntimeContext root = MakeContext();
  RuntimeContext grandchild = root.CreateChild(ChildContextKind::kSubgraph, 0, "body")
                                  .CreateChild(ChildContextKind::kFunction);
  root.set_kernel_usage_enabled(true);
  grandchild.RecordKernelUsage("deep");
  EXPECT_EQ(root.GetKernelUsage(), Names{"deep"});
}

TEST(KernelUsageTest, EachIndependentContextOwnsItsRecorder) {
  // Both roots use the same KernelContext (and so the same custom-kernel registry).
  KernelContext kernels(DefaultOpset(23));
  RuntimeContext a(kernels);
  RuntimeContext b(kernels);
  a.set_kernel_usage_enabled(true);
  EXPECT_FALSE(b.kernel_usage_enabled());
  a.RecordKernelUsage("A");
  b.set_kernel_usage_enabled(true);
  b.RecordKernelUsage("B");
  EXPECT_EQ(a.GetKernelUsage(), Names{"A"});
  EXPECT_EQ(b.GetKernelUsage(), Names{"B"});
  a.ClearKernelUsage();
  EXPECT_EQ(b.GetKernelUsage(), Names{"B"});
}

TEST(KernelUsageTest, ChildKeepsTheRecorderAliveAfterItsParentIsDestroyed) {
  auto parent = std::make_unique<RuntimeContext>(MakeContext());
  parent->set_kernel_usage_enabled(true);
  parent->RecordKernelUsage("parent");
  RuntimeContext child = parent->CreateChild(ChildContextKind::kFeedback);
  parent.reset();
  child.RecordKernelUsage("child");
  EXPECT_EQ(child.GetKernelUsage(), (Names{"parent", "child"}));
}

// The way backends use it: from KernelBase::Run with the dispatching context.
class RecordingKernel final : public KernelBase {
 public:
  void Run(RuntimeContext& rt) const override { rt.RecordKernelUsage("Custom/float32/reference"); }
};

TEST(KernelUsageTest, KernelsRecordFromRun) {
  RuntimeContext rt = MakeContext();
  RuntimeContext body = rt.CreateChild(ChildContextKind::kSubgraph, 0, "body");
  const RecordingKernel kernel;
  kernel.Run(body);  // disabled: nothing
  rt.set_kernel_usage_enabled(true);
  kernel.Run(body);
  kernel.Run(rt);
  EXPECT_EQ(rt.GetKernelUsage(), Names(2, "Custom/float32/reference"));
}

}  // namespace
}  // namespace onnx_light::runtime

// Which contexts share one event log, how long it lives, and what ClearEvents() / Clear() reset.

#include <gtest/gtest.h>

#include <memory>

#include "onnx_light/runtime/runtime_context.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

using testing::kAllChildKinds;
using testing::MakeContext;
using testing::MakeIotaFloat;

class EventLogSharingTest : public ::testing::TestWithParam<bool> {};

// The log exists and is shared whether or not recording is on.
TEST_P(EventLogSharingTest, CopiesAndChildrenOfEveryKindShareTheLog) {
  const bool enabled = GetParam();
  RuntimeContext root = MakeContext(enabled);
  RuntimeContext copy(root);
  RuntimeContext assigned = MakeContext(enabled);
  assigned = root;
  EXPECT_EQ(copy.event_log(), root.event_log());
  EXPECT_EQ(assigned.event_log(), root.event_log());
  for (ChildContextKind kind : kAllChildKinds) {
    RuntimeContext child = root.CreateChild(kind, 1, "body");
    RuntimeContext grandchild = child.CreateChild(kind, 2, "else_branch");
    EXPECT_EQ(child.event_log(), root.event_log()) << static_cast<int>(kind);
    EXPECT_EQ(grandchild.event_log(), root.event_log()) << static_cast<int>(kind);
    EXPECT_EQ(&child.events(), &root.events());
    EXPECT_EQ(child.events_enabled(), enabled);
  }
  RuntimeContext moved(std::move(copy));
  EXPECT_EQ(moved.event_log(), root.event_log());
}

INSTANTIATE_TEST_SUITE_P(RecordingOnAndOff, EventLogSharingTest, ::testing::Bool());

TEST(EventLogSharing, EventsRecordedThroughAnyRelativeAppearInOneLog) {
  RuntimeContext root = MakeContext(true);
  RuntimeContext copy(root);
  root.RecordEvent({.name = "root"});
  copy.RecordEvent({.name = "copy"});
  for (ChildContextKind kind : kAllChildKinds) {
    RuntimeContext child = copy.CreateChild(kind);
    child.RecordEvent({.name = "child"});
  }
  ASSERT_EQ(root.events().size(), 6u);
  EXPECT_EQ(root.events()[0].name, "root");
  EXPECT_EQ(root.events()[1].name, "copy");
  EXPECT_EQ(root.events()[5].name, "child");
  EXPECT_EQ(copy.events().size(), 6u);
}

TEST(EventLogSharing, IndependentRootsHaveIndependentLogs) {
  KernelContext kernels(DefaultOpset(23));
  RuntimeContext a(kernels, {.events_enabled = true});
  RuntimeContext b(kernels, {.events_enabled = true});
  EXPECT_NE(a.event_log(), b.event_log());
  a.RecordEvent({.name = "a"});
  EXPECT_EQ(a.events().size(), 1u);
  EXPECT_TRUE(b.events().empty());
  b.ClearEvents();
  EXPECT_EQ(a.events().size(), 1u);
}

TEST(EventLogSharing, ChildKeepsTheLogAliveAfterItsParentIsDestroyed) {
  for (ChildContextKind kind : kAllChildKinds) {
    auto parent = std::make_unique<RuntimeContext>(MakeContext(true));
    parent->RecordEvent({.name = "from parent"});
    RuntimeContext child = parent->CreateChild(kind, 0, "body");
    std::weak_ptr<EventLog> weak = parent->event_log();
    parent.reset();
    ASSERT_FALSE(weak.expired());
    child.RecordEvent({.name = "from child"});
    ASSERT_EQ(child.events().size(), 2u);
    EXPECT_EQ(child.events()[0].name, "from parent");
    EXPECT_EQ(child.events()[1].name, "from child");
    // The child's allocator and recorder outlive the parent as well.
    Tensor t = Tensor::Allocate(DataType::kInt64, {4}, child.allocator());
    child.set_kernel_usage_enabled(true);
    child.RecordKernelUsage("Add/int64");
    EXPECT_EQ(child.GetKernelUsage().size(), 1u);
  }
}

TEST(EventLogSharing, LogIsReleasedWithTheLastRelatedContext) {
  std::weak_ptr<EventLog> weak;
  {
    RuntimeContext root = MakeContext(true);
    weak = root.event_log();
    RuntimeContext child = root.CreateChild(ChildContextKind::kFeedback);
  }
  EXPECT_TRUE(weak.expired());
}

TEST(EventLogSharing, ClearEventsClearsForAllRelatedContextsAndKeepsValues) {
  RuntimeContext root = MakeContext(true);
  RuntimeContext feedback = root.CreateChild(ChildContextKind::kFeedback);
  root.PutTensor("x", MakeIotaFloat({2}, root.allocator()), TensorKind::kInput);
  feedback.PutTensor("past", MakeIotaFloat({3}, root.allocator()), TensorKind::kInput);
  feedback.PutValue("seq", TensorSequence{DataType::kFloat, {}});
  ASSERT_EQ(root.events().size(), 3u);

  feedback.ClearEvents();  // cleared through a child: gone for everyone
  EXPECT_TRUE(root.events().empty());
  EXPECT_TRUE(feedback.events().empty());
  EXPECT_NE(root.FindTensor("x"), nullptr);
  EXPECT_NE(feedback.FindTensor("past"), nullptr);
  EXPECT_NE(feedback.FindValue("seq"), nullptr);
  EXPECT_TRUE(root.events_enabled());
  EXPECT_TRUE(feedback.events_enabled());

  root.RecordEvent({.name = "still recording"});
  EXPECT_EQ(feedback.events().size(), 1u);
}

TEST(EventLogSharing, ClearResetsTheSharedLogButOnlyTheReceiversValues) {
  RuntimeContext root = MakeContext(true);
  root.set_kernel_usage_enabled(true);
  root.RecordKernelUsage("Relu/float32");
  root.set_retained_outputs({"y"});
  root.PutTensor("x", MakeIotaFloat({2}, root.allocator()));
  root.PutValue("opt", EmptyOptional{});
  RuntimeContext copy(root);
  RuntimeContext child = root.CreateChild(ChildContextKind::kFunction);
  child.PutTensor("inner", MakeIotaFloat({1}, root.allocator()));
  ASSERT_EQ(root.events().size(), 3u);

  root.Clear();
  EXPECT_TRUE(root.events().empty());
  EXPECT_TRUE(copy.events().empty());
  EXPECT_TRUE(root.tensors().empty());
  EXPECT_TRUE(root.values().empty());
  // The copy and the child keep their values.
  EXPECT_NE(copy.FindTensor("x"), nullptr);
  EXPECT_NE(copy.FindValue("opt"), nullptr);
  EXPECT_NE(child.FindTensor("inner"), nullptr);
  // Options, recording state, kernel usage and retained names survive.
  EXPECT_TRUE(root.events_enabled());
  EXPECT_TRUE(root.kernel_usage_enabled());
  EXPECT_EQ(root.GetKernelUsage(), (std::vector<std::string>{"Relu/float32"}));
  EXPECT_TRUE(root.IsRetainedOutput("y"));
  EXPECT_EQ(root.event_log(), copy.event_log());

  root.RecordEvent({.name = "next run"});
  EXPECT_EQ(copy.events().size(), 1u);
}

TEST(EventLogSharing, ClearOnACopyLeavesTheOriginalsValues) {
  RuntimeContext root = MakeContext(false);
  root.PutTensor("x", MakeIotaFloat({2}, root.allocator()));
  RuntimeContext copy(root);
  copy.Clear();
  EXPECT_TRUE(copy.tensors().empty());
  ASSERT_NE(root.FindTensor("x"), nullptr);
  EXPECT_EQ(testing::FloatElements(*root.FindTensor("x")), (std::vector<float>{0, 1}));
}

}  // namespace
}  // namespace onnx_light::runtime

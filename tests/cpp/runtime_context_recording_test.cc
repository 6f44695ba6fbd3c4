// RuntimeContext::RecordEvent: the on/off switch, the fields the context fills in, timestamps and
// what survives a failure.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/runtime_context_internals.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/runtime_context.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

using testing::MakeContext;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST(RuntimeContextRecordingTest, DisabledByDefault) {
  RuntimeContext rt(KernelContext(DefaultOpset(23)));
  EXPECT_FALSE(rt.events_enabled());
  EXPECT_FALSE(RuntimeContextOptions{}.events_enabled);
}

// The spec's own producer snippet, verbatim apart from the surrounding test.
TEST(RuntimeContextRecordingTest, SpecSnippetCompilesAndRecords) {
  RuntimeContext rt = MakeContext(/*events_enabled=*/true);
  const uint64_t copied_bytes = 96;
  if (rt.events_enabled())
    rt.RecordEvent({.action = RuntimeEventAction::kPersistentStorage,
                    .storage_append_copied_bytes = copied_bytes});
  ASSERT_EQ(rt.events().size(), 1u);
  const RuntimeEvent& e = rt.events()[0];
  EXPECT_EQ(e.action, RuntimeEventAction::kPersistentStorage);
  EXPECT_EQ(e.storage_append_copied_bytes, 96u);
  EXPECT_EQ(e.storage_allocations, 0u);
  EXPECT_EQ(e.storage_allocated_bytes, 0u);
  EXPECT_EQ(e.storage_prefix_copied_bytes, 0u);
  EXPECT_EQ(e.storage_reuse_count, 0u);
}

TEST(RuntimeContextRecordingTest, DisabledRecordingLeavesLogUnchanged) {
  RuntimeContext rt = MakeContext(/*events_enabled=*/false);
  const EventLog* log = rt.event_log().get();
  ASSERT_NE(log, nullptr);
  rt.RecordEvent({.action = RuntimeEventAction::kPersistentStorage, .storage_allocations = 1});
  rt.RecordEvent({.action = RuntimeEventAction::kRunNode, .name = "node"});
  rt.PutTensor("x", testing::MakeIotaFloat({2}, rt.allocator()), TensorKind::kInput);
  rt.PutTensor("x", testing::MakeIotaFloat({3}, rt.allocator()), TensorKind::kInput);
  rt.RemoveValue("x");
  EXPECT_TRUE(rt.events().empty());
  EXPECT_TRUE(rt.event_log()->Snapshot().empty());
  EXPECT_EQ(rt.event_log().get(), log);
}

TEST(RuntimeContextRecordingTest, EventsAreKeptInRecordingOrder) {
  RuntimeContext rt = MakeContext(true);
  for (uint64_t i = 0; i < 10; ++i) {
    rt.RecordEvent({.action = RuntimeEventAction::kPersistentStorage, .storage_reuse_count = i});
  }
  ASSERT_EQ(rt.events().size(), 10u);
  for (uint64_t i = 0; i < 10; ++i) EXPECT_EQ(rt.events()[i].storage_reuse_count, i);
  EXPECT_EQ(rt.event_log()->Snapshot().size(), 10u);
}

TEST(RuntimeContextRecordingTest, CallerPayloadIsKept) {
  RuntimeContext rt = MakeContext(true);
  rt.RecordEvent({.action = RuntimeEventAction::kRunNode,
                  .kind = TensorKind::kIntermediate,
                  .name = "conv1",
                  .data_type = 1,
                  .shape = {1, 3, 224, 224},
                  .op_domain = "com.example",
                  .op_type = "Conv",
                  .inputs = {"x", "w"},
                  .duration_ns = 1234,
                  .storage_allocations = 1,
                  .storage_allocated_bytes = 2,
                  .storage_prefix_copied_bytes = 3,
                  .storage_append_copied_bytes = 4,
                  .storage_reuse_count = 5});
  ASSERT_EQ(rt.events().size(), 1u);
  const RuntimeEvent& e = rt.events()[0];
  EXPECT_EQ(e.action, RuntimeEventAction::kRunNode);
  EXPECT_EQ(e.kind, TensorKind::kIntermediate);
  EXPECT_EQ(e.name, "conv1");
  EXPECT_EQ(e.data_type, 1);
  EXPECT_EQ(e.shape, (Shape{1, 3, 224, 224}));
  EXPECT_EQ(e.op_domain, "com.example");
  EXPECT_EQ(e.op_type, "Conv");
  EXPECT_EQ(e.inputs, (std::vector<std::string>{"x", "w"}));
  EXPECT_EQ(e.duration_ns, 1234);
  EXPECT_EQ(e.storage_allocations, 1u);
  EXPECT_EQ(e.storage_allocated_bytes, 2u);
  EXPECT_EQ(e.storage_prefix_copied_bytes, 3u);
  EXPECT_EQ(e.storage_append_copied_bytes, 4u);
  EXPECT_EQ(e.storage_reuse_count, 5u);
}

TEST(RuntimeContextRecordingTest, ContextFillsNodeIndex) {
  RuntimeContext rt = MakeContext(true);
  rt.RecordEvent({.action = RuntimeEventAction::kAdd, .node_index = 99});  // overwritten
  RuntimeContextInternals::SetCurrentNodeIndex(rt, kNodeIndexInitializer);
  rt.RecordEvent({.action = RuntimeEventAction::kAdd});
  RuntimeContextInternals::SetCurrentNodeIndex(rt, 7);
  rt.RecordEvent({.action = RuntimeEventAction::kRunNode});
  rt.RecordEvent({.action = RuntimeEventAction::kPersistentStorage});
  rt.RecordEvent({.action = RuntimeEventAction::kRemove, .node_index = 7});
  ASSERT_EQ(rt.events().size(), 5u);
  EXPECT_EQ(rt.events()[0].node_index, kNodeIndexNone);  // idle context
  EXPECT_EQ(rt.events()[1].node_index, kNodeIndexInitializer);
  EXPECT_EQ(rt.events()[2].node_index, 7);
  EXPECT_EQ(rt.events()[3].node_index, 7);
  EXPECT_EQ(rt.events()[4].node_index, kNodeIndexNone);  // removals are not node positions
}

TEST(RuntimeContextRecordingTest, TopLevelSubgraphFields) {
  RuntimeContext rt = MakeContext(true);
  rt.RecordEvent({.subgraph_node_index = 4, .subgraph_attr_name = "caller"});  // overwritten
  ASSERT_EQ(rt.events().size(), 1u);
  EXPECT_EQ(rt.events()[0].subgraph_node_index, -1);
  EXPECT_EQ(rt.events()[0].subgraph_attr_name, "");
}

TEST(RuntimeContextRecordingTest, SubgraphChildStampsItsPosition) {
  RuntimeContext root = MakeContext(true);
  RuntimeContext body = root.CreateChild(ChildContextKind::kSubgraph, 3, "then_branch");
  EXPECT_EQ(body.subgraph_node_index(), 3);
  EXPECT_EQ(body.subgraph_attr_name(), "then_branch");
  RuntimeContextInternals::SetCurrentNodeIndex(body, 1);
  body.RecordEvent({.action = RuntimeEventAction::kRunNode, .name = "inner"});
  // Nested subgraph inside the body.
  RuntimeContext nested = body.CreateChild(ChildContextKind::kSubgraph, 5, "body");
  nested.RecordEvent({.action = RuntimeEventAction::kRunNode, .name = "deep"});
  ASSERT_EQ(root.events().size(), 2u);
  EXPECT_EQ(root.events()[0].subgraph_node_index, 3);
  EXPECT_EQ(root.events()[0].subgraph_attr_name, "then_branch");
  EXPECT_EQ(root.events()[0].node_index, 1);
  EXPECT_EQ(root.events()[1].subgraph_node_index, 5);
  EXPECT_EQ(root.events()[1].subgraph_attr_name, "body");
  EXPECT_EQ(root.events()[1].node_index, kNodeIndexNone);
}

TEST(RuntimeContextRecordingTest, NonSubgraphChildrenReportTheirParentPosition) {
  RuntimeContext root = MakeContext(true);
  RuntimeContext body = root.CreateChild(ChildContextKind::kSubgraph, 2, "body");
  for (ChildContextKind kind : {ChildContextKind::kFunction, ChildContextKind::kFeedback,
                                ChildContextKind::kHalfPrecisionScratch}) {
    root.ClearEvents();
    RuntimeContext child = body.CreateChild(kind, 99, "ignored");
    child.RecordEvent({.action = RuntimeEventAction::kPersistentStorage});
    ASSERT_EQ(root.events().size(), 1u);
    EXPECT_EQ(root.events()[0].subgraph_node_index, 2);
    EXPECT_EQ(root.events()[0].subgraph_attr_name, "body");
  }
}

TEST(RuntimeContextRecordingTest, ContextFillsAllocatorLiveAndPeakBytes) {
  auto allocator = MakeCpuAllocator();
  RuntimeContext rt = MakeContext(true, allocator);
  EXPECT_EQ(rt.allocator(), allocator);
  {
    auto big = AllocateBuffer(allocator, 1000);
  }
  auto small = AllocateBuffer(allocator, 100);
  ASSERT_EQ(allocator->live_bytes(), 100);
  ASSERT_EQ(allocator->peak_bytes(), 1000);
  // Storage traffic and caller-supplied allocator numbers do not leak into allocated/peak bytes.
  rt.RecordEvent({.action = RuntimeEventAction::kPersistentStorage,
                  .allocated_bytes = 5,
                  .peak_bytes = 6,
                  .storage_allocations = 3,
                  .storage_allocated_bytes = 1 << 20});
  ASSERT_EQ(rt.events().size(), 1u);
  EXPECT_EQ(rt.events()[0].allocated_bytes, 100);
  EXPECT_EQ(rt.events()[0].peak_bytes, 1000);
  EXPECT_EQ(rt.events()[0].storage_allocated_bytes, uint64_t{1} << 20);

  small.reset();
  rt.RecordEvent({.action = RuntimeEventAction::kRunNode});
  EXPECT_EQ(rt.events()[1].allocated_bytes, 0);
  EXPECT_EQ(rt.events()[1].peak_bytes, 1000);
}

TEST(RuntimeContextRecordingTest, ChildrenReportTheSharedAllocator) {
  auto allocator = MakeCpuAllocator();
  RuntimeContext root = MakeContext(true, allocator);
  RuntimeContext child = root.CreateChild(ChildContextKind::kFunction);
  EXPECT_EQ(child.allocator(), allocator);
  Tensor t = Tensor::Allocate(DataType::kFloat, {16}, child.allocator());
  child.RecordEvent({.action = RuntimeEventAction::kRunNode});
  ASSERT_EQ(root.events().size(), 1u);
  EXPECT_EQ(root.events()[0].allocated_bytes, 64);
  EXPECT_EQ(root.events()[0].peak_bytes, 64);
}

TEST(RuntimeContextRecordingTest, EachRootGetsItsOwnDefaultAllocator) {
  RuntimeContext a = MakeContext();
  RuntimeContext b = MakeContext();
  ASSERT_NE(a.allocator(), nullptr);
  EXPECT_NE(a.allocator(), b.allocator());
}

TEST(RuntimeContextRecordingTest, NonzeroTimestampIsKept) {
  RuntimeContext rt = MakeContext(true);
  rt.RecordEvent({.timestamp_ns = 1});
  rt.RecordEvent({.timestamp_ns = 1'700'000'000'123'456'789});
  ASSERT_EQ(rt.events().size(), 2u);
  EXPECT_EQ(rt.events()[0].timestamp_ns, 1);
  EXPECT_EQ(rt.events()[1].timestamp_ns, 1'700'000'000'123'456'789);
}

TEST(RuntimeContextRecordingTest, ZeroTimestampBecomesRecordingTime) {
  RuntimeContext rt = MakeContext(true);
  const int64_t before = NowNs();
  rt.RecordEvent({.action = RuntimeEventAction::kPersistentStorage});
  const int64_t after = NowNs();
  ASSERT_EQ(rt.events().size(), 1u);
  EXPECT_GE(rt.events()[0].timestamp_ns, before);
  EXPECT_LE(rt.events()[0].timestamp_ns, after);
  // Nanoseconds since the Unix epoch: later than 2020-01-01.
  EXPECT_GT(rt.events()[0].timestamp_ns, int64_t{1'577'836'800} * 1'000'000'000);
}

TEST(RuntimeContextRecordingTest, StorageFieldsArePerEventNotCumulative) {
  RuntimeContext rt = MakeContext(true);
  for (int i = 0; i < 3; ++i) {
    rt.RecordEvent({.action = RuntimeEventAction::kPersistentStorage,
                    .storage_allocations = 1,
                    .storage_allocated_bytes = 256,
                    .storage_prefix_copied_bytes = 128,
                    .storage_append_copied_bytes = 64,
                    .storage_reuse_count = 0});
  }
  uint64_t allocated = 0;
  for (const RuntimeEvent& e : rt.events()) {
    EXPECT_EQ(e.storage_allocations, 1u);
    EXPECT_EQ(e.storage_allocated_bytes, 256u);
    EXPECT_EQ(e.storage_prefix_copied_bytes, 128u);
    EXPECT_EQ(e.storage_append_copied_bytes, 64u);
    allocated += e.storage_allocated_bytes;
  }
  EXPECT_EQ(allocated, 768u);
}

// Children write straight into the shared log: no buffering, no merge when the child goes away.
TEST(RuntimeContextRecordingTest, ChildEventsAppearImmediatelyInRecordingOrder) {
  RuntimeContext root = MakeContext(true);
  RuntimeContext child = root.CreateChild(ChildContextKind::kFunction);
  root.RecordEvent({.name = "1"});
  child.RecordEvent({.name = "2"});
  ASSERT_EQ(root.events().size(), 2u);  // visible while the child is alive
  root.RecordEvent({.name = "3"});
  child.RecordEvent({.name = "4"});
  ASSERT_EQ(root.events().size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(root.events()[i].name, std::to_string(i + 1));
}

TEST(RuntimeContextRecordingTest, EntriesRecordedBeforeAnExceptionStay) {
  RuntimeContext root = MakeContext(true);
  root.RecordEvent({.action = RuntimeEventAction::kRunNode, .name = "before"});
  auto run_failing_subgraph = [&root] {
    RuntimeContext body = root.CreateChild(ChildContextKind::kSubgraph, 0, "body");
    body.RecordEvent({.action = RuntimeEventAction::kRunNode, .name = "inner"});
    body.RecordEvent({.action = RuntimeEventAction::kPersistentStorage, .storage_allocations = 1});
    throw std::runtime_error("kernel failed");
  };
  EXPECT_THROW(run_failing_subgraph(), std::runtime_error);
  // A failing runtime call (PutValue of nothing) keeps the log as well.
  EXPECT_THROW(root.PutValue("nothing", RuntimeValue()), Error);
  ASSERT_EQ(root.events().size(), 3u);
  EXPECT_EQ(root.events()[0].name, "before");
  EXPECT_EQ(root.events()[1].name, "inner");
  EXPECT_EQ(root.events()[2].storage_allocations, 1u);
  // Recording continues afterwards.
  root.RecordEvent({.action = RuntimeEventAction::kRunNode, .name = "after"});
  EXPECT_EQ(root.events().size(), 4u);
}

}  // namespace
}  // namespace onnx_light::runtime

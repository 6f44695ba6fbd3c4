// RuntimeEvent as a type: an aggregate with the documented fields, defaults and names.

#include "onnx_light/runtime/runtime_event.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>

namespace onnx_light::runtime {
namespace {

static_assert(std::is_aggregate_v<RuntimeEvent>);
static_assert(std::is_same_v<std::underlying_type_t<RuntimeEventAction>, int32_t>);

// Every documented field in the documented order: designated initializers must follow
// declaration order, so this only compiles while the order holds.
TEST(RuntimeEventTest, FieldsExistInContractOrder) {
  const RuntimeEvent event{
      .action = RuntimeEventAction::kRunNode,
      .kind = TensorKind::kOutput,
      .timestamp_ns = 1,
      .name = "n",
      .data_type = 1,
      .shape = {2, 3},
      .op_domain = "d",
      .op_type = "Relu",
      .inputs = {"x"},
      .duration_ns = 5,
      .node_index = 7,
      .subgraph_node_index = 8,
      .subgraph_attr_name = "body",
      .allocated_bytes = 9,
      .peak_bytes = 10,
      .storage_allocations = 11,
      .storage_allocated_bytes = 12,
      .storage_prefix_copied_bytes = 13,
      .storage_append_copied_bytes = 14,
      .storage_reuse_count = 15,
  };
  EXPECT_EQ(event.op_type, "Relu");
  EXPECT_EQ(event.storage_reuse_count, 15u);
}

TEST(RuntimeEventTest, FieldTypes) {
  static_assert(std::is_same_v<decltype(RuntimeEvent::timestamp_ns), int64_t>);
  static_assert(std::is_same_v<decltype(RuntimeEvent::duration_ns), int64_t>);
  static_assert(std::is_same_v<decltype(RuntimeEvent::node_index), int64_t>);
  static_assert(std::is_same_v<decltype(RuntimeEvent::subgraph_node_index), int64_t>);
  static_assert(std::is_same_v<decltype(RuntimeEvent::allocated_bytes), int64_t>);
  static_assert(std::is_same_v<decltype(RuntimeEvent::peak_bytes), int64_t>);
  static_assert(std::is_same_v<decltype(RuntimeEvent::storage_allocations), uint64_t>);
  static_assert(std::is_same_v<decltype(RuntimeEvent::storage_allocated_bytes), uint64_t>);
  static_assert(std::is_same_v<decltype(RuntimeEvent::storage_prefix_copied_bytes), uint64_t>);
  static_assert(std::is_same_v<decltype(RuntimeEvent::storage_append_copied_bytes), uint64_t>);
  static_assert(std::is_same_v<decltype(RuntimeEvent::storage_reuse_count), uint64_t>);
  SUCCEED();
}

TEST(RuntimeEventTest, Defaults) {
  const RuntimeEvent e;
  EXPECT_EQ(e.action, RuntimeEventAction::kAdd);
  EXPECT_EQ(e.kind, TensorKind::kUnknown);
  EXPECT_EQ(e.timestamp_ns, 0);
  EXPECT_TRUE(e.name.empty());
  EXPECT_EQ(e.data_type, 0);
  EXPECT_TRUE(e.shape.empty());
  EXPECT_TRUE(e.op_domain.empty());
  EXPECT_TRUE(e.op_type.empty());
  EXPECT_TRUE(e.inputs.empty());
  EXPECT_EQ(e.duration_ns, 0);
  EXPECT_EQ(e.node_index, -1);
  EXPECT_EQ(e.subgraph_node_index, -1);
  EXPECT_TRUE(e.subgraph_attr_name.empty());
  EXPECT_EQ(e.allocated_bytes, 0);
  EXPECT_EQ(e.peak_bytes, 0);
  EXPECT_EQ(e.storage_allocations, 0u);
  EXPECT_EQ(e.storage_allocated_bytes, 0u);
  EXPECT_EQ(e.storage_prefix_copied_bytes, 0u);
  EXPECT_EQ(e.storage_append_copied_bytes, 0u);
  EXPECT_EQ(e.storage_reuse_count, 0u);
}

TEST(RuntimeEventTest, StorageEventFromDesignatedInitializer) {
  const uint64_t copied_bytes = 4096;
  const RuntimeEvent e{.action = RuntimeEventAction::kPersistentStorage,
                       .storage_append_copied_bytes = copied_bytes};
  EXPECT_EQ(e.action, RuntimeEventAction::kPersistentStorage);
  EXPECT_EQ(e.storage_append_copied_bytes, 4096u);
  EXPECT_EQ(e.storage_allocations, 0u);
  EXPECT_EQ(e.storage_allocated_bytes, 0u);
  EXPECT_EQ(e.storage_prefix_copied_bytes, 0u);
  EXPECT_EQ(e.storage_reuse_count, 0u);
}

TEST(RuntimeEventTest, ActionValues) {
  EXPECT_EQ(static_cast<int32_t>(RuntimeEventAction::kAdd), 0);
  EXPECT_EQ(static_cast<int32_t>(RuntimeEventAction::kReplace), 1);
  EXPECT_EQ(static_cast<int32_t>(RuntimeEventAction::kRemove), 2);
  EXPECT_EQ(static_cast<int32_t>(RuntimeEventAction::kRunNode), 3);
  EXPECT_EQ(static_cast<int32_t>(RuntimeEventAction::kPersistentStorage), 4);
}

TEST(RuntimeEventTest, ActionNames) {
  EXPECT_EQ(RuntimeEventActionName(RuntimeEventAction::kAdd), "add");
  EXPECT_EQ(RuntimeEventActionName(RuntimeEventAction::kReplace), "replace");
  EXPECT_EQ(RuntimeEventActionName(RuntimeEventAction::kRemove), "remove");
  EXPECT_EQ(RuntimeEventActionName(RuntimeEventAction::kRunNode), "run_node");
  EXPECT_EQ(RuntimeEventActionName(RuntimeEventAction::kPersistentStorage), "persistent_storage");
  EXPECT_EQ(RuntimeEventActionName(static_cast<RuntimeEventAction>(4)), "persistent_storage");
}

TEST(RuntimeEventTest, OtherActionValuesAreUnknown) {
  for (int32_t value : {-1, 5, 6, 100, INT32_MIN, INT32_MAX}) {
    EXPECT_EQ(RuntimeEventActionName(static_cast<RuntimeEventAction>(value)), "unknown") << value;
  }
}

TEST(RuntimeEventTest, TensorKindValuesAndNames) {
  EXPECT_EQ(static_cast<int32_t>(TensorKind::kUnknown), 0);
  EXPECT_EQ(static_cast<int32_t>(TensorKind::kInitializer), 1);
  EXPECT_EQ(static_cast<int32_t>(TensorKind::kInput), 2);
  EXPECT_EQ(static_cast<int32_t>(TensorKind::kIntermediate), 3);
  EXPECT_EQ(static_cast<int32_t>(TensorKind::kOutput), 4);
  EXPECT_EQ(TensorKindName(TensorKind::kUnknown), "unknown");
  EXPECT_EQ(TensorKindName(TensorKind::kInitializer), "initializer");
  EXPECT_EQ(TensorKindName(TensorKind::kInput), "input");
  EXPECT_EQ(TensorKindName(TensorKind::kIntermediate), "intermediate");
  EXPECT_EQ(TensorKindName(TensorKind::kOutput), "output");
  for (int32_t value : {-1, 5, 42}) {
    EXPECT_EQ(TensorKindName(static_cast<TensorKind>(value)), "unknown") << value;
  }
}

TEST(RuntimeEventTest, NodeIndexSentinels) {
  EXPECT_EQ(kNodeIndexNone, -1);
  EXPECT_EQ(kNodeIndexInitializer, -2);
}

}  // namespace
}  // namespace onnx_light::runtime

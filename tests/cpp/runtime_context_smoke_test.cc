#include <gtest/gtest.h>

#include "onnx_light/runtime/runtime_context.h"

namespace onnx_light::runtime {
namespace {

TEST(RuntimeContextSmoke, RecordsOnlyWhenEnabled) {
  RuntimeContext off(KernelContext(DefaultOpset(23)));
  off.RecordEvent({.action = RuntimeEventAction::kPersistentStorage, .storage_append_copied_bytes = 8});
  EXPECT_TRUE(off.events().empty());

  RuntimeContext on(KernelContext(DefaultOpset(23)), {.events_enabled = true});
  on.RecordEvent({.action = RuntimeEventAction::kPersistentStorage, .storage_append_copied_bytes = 8});
  ASSERT_EQ(on.events().size(), 1u);
  EXPECT_EQ(on.events()[0].storage_append_copied_bytes, 8u);
  EXPECT_GT(on.events()[0].timestamp_ns, 0);
}

}  // namespace
}  // namespace onnx_light::runtime

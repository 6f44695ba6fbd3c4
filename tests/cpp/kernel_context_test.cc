// KernelContext and DefaultOpset as RuntimeContext uses them.

#include "onnx_light/runtime/kernel_context.h"

#include <gtest/gtest.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_base.h"
#include "onnx_light/runtime/runtime_context.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

TEST(KernelContextTest, DefaultOpsetRange) {
  const OpsetId opset = DefaultOpset(23);
  EXPECT_EQ(opset.domain, "");
  EXPECT_EQ(opset.version, 23);
  EXPECT_EQ(DefaultOpset(1).version, 1);
  for (int64_t bad : {int64_t{0}, int64_t{-1}, kMaxOnnxOpset + 1}) {
    try {
      DefaultOpset(bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    }
  }
}

TEST(KernelContextTest, DefaultsToTheNewestSupportedOpset) {
  const KernelContext kernels;
  EXPECT_EQ(kernels.opset().domain, "");
  EXPECT_EQ(kernels.opset().version, kMaxOnnxOpset);
  ASSERT_NE(kernels.custom_kernels(), nullptr);
  EXPECT_TRUE(kernels.custom_kernels()->empty());
  // Each default-constructed handle is its own registration scope.
  EXPECT_NE(KernelContext().custom_kernels(), kernels.custom_kernels());

  const RuntimeContext rt;
  EXPECT_EQ(rt.kernel_context().opset().version, kMaxOnnxOpset);
  EXPECT_FALSE(rt.events_enabled());
  const RuntimeContext with_events({}, {.events_enabled = true});
  EXPECT_TRUE(with_events.events_enabled());
  EXPECT_EQ(with_events.kernel_context().opset().version, kMaxOnnxOpset);
}

TEST(KernelContextTest, CopiesShareTheCustomKernelTable) {
  KernelContext a(DefaultOpset(23));
  ASSERT_NE(a.custom_kernels(), nullptr);
  KernelContext b = a;
  EXPECT_EQ(a.custom_kernels(), b.custom_kernels());
  EXPECT_NE(KernelContext(DefaultOpset(23)).custom_kernels(), a.custom_kernels());
}

TEST(KernelContextTest, RelatedRuntimeContextsUseTheSameKernelContext) {
  KernelContext kernels(DefaultOpset(18));
  RuntimeContext rt(kernels);
  EXPECT_EQ(rt.kernel_context().opset().version, 18);
  EXPECT_EQ(rt.kernel_context().custom_kernels(), kernels.custom_kernels());
  for (ChildContextKind kind : testing::kAllChildKinds) {
    RuntimeContext child = rt.CreateChild(kind);
    EXPECT_EQ(child.kernel_context().custom_kernels(), kernels.custom_kernels());
    EXPECT_EQ(child.kernel_context().opset().version, 18);
  }
}

}  // namespace
}  // namespace onnx_light::runtime

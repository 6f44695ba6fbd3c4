// KernelRegistry: opset ranges, and sessions refusing operator versions nobody implements.
#include <gtest/gtest.h>

#include "graph_builder.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_base.h"
#include "onnx_light/runtime/runtime_session.h"

namespace onnx_light::runtime {
namespace {

class MarkerKernel final : public KernelBase {
 public:
  void Run(RuntimeContext&) const override {}
};

KernelFactory Marker() {
  return [](const KernelBuildInfo&) { return std::make_unique<MarkerKernel>(); };
}

TEST(KernelRegistryTest, FindServesOnlyTheStatedRange) {
  KernelRegistry registry;
  registry.Register("", "Op", OpsetRange{1, 12}, Marker());
  registry.Register("", "Op", OpsetRange{13, 23}, Marker());
  const KernelFactory* first = registry.Find("", "Op", 1);
  const KernelFactory* second = registry.Find("", "Op", 13);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_NE(first, second);
  EXPECT_EQ(registry.Find("", "Op", 12), first);
  EXPECT_EQ(registry.Find("", "Op", 23), second);
  EXPECT_EQ(registry.Find("", "Op", 24), nullptr);
  EXPECT_EQ(registry.Find("", "Op", 0), nullptr);
  EXPECT_EQ(registry.Find("ai.onnx", "Op", 20), second);
  EXPECT_TRUE(registry.Contains("", "Op"));
  EXPECT_FALSE(registry.Contains("", "Other"));
  EXPECT_EQ(registry.DescribeVersions("", "Op"), "1-12, 13-23");
}

TEST(KernelRegistryTest, SinceOnlyRegistrationIsOpenEnded) {
  KernelRegistry registry;
  registry.Register("custom", "Op", 3, Marker());
  EXPECT_EQ(registry.Find("custom", "Op", 2), nullptr);
  EXPECT_NE(registry.Find("custom", "Op", 1000), nullptr);
  EXPECT_EQ(registry.DescribeVersions("custom", "Op"), "3+");
  // A later registration from some version on takes over there.
  registry.Register("custom", "Op", 7, Marker());
  EXPECT_NE(registry.Find("custom", "Op", 5), registry.Find("custom", "Op", 7));
}

TEST(KernelRegistryTest, EmptyRangeIsRejected) {
  KernelRegistry registry;
  EXPECT_THROW(registry.Register("", "Op", OpsetRange{5, 4}, Marker()), Error);
  EXPECT_THROW(registry.Register("", "Op", OpsetRange{0, 4}, Marker()), Error);
}

TEST(KernelRegistryTest, BuiltinRangesNeitherOverlapNorExceedTheNewestOpset) {
  const std::vector<KernelRegistry::Key> keys = BuiltinKernels().Keys();
  ASSERT_FALSE(keys.empty());
  for (size_t i = 0; i < keys.size(); ++i) {
    const KernelRegistry::Key& key = keys[i];
    EXPECT_LE(key.versions.since, key.versions.until) << key.op_type;
    if (key.domain.empty()) {
      EXPECT_LE(key.versions.until, kMaxOnnxOpset) << key.op_type;
    }
    if (i + 1 < keys.size() && keys[i + 1].domain == key.domain &&
        keys[i + 1].op_type == key.op_type) {
      EXPECT_LT(key.versions.until, keys[i + 1].versions.since) << key.op_type;
    }
  }
}

std::shared_ptr<const Model> GeluModel(int64_t opset) {
  testing::GraphBuilder builder(opset);
  builder.Input("x", DataType::kFloat, std::vector<int64_t>{4})
      .AddNode("Gelu", {"x"}, {"y"})
      .Output("y", DataType::kFloat);
  return builder.Build();
}

// A model importing an opset whose version of an operator we do not implement is refused when
// the session is built, naming the node, the operator, the imported opset and our versions.
TEST(KernelRegistryTest, SessionRefusesAnUnimplementedOperatorVersion) {
  // Gelu exists from opset 20 on: a model importing opset 19 has no Gelu of that version.
  try {
    RuntimeSession session(GeluModel(19));
    FAIL() << "Gelu at opset 19 must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    const std::string message = e.what();
    EXPECT_NE(message.find("node 'Gelu_0' (Gelu)"), std::string::npos) << message;
    EXPECT_NE(message.find("opset 19"), std::string::npos) << message;
    EXPECT_NE(message.find("20-28"), std::string::npos) << message;
  }
  EXPECT_NO_THROW(RuntimeSession session(GeluModel(20)));
}

// The ranges cover every opset up to the newest for an operator whose newer versions only add
// element types or inputs the kernel implements (here TopK-24, Attention-24/25, Shape-25).
TEST(KernelRegistryTest, ChangedOperatorsServeTheirNewVersions) {
  for (const char* op : {"TopK", "Attention", "Shape", "Constant", "Mod", "BitShift", "Range"}) {
    EXPECT_NE(BuiltinKernels().Find("", op, kMaxOnnxOpset), nullptr) << op;
  }
}

// The opset a KernelContext carries is a label: the model's import decides the kernel version.
// Softmax-11 normalises over the flattened trailing axes, Softmax-13 over one axis.
TEST(KernelRegistryTest, KernelContextOpsetDoesNotSelectTheOperatorVersion) {
  testing::GraphBuilder builder(11);
  builder.Input("x", DataType::kFloat, std::vector<int64_t>{1, 2, 2})
      .AddNode("Softmax", {"x"}, {"y"}, "", {Attribute{.name = "axis", .type = AttributeType::kInt, .i = 1}})
      .Output("y", DataType::kFloat);
  RuntimeSession session(builder.Build());
  for (int64_t label : {int64_t{11}, int64_t{13}, kMaxOnnxOpset}) {
    RuntimeContext rt(KernelContext(DefaultOpset(label)));
    rt.PutTensor("x", testing::FloatTensor({1, 2, 2}, {0.0f, 0.0f, 0.0f, 0.0f}), TensorKind::kInput);
    session.Run(rt);
    // Opset 11: four equal scores share one softmax (0.25 each), whatever the label says.
    EXPECT_EQ(testing::FloatValues(rt.GetTensor("y")), (std::vector<float>{0.25f, 0.25f, 0.25f, 0.25f}))
        << "context labelled " << label;
  }
}

// An operator whose schema has not changed since the kernel's version serves the newest opset.
TEST(KernelRegistryTest, UnchangedOperatorServesTheNewestOpset) {
  testing::GraphBuilder builder(kMaxOnnxOpset);
  builder.Input("x", DataType::kFloat, std::vector<int64_t>{2})
      .AddNode("Relu", {"x"}, {"y"})
      .Output("y", DataType::kFloat);
  RuntimeSession session(builder.Build());
  RuntimeContext rt;  // defaults: newest supported opset, events off
  rt.PutTensor("x", testing::FloatTensor({2}, {-1.0f, 2.0f}), TensorKind::kInput);
  session.Run(rt);
  EXPECT_EQ(testing::FloatValues(rt.GetTensor("y")), (std::vector<float>{0.0f, 2.0f}));
}

}  // namespace
}  // namespace onnx_light::runtime

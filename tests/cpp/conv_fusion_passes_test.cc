// The Conv fusion passes (passes/conv_batchnorm_fusion, conv_add_fusion, conv_activation_fusion): the
// fused node's event and kernel usage, equality with the unfused plan, and the options off.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "graph_builder.h"
#include "onnx_light/runtime/runtime_session.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

using testing::FloatTensor;
using testing::FloatValues;
using testing::GraphBuilder;

std::shared_ptr<const Model> ChainModel() {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{1, 2, 5, 9}).Output("r", DataType::kFloat);
  Attribute pads{.name = "pads", .type = AttributeType::kInts, .ints = {1, 1, 1, 1}};
  b.AddNode("Conv", {"x", "w", "b"}, {"c"}, "", {pads});
  b.AddNode("BatchNormalization", {"c", "scale", "beta", "mean", "var"}, {"bn"});
  b.AddNode("Relu", {"bn"}, {"r"});
  std::vector<float> w(3 * 2 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(static_cast<float>(i)) * 0.5f;
  b.graph().initializers = {{"w", FloatTensor({3, 2, 3, 3}, w)},
                            {"b", FloatTensor({3}, {0.1f, -0.2f, 0.3f})},
                            {"scale", FloatTensor({3}, {1.5f, 0.5f, -1.0f})},
                            {"beta", FloatTensor({3}, {0.0f, 0.25f, -0.5f})},
                            {"mean", FloatTensor({3}, {0.2f, -0.1f, 0.0f})},
                            {"var", FloatTensor({3}, {1.0f, 2.0f, 0.5f})}};
  return b.Build();
}

struct ChainRun {
  std::vector<float> y;
  std::vector<std::pair<std::string, std::string>> nodes;  // run_node events: name, op type
  std::vector<RuntimeEvent> events;                         // the run_node events
  std::vector<std::string> usage;
};

ChainRun RunChain(bool fuse, const std::shared_ptr<const Model>& model = ChainModel()) {
  RuntimeSessionOptions options;
  options.fuse_conv_batchnorm = fuse;
  options.fuse_conv_activation = fuse;
  options.fuse_conv_add = fuse;
  RuntimeSession session(model, options);
  RuntimeContext rt = testing::MakeContext(true);
  rt.set_kernel_usage_enabled(true);
  std::vector<float> x(2 * 5 * 9);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(static_cast<float>(i) * 0.7f);
  rt.PutValue("x", FloatTensor({1, 2, 5, 9}, x), TensorKind::kInput);
  session.Run(rt);
  ChainRun run;
  run.y = FloatValues(*rt.FindTensor("r"));
  for (const RuntimeEvent& e : rt.events()) {
    if (e.action != RuntimeEventAction::kRunNode) continue;
    run.nodes.emplace_back(e.name, e.op_type);
    run.events.push_back(e);
  }
  run.usage = rt.GetKernelUsage();
  return run;
}

TEST(ConvFusionTest, DefaultOn) {
  EXPECT_TRUE(RuntimeSessionOptions{}.fuse_conv_batchnorm);
  EXPECT_TRUE(RuntimeSessionOptions{}.fuse_conv_activation);
  EXPECT_TRUE(RuntimeSessionOptions{}.fuse_conv_add);
}

TEST(ConvFusionTest, FusedMatchesUnfusedAndNamesTheWrittenNodes) {
  const ChainRun fused = RunChain(true);
  const ChainRun unfused = RunChain(false);
  ASSERT_EQ(fused.nodes.size(), 1u);
  EXPECT_EQ(fused.nodes[0].first, "Conv_0");
  EXPECT_EQ(fused.nodes[0].second, "FusedConv");
  EXPECT_EQ(fused.events[0].node_index, 0);
  EXPECT_EQ(fused.events[0].covered_node_indices, std::vector<int64_t>({0, 1, 2}));
  EXPECT_EQ(fused.events[0].covered_node_names,
            std::vector<std::string>({"Conv_0", "BatchNormalization_1", "Relu_2"}));
  ASSERT_EQ(fused.usage.size(), 1u);
  EXPECT_TRUE(fused.usage[0].starts_with("Conv/float32/")) << fused.usage[0];
  EXPECT_TRUE(fused.usage[0].ends_with("+bn+relu")) << fused.usage[0];

  const std::vector<std::pair<std::string, std::string>> all = {
      {"Conv_0", "Conv"}, {"BatchNormalization_1", "BatchNormalization"}, {"Relu_2", "Relu"}};
  EXPECT_EQ(unfused.nodes, all);
  ASSERT_EQ(fused.y.size(), unfused.y.size());
  for (size_t i = 0; i < fused.y.size(); ++i) EXPECT_NEAR(fused.y[i], unfused.y[i], 1e-5f) << i;
}

}  // namespace
}  // namespace onnx_light::runtime

namespace onnx_light::runtime {
namespace {

using testing::FloatTensor;
using testing::FloatValues;
using testing::GraphBuilder;

// x -> Conv -> activation (written as `activation` nodes) -> r, the output RunChain reads.
std::shared_ptr<const Model> ConvThen(const std::string& activation, bool extra_reader = false) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{1, 2, 5, 9}).Output("r", DataType::kFloat);
  if (extra_reader) b.Output("c", DataType::kFloat);
  Attribute pads{.name = "pads", .type = AttributeType::kInts, .ints = {1, 1, 1, 1}};
  b.AddNode("Conv", {"x", "w", "b"}, {"c"}, "", {pads});
  if (activation == "SiLU") {
    b.AddNode("Sigmoid", {"c"}, {"s"});
    b.AddNode("Mul", {"c", "s"}, {"r"});
  } else {
    b.AddNode(activation, {"c"}, {"r"});
  }
  std::vector<float> w(3 * 2 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(static_cast<float>(i)) * 0.5f;
  b.graph().initializers = {{"w", FloatTensor({3, 2, 3, 3}, w)}, {"b", FloatTensor({3}, {0.1f, -0.2f, 0.3f})}};
  return b.Build();
}

TEST(ConvActivationFusionTest, ActivationsRunInTheConvEpilogue) {
  for (const std::string activation : {"Relu", "HardSwish", "Sigmoid", "Tanh", "SiLU"}) {
    SCOPED_TRACE(activation);
    const ChainRun fused = RunChain(true, ConvThen(activation));
    const ChainRun unfused = RunChain(false, ConvThen(activation));
    ASSERT_EQ(fused.nodes.size(), 1u);
    EXPECT_EQ(fused.nodes[0], std::make_pair(std::string("Conv_0"), std::string("FusedConv")));
    const size_t written = activation == "SiLU" ? 3 : 2;
    EXPECT_EQ(unfused.nodes.size(), written);
    EXPECT_EQ(fused.events[0].covered_node_indices.size(), written);
    std::string suffix = "+" + activation;
    for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ASSERT_EQ(fused.usage.size(), 1u);
    EXPECT_TRUE(fused.usage[0].ends_with(suffix)) << fused.usage[0];
    ASSERT_EQ(fused.y.size(), unfused.y.size());
    for (size_t i = 0; i < fused.y.size(); ++i) EXPECT_NEAR(fused.y[i], unfused.y[i], 1e-6f) << i;
  }
}

// x -> Conv -> BatchNormalization -> Add(residual z, a constant here) -> Relu -> r: a resnet block.
std::shared_ptr<const Model> ResidualBlock() {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{1, 2, 5, 9}).Output("r", DataType::kFloat);
  Attribute pads{.name = "pads", .type = AttributeType::kInts, .ints = {1, 1, 1, 1}};
  b.AddNode("Conv", {"x", "w", "b"}, {"c"}, "", {pads});
  b.AddNode("BatchNormalization", {"c", "scale", "beta", "mean", "var"}, {"bn"});
  b.AddNode("Add", {"z", "bn"}, {"s"});
  b.AddNode("Relu", {"s"}, {"r"});
  std::vector<float> w(3 * 2 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(static_cast<float>(i)) * 0.5f;
  std::vector<float> z(3 * 5 * 9);
  for (size_t i = 0; i < z.size(); ++i) z[i] = std::cos(static_cast<float>(i) * 1.3f);
  b.graph().initializers = {{"w", FloatTensor({3, 2, 3, 3}, w)},
                            {"b", FloatTensor({3}, {0.1f, -0.2f, 0.3f})},
                            {"scale", FloatTensor({3}, {1.5f, 0.5f, -1.0f})},
                            {"beta", FloatTensor({3}, {0.0f, 0.25f, -0.5f})},
                            {"mean", FloatTensor({3}, {0.2f, -0.1f, 0.0f})},
                            {"var", FloatTensor({3}, {1.0f, 2.0f, 0.5f})},
                            {"z", FloatTensor({1, 3, 5, 9}, z)}};
  return b.Build();
}

TEST(ConvAddFusionTest, ResidualBlockIsOneNodeCoveringEveryWrittenNode) {
  const ChainRun fused = RunChain(true, ResidualBlock());
  const ChainRun unfused = RunChain(false, ResidualBlock());
  ASSERT_EQ(fused.nodes.size(), 1u);
  EXPECT_EQ(fused.nodes[0], std::make_pair(std::string("Conv_0"), std::string("FusedConv")));
  EXPECT_EQ(fused.events[0].covered_node_indices, std::vector<int64_t>({0, 1, 2, 3}));
  EXPECT_EQ(fused.events[0].covered_node_names,
            std::vector<std::string>({"Conv_0", "BatchNormalization_1", "Add_2", "Relu_3"}));
  ASSERT_EQ(fused.usage.size(), 1u);
  EXPECT_TRUE(fused.usage[0].ends_with("+bn+add+relu")) << fused.usage[0];
  EXPECT_EQ(unfused.nodes.size(), 4u);
  ASSERT_EQ(fused.y.size(), unfused.y.size());
  for (size_t i = 0; i < fused.y.size(); ++i) EXPECT_NEAR(fused.y[i], unfused.y[i], 1e-5f) << i;
}

TEST(ConvActivationFusionTest, AConvOutputReadElsewhereIsNotFused) {
  const ChainRun run = RunChain(true, ConvThen("Relu", /*extra_reader=*/true));
  EXPECT_EQ(run.nodes.size(), 2u);
  EXPECT_EQ(run.nodes[0].second, "Conv");
}

}  // namespace
}  // namespace onnx_light::runtime

// FusedConv (domain ai.onnx_light.fused) against the unfused Conv -> (Add Z) -> activation
// nodes, for every activation, with and without the residual, on each Conv path (depthwise,
// direct, im2col, 1x1); its kernel-usage name; and the errors it owes the user.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "error_message.h"
#include "graph_builder.h"
#include "kernels/nn/conv_direct.h"
#include "kernels/nn/conv_kernels.h"
#include "kernels/registry/fused_kernels.h"
#include "model_test_util.h"
#include "onnx_light/runtime/runtime_session.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

// A model cannot use the fused domain (the plan refuses it), so these tests reach the FusedConv
// kernel through a test domain served by the same factory.
constexpr char kTestDomain[] = "test.fused";
const bool kTestDomainRegistered = [] {
  RegisterGlobalKernel(kTestDomain, "FusedConv", *FusedKernels().Find(kFusedDomain, "FusedConv", 1));
  return true;
}();

using testing::FloatTensor;
using testing::FloatValues;
using testing::GraphBuilder;

Attribute Ints(std::string name, std::vector<int64_t> v) {
  return {.name = std::move(name), .type = AttributeType::kInts, .ints = std::move(v)};
}
Attribute Int(std::string name, int64_t v) { return {.name = std::move(name), .type = AttributeType::kInt, .i = v}; }
Attribute Floats(std::string name, std::vector<float> v) {
  return {.name = std::move(name), .type = AttributeType::kFloats, .floats = std::move(v)};
}
Attribute Float(std::string name, float v) {
  return {.name = std::move(name), .type = AttributeType::kFloat, .f = v};
}
Attribute String(std::string name, std::string v) {
  return {.name = std::move(name), .type = AttributeType::kString, .s = std::move(v)};
}

struct ConvShape {
  std::string label;
  std::vector<int64_t> x, w;
  std::vector<Attribute> attrs;
  std::string path_prefix;  // the start of the Conv path name
};

std::vector<ConvShape> Shapes() {
  return {
      // 40 columns: the plane kernel
      {"depthwise", {1, 6, 9, 40}, {6, 1, 3, 3}, {Int("group", 6), Ints("pads", {1, 1, 1, 1})}, "depthwise-"},
      // 7 columns: the channels-in-lanes kernel on AVX-512 CPUs (18 channels: a block and a tail)
      {"depthwise narrow", {2, 18, 9, 7}, {18, 1, 3, 3}, {Int("group", 18), Ints("pads", {1, 1, 1, 1})},
       "depthwise-"},
      {"grouped", {1, 6, 7, 9}, {9, 2, 3, 3}, {Int("group", 3), Ints("strides", {2, 1})}, "grouped-"},
      {"dense", {1, 3, 7, 19}, {5, 3, 3, 3}, {Ints("pads", {1, 1, 1, 1})}, ""},
      {"strided", {2, 3, 9, 11}, {4, 3, 3, 3}, {Ints("strides", {2, 2}), Ints("pads", {1, 1, 1, 1})},
       "im2col-"},  // avx512 or blas
      {"pointwise", {1, 5, 6, 7}, {7, 5, 1, 1}, {}, "1x1-"},  // avx512 or blas
      // 216 taps at strides (2, 1): the channels-in-lanes kernel on AVX-512 CPUs (33 channels: a
      // tile of 32 and one of 1; two passes of 12 input channels)
      {"lanes", {1, 24, 9, 31}, {33, 24, 3, 3}, {Ints("strides", {2, 1}), Ints("pads", {1, 1, 1, 1})},
       DirectConvAvailable() ? "direct-lanes-" : "im2col-"},
      // 5.8 MiB of columns at stride 3 over 5 channels (no direct kernel): bands of output rows,
      // each writing its rows of Y and reading Z's
      {"strided in bands", {1, 5, 230, 230}, {4, 5, 7, 7}, {Ints("strides", {3, 3}), Ints("pads", {3, 3, 3, 3})},
       "im2col-"},
      // A stem (3 channels, 7x7, stride 2): the direct kernel over column phases on AVX-512 CPUs
      {"strided stem", {1, 3, 41, 38}, {10, 3, 7, 7}, {Ints("strides", {2, 2}), Ints("pads", {3, 3, 3, 3})},
       DirectConvAvailable() ? "direct-strided-" : "im2col-"},
  };
}

struct ActivationCase {
  std::string name;
  std::vector<float> params;
};

std::vector<ActivationCase> Activations() {
  return {{"", {}},
          {"Relu", {}},
          {"LeakyRelu", {0.2f}},
          {"Clip", {-0.5f, 0.7f}},
          {"HardSigmoid", {0.3f, 0.4f}},
          {"HardSwish", {}},
          {"Sigmoid", {}},
          {"SiLU", {}},
          {"Tanh", {}}};
}

std::vector<int64_t> OutputShape(const ConvShape& s) {
  // Every shape above keeps its size except the stride-2 ones (padded alike on both sides).
  std::vector<int64_t> out = {s.x[0], s.w[0], s.x[2], s.x[3]};
  int64_t pad = 0;
  for (const Attribute& a : s.attrs) {
    if (a.name == "pads") pad = a.ints[0];
  }
  for (const Attribute& a : s.attrs) {
    if (a.name != "strides") continue;
    for (int i = 0; i < 2; ++i) {
      out[2 + i] = (s.x[2 + i] + 2 * pad - s.w[2 + i]) / a.ints[i] + 1;
    }
  }
  return out;
}

void AddWeights(GraphBuilder& b, const ConvShape& s) {
  int64_t wn = 1;
  for (int64_t d : s.w) wn *= d;
  b.graph().initializers = {{"w", FloatTensor(s.w, testing::RandomFloats(static_cast<size_t>(wn), 11))},
                            {"b", FloatTensor({s.w[0]}, testing::RandomFloats(static_cast<size_t>(s.w[0]), 12))}};
}

std::shared_ptr<const Model> FusedModel(const ConvShape& s, const ActivationCase& act, bool residual,
                                        const std::string& suffix) {
  GraphBuilder b;
  b.Import(kTestDomain, 1);
  b.Input("x", DataType::kFloat, s.x).Output("y", DataType::kFloat);
  if (residual) b.Input("z", DataType::kFloat, OutputShape(s));
  std::vector<Attribute> attrs = s.attrs;
  attrs.push_back(String("activation", act.name));
  if (!act.params.empty()) attrs.push_back(Floats("activation_params", act.params));
  attrs.push_back(String("usage_suffix", suffix));
  std::vector<std::string> inputs = {"x", "w", "b"};
  if (residual) inputs.push_back("z");
  b.AddNode("FusedConv", inputs, {"y"}, kTestDomain, attrs);
  AddWeights(b, s);
  return b.Build();
}

std::shared_ptr<const Model> UnfusedModel(const ConvShape& s, const ActivationCase& act, bool residual) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, s.x).Output("y", DataType::kFloat);
  if (residual) b.Input("z", DataType::kFloat, OutputShape(s));
  b.AddNode("Conv", {"x", "w", "b"}, {"c"}, "", s.attrs);
  std::string v = "c";
  if (residual) {
    b.AddNode("Add", {"c", "z"}, {"s"});
    v = "s";
  }
  AddWeights(b, s);
  if (act.name.empty()) {
    b.AddNode("Identity", {v}, {"y"});
  } else if (act.name == "SiLU") {
    b.AddNode("Sigmoid", {v}, {"sig"});
    b.AddNode("Mul", {v, "sig"}, {"y"});
  } else if (act.name == "Clip") {
    b.AddNode("Clip", {v, "lo", "hi"}, {"y"});
    b.graph().initializers.push_back({"lo", FloatTensor({}, {act.params[0]})});
    b.graph().initializers.push_back({"hi", FloatTensor({}, {act.params[1]})});
  } else if (act.name == "LeakyRelu") {
    b.AddNode(act.name, {v}, {"y"}, "", {Float("alpha", act.params[0])});
  } else if (act.name == "HardSigmoid") {
    b.AddNode(act.name, {v}, {"y"}, "", {Float("alpha", act.params[0]), Float("beta", act.params[1])});
  } else {
    b.AddNode(act.name, {v}, {"y"});
  }
  return b.Build();
}

struct RunResult {
  std::vector<float> y;
  std::vector<std::string> usage;
};

// `rewrite` false runs the written nodes: the unfused reference must not be fused by the
// session's own Conv + Add and Conv + activation passes.
RunResult RunModel(const std::shared_ptr<const Model>& model, const Tensor& x, const Tensor* z, int threads = 1,
                   bool rewrite = true) {
  RuntimeSessionOptions options{.num_threads = threads};
  options.fuse_conv_activation = rewrite;
  options.fuse_conv_add = rewrite;
  RuntimeSession session(model, options);
  RuntimeContext rt = testing::MakeContext();
  rt.set_kernel_usage_enabled(true);
  rt.PutValue("x", x, TensorKind::kInput);
  if (z != nullptr) rt.PutValue("z", *z, TensorKind::kInput);
  session.Run(rt);
  return {FloatValues(*rt.FindTensor("y")), rt.GetKernelUsage()};
}

Tensor RandomTensor(const std::vector<int64_t>& shape, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return FloatTensor(shape, testing::RandomFloats(static_cast<size_t>(n), seed, -3.0f, 3.0f));
}

TEST(FusedConvTest, EveryActivationWithAndWithoutResidualMatchesTheUnfusedNodes) {
  for (const ConvShape& s : Shapes()) {
    const Tensor x = RandomTensor(s.x, 1);
    const Tensor z = RandomTensor(OutputShape(s), 2);
    for (const ActivationCase& act : Activations()) {
      for (const bool residual : {false, true}) {
        SCOPED_TRACE(s.label + " activation '" + act.name + "'" + (residual ? " with Z" : ""));
        const RunResult fused = RunModel(FusedModel(s, act, residual, "+test"), x, residual ? &z : nullptr);
        const RunResult unfused = RunModel(UnfusedModel(s, act, residual), x, residual ? &z : nullptr, 1, false);
        ASSERT_EQ(fused.y.size(), unfused.y.size());
        for (size_t i = 0; i < fused.y.size(); ++i) {
          ASSERT_NEAR(fused.y[i], unfused.y[i], 1e-5f * (1.0f + std::abs(unfused.y[i]))) << "element " << i;
        }
        ASSERT_EQ(fused.usage.size(), 1u);
        const std::string& name = fused.usage[0];
        EXPECT_TRUE(name.starts_with("Conv/float32/" + s.path_prefix)) << name;
        EXPECT_TRUE(name.ends_with("+test")) << name;
        EXPECT_NE(std::find(unfused.usage.begin(), unfused.usage.end(), name.substr(0, name.size() - 5)),
                  unfused.usage.end())
            << "the fused node took another Conv path than the unfused Conv: " << name;
      }
    }
  }
}

TEST(FusedConvTest, ThreadsGiveTheSameResult) {
  const ConvShape s{"depthwise", {2, 16, 30, 30}, {32, 1, 5, 5}, {Int("group", 16), Ints("pads", {2, 2, 2, 2})}, ""};
  const Tensor x = RandomTensor(s.x, 3);
  const Tensor z = RandomTensor(OutputShape(s), 4);
  const ActivationCase act{"HardSwish", {}};
  const RunResult one = RunModel(FusedModel(s, act, true, ""), x, &z, 1);
  const RunResult two = RunModel(FusedModel(s, act, true, ""), x, &z, 2);
  EXPECT_EQ(one.y, two.y);
}

TEST(FusedConvTest, OptionalBiasMayBeOmitted) {
  GraphBuilder b;
  b.Import(kTestDomain, 1);
  b.Input("x", DataType::kFloat, std::vector<int64_t>{1, 2, 4, 4}).Output("y", DataType::kFloat);
  b.Input("z", DataType::kFloat, std::vector<int64_t>{1, 2, 4, 4});
  b.AddNode("FusedConv", {"x", "w", "", "z"}, {"y"}, kTestDomain,
            {Int("group", 2), Ints("pads", {1, 1, 1, 1}), String("activation", "Relu")});
  b.graph().initializers = {{"w", FloatTensor({2, 1, 3, 3}, std::vector<float>(18, 1.0f))}};
  const Tensor x = FloatTensor({1, 2, 4, 4}, std::vector<float>(32, 1.0f));
  const Tensor z = FloatTensor({1, 2, 4, 4}, std::vector<float>(32, -5.0f));
  const RunResult r = RunModel(b.Build(), x, &z);
  // Corners see 4 taps, edges 6, the interior 9: minus 5 and Relu.
  EXPECT_EQ(r.y[0], 0.0f);
  EXPECT_EQ(r.y[1], 1.0f);
  EXPECT_EQ(r.y[5], 4.0f);
}

std::shared_ptr<const Model> SimpleFused(DataType type, std::vector<int64_t> z_shape, std::string activation,
                                         std::vector<float> params = {}) {
  GraphBuilder b;
  b.Import(kTestDomain, 1);
  b.Input("x", type, std::vector<int64_t>{1, 2, 5, 5}).Input("w", type, std::vector<int64_t>{3, 2, 3, 3});
  b.Output("y", type);
  std::vector<std::string> inputs = {"x", "w", ""};
  if (!z_shape.empty()) {
    b.Input("z", DataType::kFloat, z_shape);
    inputs.push_back("z");
  }
  std::vector<Attribute> attrs = {String("activation", std::move(activation))};
  if (!params.empty()) attrs.push_back(Floats("activation_params", std::move(params)));
  b.AddNode("FusedConv", inputs, {"y"}, kTestDomain, attrs);
  return b.Build();
}

TEST(FusedConvTest, ResidualOfAnotherShapeIsAnErrorNamingTheNode) {
  const auto model = SimpleFused(DataType::kFloat, {1, 3, 3, 4}, "Relu");
  RuntimeSession session(model);
  RuntimeContext rt = testing::MakeContext();
  rt.PutValue("x", RandomTensor({1, 2, 5, 5}, 1), TensorKind::kInput);
  rt.PutValue("w", RandomTensor({3, 2, 3, 3}, 2), TensorKind::kInput);
  rt.PutValue("z", RandomTensor({1, 3, 3, 4}, 3), TensorKind::kInput);
  const std::string message = testing::InvalidArgumentMessage([&] { session.Run(rt); });
  EXPECT_NE(message.find("FusedConv_0"), std::string::npos) << message;
  EXPECT_NE(message.find("Z"), std::string::npos) << message;
  EXPECT_NE(message.find("[1, 3, 3, 3]"), std::string::npos) << message;
  EXPECT_NE(message.find("[1, 3, 3, 4]"), std::string::npos) << message;
}

TEST(FusedConvTest, OtherElementTypesAreAnErrorNamingNodeInputAndType) {
  const auto model = SimpleFused(DataType::kDouble, {}, "Relu");
  RuntimeSession session(model);
  RuntimeContext rt = testing::MakeContext();
  Tensor x = Tensor::Allocate(DataType::kDouble, {1, 2, 5, 5}, MakeCpuAllocator());
  Tensor w = Tensor::Allocate(DataType::kDouble, {3, 2, 3, 3}, MakeCpuAllocator());
  rt.PutValue("x", x, TensorKind::kInput);
  rt.PutValue("w", w, TensorKind::kInput);
  const Error error = testing::CatchError([&] { session.Run(rt); });
  const std::string message = error.what();
  EXPECT_NE(message.find("FusedConv_0"), std::string::npos) << message;
  EXPECT_NE(message.find("input 0"), std::string::npos) << message;
  EXPECT_NE(message.find("float64"), std::string::npos) << message;
}

TEST(FusedConvTest, BadActivationAttributesAreBuildErrors) {
  std::string message = testing::InvalidArgumentMessage([&] { RuntimeSession s(SimpleFused(DataType::kFloat, {}, "Gelu")); });
  EXPECT_NE(message.find("FusedConv_0"), std::string::npos) << message;
  EXPECT_NE(message.find("Gelu"), std::string::npos) << message;
  message = testing::InvalidArgumentMessage(
      [&] { RuntimeSession s(SimpleFused(DataType::kFloat, {}, "LeakyRelu", {0.1f, 0.2f})); });
  EXPECT_NE(message.find("activation_params"), std::string::npos) << message;
  EXPECT_NE(message.find("at most 1"), std::string::npos) << message;
}

}  // namespace
}  // namespace onnx_light::runtime

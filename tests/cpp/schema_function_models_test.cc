// Models whose operators have no kernel and run the function body onnx defines for them,
// checked against values computed here by plain loops (no Python, no onnx).

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "graph_builder.h"
#include "loop_models.h"
#include "model_test_util.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/runtime_session.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

using testing::FloatTensor;
using testing::FloatValues;
using testing::GraphBuilder;

Attribute FloatAttr(std::string name, float value) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kFloat;
  a.f = value;
  return a;
}

Attribute IntAttr(std::string name, int64_t value) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kInt;
  a.i = value;
  return a;
}

Attribute IntsAttr(std::string name, std::vector<int64_t> values) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kInts;
  a.ints = std::move(values);
  return a;
}

Attribute StringAttr(std::string name, std::string value) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kString;
  a.s = std::move(value);
  return a;
}

Tensor Int64Tensor(Shape shape, std::vector<int64_t> values) {
  Tensor t = Tensor::Allocate(DataType::kInt64, std::move(shape), MakeCpuAllocator());
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return t;
}

struct Feed {
  std::string name;
  Tensor value;
};

// Runs a one-node model `op` over `feeds` (declared as graph inputs with their shapes) and
// returns output `y`.
std::vector<float> RunNode(std::string op, std::vector<Feed> feeds, std::vector<Attribute> attrs = {},
                           int64_t opset = 23, Shape* shape = nullptr) {
  GraphBuilder b(opset);
  std::vector<std::string> inputs;
  for (const Feed& f : feeds) {
    b.Input(f.name, f.value.dtype(), f.value.shape());
    inputs.push_back(f.name);
  }
  b.Output("y", DataType::kFloat).AddNode(std::move(op), inputs, {"y"}, "", std::move(attrs));
  RuntimeSession session(b.Build());
  RuntimeContext rt = testing::MakeContext();
  for (const Feed& f : feeds) rt.PutTensor(f.name, f.value, TensorKind::kInput);
  session.Run(rt);
  const Tensor* y = rt.FindTensor("y");
  EXPECT_NE(y, nullptr);
  if (y == nullptr) return {};
  EXPECT_EQ(y->dtype(), DataType::kFloat);
  if (shape != nullptr) *shape = y->shape();
  return FloatValues(*y);
}

void ExpectNear(const std::vector<float>& actual, const std::vector<double>& expected, double tol) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], tol * std::max(1.0, std::abs(expected[i]))) << "element " << i;
  }
}

const std::vector<float> kX = {-3.0f, -1.25f, -0.5f, 0.0f, 0.25f, 0.75f, 1.5f, 4.0f};

TEST(SchemaFunctionModels, Softsign) {
  std::vector<double> expected;
  for (float x : kX) expected.push_back(x / (1.0 + std::abs(x)));
  ExpectNear(RunNode("Softsign", {{"x", FloatTensor({8}, kX)}}), expected, 1e-6);
}

TEST(SchemaFunctionModels, CeluWithDefaultAndGivenAlpha) {
  for (std::optional<float> alpha : {std::optional<float>{}, std::optional<float>{0.5f}, std::optional<float>{2.0f}}) {
    const double a = alpha.value_or(1.0f);
    std::vector<double> expected;
    for (float x : kX) expected.push_back(x > 0 ? x : a * std::expm1(x / a));
    std::vector<Attribute> attrs;
    if (alpha) attrs.push_back(FloatAttr("alpha", *alpha));
    ExpectNear(RunNode("Celu", {{"x", FloatTensor({2, 4}, kX)}}, attrs), expected, 1e-6);
  }
}

TEST(SchemaFunctionModels, ThresholdedRelu) {
  for (std::optional<float> alpha : {std::optional<float>{}, std::optional<float>{0.5f}}) {
    const float a = alpha.value_or(1.0f);
    std::vector<double> expected;
    for (float x : kX) expected.push_back(x > a ? x : 0.0);
    std::vector<Attribute> attrs;
    if (alpha) attrs.push_back(FloatAttr("alpha", *alpha));
    ExpectNear(RunNode("ThresholdedRelu", {{"x", FloatTensor({8}, kX)}}, attrs), expected, 0);
  }
}

TEST(SchemaFunctionModels, ShrinkFromOpset18) {
  struct Case {
    std::optional<float> lambd, bias;
  };
  for (const Case& c : {Case{}, Case{1.0f, 0.5f}}) {
    const float lambd = c.lambd.value_or(0.5f);
    const float bias = c.bias.value_or(0.0f);
    std::vector<double> expected;
    for (float x : kX) expected.push_back(x < -lambd ? x + bias : x > lambd ? x - bias : 0.0);
    std::vector<Attribute> attrs;
    if (c.lambd) attrs = {FloatAttr("lambd", *c.lambd), FloatAttr("bias", *c.bias)};
    ExpectNear(RunNode("Shrink", {{"x", FloatTensor({8}, kX)}}, attrs, 18), expected, 1e-7);
  }
}

TEST(SchemaFunctionModels, MeanVarianceNormalizationOverDefaultAxes) {
  // (N=2, C=2, H=1, W=3): statistics per channel over N, H and W.
  const std::vector<float> x = {1, 2, 3, -1, 0, 5, 4, 4, 6, 2, -2, 0};
  std::vector<double> expected(x.size());
  for (int c = 0; c < 2; ++c) {
    double sum = 0, sum_sq = 0;
    for (int n = 0; n < 2; ++n) {
      for (int w = 0; w < 3; ++w) {
        const double v = x[(n * 2 + c) * 3 + w];
        sum += v;
        sum_sq += v * v;
      }
    }
    const double mean = sum / 6, std_dev = std::sqrt(sum_sq / 6 - mean * mean);
    for (int n = 0; n < 2; ++n) {
      for (int w = 0; w < 3; ++w) {
        const int i = (n * 2 + c) * 3 + w;
        expected[i] = (x[i] - mean) / (std_dev + 1e-9);
      }
    }
  }
  for (int64_t opset : {13, 18, 23}) {  // the opset-13 and opset-18 bodies
    SCOPED_TRACE(opset);
    ExpectNear(RunNode("MeanVarianceNormalization", {{"x", FloatTensor({2, 2, 1, 3}, x)}}, {}, opset),
               expected, 1e-5);
  }
}

TEST(SchemaFunctionModels, HannWindowPeriodicAndSymmetric) {
  for (int64_t periodic : {1, 0}) {
    const int n = 8;
    std::vector<double> expected;
    const double denominator = periodic ? n : n - 1;
    for (int i = 0; i < n; ++i) {
      expected.push_back(0.5 - 0.5 * std::cos(2 * std::numbers::pi * i / denominator));
    }
    std::vector<Attribute> attrs;
    if (periodic == 0) attrs.push_back(IntAttr("periodic", 0));  // 1 is the default
    ExpectNear(RunNode("HannWindow", {{"size", Int64Tensor({}, {n})}}, attrs, 17), expected, 1e-6);
  }
}

TEST(SchemaFunctionModels, CenterCropPadCropsAndPadsAroundTheCentre) {
  // (4, 3) -> (2, 4): rows 1..2 are kept; one zero column is added after the three.
  const std::vector<float> x = {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32};
  Shape shape;
  std::vector<float> y =
      RunNode("CenterCropPad", {{"x", FloatTensor({4, 3}, x)}, {"shape", Int64Tensor({2}, {2, 4})}}, {}, 18, &shape);
  EXPECT_EQ(shape, (Shape{2, 4}));
  ExpectNear(y, {10, 11, 12, 0, 20, 21, 22, 0}, 0);

  // Only axis -1 (3 -> 6): one zero column before, two after.
  y = RunNode("CenterCropPad", {{"x", FloatTensor({4, 3}, x)}, {"shape", Int64Tensor({1}, {6})}},
              {IntsAttr("axes", {-1})}, 18, &shape);
  EXPECT_EQ(shape, (Shape{4, 6}));
  std::vector<double> expected;
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 6; ++c) expected.push_back(c >= 1 && c <= 3 ? x[r * 3 + c - 1] : 0.0);
  }
  ExpectNear(y, expected, 0);
}

// ---- losses ----------------------------------------------------------------------------------

// x: (N=4, C=3) log-probabilities or scores; targets with class 2 as the ignored one where used.
const std::vector<float> kScores = {-0.5f, 1.0f, 0.25f, 2.0f, -1.0f, 0.0f,
                                    0.3f,  0.3f, -2.0f, 1.5f, 0.5f,  -0.25f};
const std::vector<int64_t> kTargets = {1, 0, 2, 1};
const std::vector<float> kWeights = {0.5f, 2.0f, 1.25f};

struct LossCase {
  std::string reduction;
  bool weighted;
  std::optional<int64_t> ignore_index;
};

// What NegativeLogLikelihoodLoss gives for log-probabilities `logp` (N, 3).
std::vector<double> ExpectedNll(const std::vector<double>& logp, const LossCase& c) {
  std::vector<double> losses;
  double loss_sum = 0, weight_sum = 0;
  for (size_t n = 0; n < kTargets.size(); ++n) {
    const int64_t t = kTargets[n];
    const double w = (c.ignore_index && t == *c.ignore_index) ? 0.0 : c.weighted ? kWeights[t] : 1.0;
    losses.push_back(-logp[n * 3 + t] * w);
    loss_sum += losses.back();
    weight_sum += w;
  }
  if (c.reduction == "none") return losses;
  if (c.reduction == "sum") return {loss_sum};
  return {loss_sum / weight_sum};
}

std::vector<double> LogSoftmaxRows(const std::vector<float>& x) {
  std::vector<double> out(x.size());
  for (size_t n = 0; n < x.size() / 3; ++n) {
    double sum = 0;
    for (int c = 0; c < 3; ++c) sum += std::exp(static_cast<double>(x[n * 3 + c]));
    for (int c = 0; c < 3; ++c) out[n * 3 + c] = x[n * 3 + c] - std::log(sum);
  }
  return out;
}

std::vector<float> RunLoss(const std::string& op, const LossCase& c, int64_t opset = 23) {
  std::vector<Feed> feeds = {{"x", FloatTensor({4, 3}, kScores)}, {"t", Int64Tensor({4}, kTargets)}};
  if (c.weighted) feeds.push_back({"w", FloatTensor({3}, kWeights)});
  std::vector<Attribute> attrs;
  if (c.reduction != "mean") attrs.push_back(StringAttr("reduction", c.reduction));  // default mean
  if (c.ignore_index) attrs.push_back(IntAttr("ignore_index", *c.ignore_index));
  return RunNode(op, std::move(feeds), std::move(attrs), opset);
}

const std::vector<LossCase> kLossCases = {
    {"mean", false, {}}, {"sum", false, {}},  {"none", false, {}}, {"mean", true, {}},
    {"sum", true, {}},   {"none", true, {}},  {"mean", false, 2},  {"sum", false, 2},
    {"none", false, 2},  {"mean", true, 2},   {"none", true, 0},   {"mean", true, 7},
};

std::string Describe(const LossCase& c) {
  return c.reduction + (c.weighted ? " weighted" : "") +
         (c.ignore_index ? " ignore_index=" + std::to_string(*c.ignore_index) : "");
}

TEST(SchemaFunctionModels, NegativeLogLikelihoodLoss) {
  const std::vector<double> logp(kScores.begin(), kScores.end());
  for (const LossCase& c : kLossCases) {
    SCOPED_TRACE(Describe(c));
    ExpectNear(RunLoss("NegativeLogLikelihoodLoss", c), ExpectedNll(logp, c), 1e-6);
  }
}

TEST(SchemaFunctionModels, SoftmaxCrossEntropyLoss) {
  const std::vector<double> logp = LogSoftmaxRows(kScores);
  for (int64_t opset : {13, 23}) {
    for (const LossCase& c : kLossCases) {
      SCOPED_TRACE(Describe(c) + " opset " + std::to_string(opset));
      ExpectNear(RunLoss("SoftmaxCrossEntropyLoss", c, opset), ExpectedNll(logp, c), 1e-6);
    }
  }
}

TEST(SchemaFunctionModels, SoftmaxCrossEntropyLossLogProbOutput) {
  GraphBuilder b(23);
  b.Input("x", DataType::kFloat, Shape{4, 3})
      .Input("t", DataType::kInt64, Shape{4})
      .Output("log_prob", DataType::kFloat)
      .AddNode("SoftmaxCrossEntropyLoss", {"x", "t"}, {"", "log_prob"});
  RuntimeSession session(b.Build());
  RuntimeContext rt = testing::MakeContext();
  rt.PutTensor("x", FloatTensor({4, 3}, kScores), TensorKind::kInput);
  rt.PutTensor("t", Int64Tensor({4}, kTargets), TensorKind::kInput);
  session.Run(rt);
  ASSERT_NE(rt.FindTensor("log_prob"), nullptr);
  ExpectNear(FloatValues(*rt.FindTensor("log_prob")), LogSoftmaxRows(kScores), 1e-6);
}

// ---- events, errors --------------------------------------------------------------------------

TEST(SchemaFunctionModels, BodyNodesRunInAFunctionChildContext) {
  GraphBuilder b(23);
  b.Input("x", DataType::kFloat, Shape{8}).Output("y", DataType::kFloat).AddNode("Softsign", {"x"}, {"y"});
  RuntimeSession session(b.Build());
  RuntimeContext rt = testing::MakeContext(true);
  rt.set_kernel_usage_enabled(true);
  rt.PutTensor("x", FloatTensor({8}, kX), TensorKind::kInput);
  session.Run(rt);
  std::vector<std::pair<std::string, int64_t>> ran;
  for (const RuntimeEvent& e : rt.events()) {
    if (e.action == RuntimeEventAction::kRunNode) ran.emplace_back(e.op_type, e.node_index);
  }
  // The body (Constant, CastLike, Abs, Add, Div) at its own positions, then the call itself.
  ASSERT_EQ(ran.size(), 6u);
  EXPECT_EQ(ran.back(), (std::pair<std::string, int64_t>{"Softsign", 0}));
  EXPECT_EQ(ran[4], (std::pair<std::string, int64_t>{"Div", 4}));
  for (const std::string& usage : rt.GetKernelUsage()) {
    EXPECT_FALSE(usage.starts_with("Softsign/")) << "no kernel of its own: " << usage;
  }
}

TEST(SchemaFunctionModels, BodyWithoutKernelNamesTheCallAndTheMissingOperator) {
  // Every operator onnx's bodies use has a kernel now (DynamicQuantizeLinear's QuantizeLinear
  // was the last), so the model shadows one: a model-local "Abs" (resolved before the built-in
  // kernel) whose body calls an operator nothing implements. Softsign's body calls Abs.
  GraphBuilder b(22);
  b.Input("x", DataType::kFloat, Shape{3}).Output("y", DataType::kFloat).AddNode("Softsign", {"x"}, {"y"});
  auto model = std::const_pointer_cast<Model>(b.Build());
  Function abs;
  abs.name = "Abs";
  abs.inputs = {"X"};
  abs.outputs = {"Y"};
  abs.nodes = {testing::MakeNode("missing", "NoSuchOp", {"X"}, {"Y"}, {}, "test.none")};
  abs.opset_imports = {{"", 22}, {"test.none", 1}};
  model->functions.push_back(std::move(abs));
  const Error error = testing::CatchError([&] { RuntimeSession session(model); });
  EXPECT_EQ(error.code(), ErrorCode::kUnimplemented);
  const std::string message = error.what();
  EXPECT_NE(message.find("(Softsign)"), std::string::npos) << message;
  EXPECT_NE(message.find("function body"), std::string::npos) << message;
  EXPECT_NE(message.find("no kernel for operator 'test.none::NoSuchOp'"), std::string::npos) << message;
}

TEST(SchemaFunctionModels, VersionWithoutBodyKeepsTheRefusal) {
  GraphBuilder b(17);
  // Softsign-1 has a body only from opset 18 (and no kernel).
  b.Input("x", DataType::kFloat, Shape{3}).Output("y", DataType::kFloat).AddNode("Softsign", {"x"}, {"y"});
  const Error error = testing::CatchError([&] { RuntimeSession session(b.Build()); });
  EXPECT_EQ(error.code(), ErrorCode::kUnimplemented);
  EXPECT_EQ(std::string(error.what()), "node 'Softsign_0' (Softsign): no kernel for operator 'Softsign' at opset 17");
}

// ---- SequenceMap ------------------------------------------------------------------------------

TypeInfo SequenceType(DataType element) {
  TypeInfo info;
  info.kind = TypeInfo::Kind::kSequence;
  info.inner = std::make_shared<const TypeInfo>(GraphBuilder::TensorType(element, std::nullopt));
  return info;
}

// ys = SequenceMap(xs, scale) with body y = x * scale; `scale` a tensor or a sequence.
std::shared_ptr<const Model> SequenceMapModel(bool scale_is_sequence, bool declare_scale = true) {
  auto body = std::make_shared<Graph>();
  body->name = "body";
  body->inputs = {{"x_i", GraphBuilder::TensorType(DataType::kFloat, std::nullopt)},
                  {"scale_i", GraphBuilder::TensorType(DataType::kFloat, std::nullopt)}};
  body->outputs = {{"y_i", GraphBuilder::TensorType(DataType::kFloat, std::nullopt)}};
  Node mul;
  mul.op_type = "Mul";
  mul.inputs = {"x_i", "scale_i"};
  mul.outputs = {"y_i"};
  body->nodes.push_back(mul);
  Attribute body_attr;
  body_attr.name = "body";
  body_attr.type = AttributeType::kGraph;
  body_attr.g = body;

  GraphBuilder b(17);
  b.Output("ys", DataType::kFloat).AddNode("SequenceMap", {"xs", "scale"}, {"ys"}, "", {body_attr});
  b.graph().inputs.push_back({"xs", SequenceType(DataType::kFloat)});
  if (declare_scale) {
    b.graph().inputs.push_back({"scale", scale_is_sequence ? SequenceType(DataType::kFloat)
                                                           : GraphBuilder::TensorType(DataType::kFloat, Shape{1})});
  } else {
    b.graph().inputs.push_back({"scale", {}});
  }
  b.graph().outputs[0].type = SequenceType(DataType::kFloat);
  return b.Build();
}

TEST(SchemaFunctionModels, SequenceMapOverTensorAndSequenceInputs) {
  const std::vector<Tensor> xs = {FloatTensor({3}, {1, 2, 3}), FloatTensor({1}, {-4}), FloatTensor({2}, {0.5f, 6})};
  for (bool scale_is_sequence : {false, true}) {
    SCOPED_TRACE(scale_is_sequence ? "sequence" : "tensor");
    const std::vector<float> scales = scale_is_sequence ? std::vector<float>{2, -1, 0.5f}
                                                        : std::vector<float>{3, 3, 3};
    RuntimeSession session(SequenceMapModel(scale_is_sequence));
    RuntimeContext rt = testing::MakeContext();
    rt.PutValue("xs", TensorSequence{DataType::kFloat, xs}, TensorKind::kInput);
    if (scale_is_sequence) {
      rt.PutValue("scale", TensorSequence{DataType::kFloat, {FloatTensor({1}, {2}), FloatTensor({1}, {-1}),
                                                             FloatTensor({1}, {0.5f})}},
                  TensorKind::kInput);
    } else {
      rt.PutTensor("scale", FloatTensor({1}, {3}), TensorKind::kInput);
    }
    session.Run(rt);
    const RuntimeValue* ys = rt.FindValue("ys");
    ASSERT_NE(ys, nullptr);
    ASSERT_EQ(ys->sequence().items.size(), xs.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      std::vector<double> expected;
      for (float x : FloatValues(xs[i])) expected.push_back(x * scales[i]);
      ExpectNear(FloatValues(ys->sequence().items[i]), expected, 0);
    }
  }
}

TEST(SchemaFunctionModels, SequenceMapInputOfUnknownKindIsRefused) {
  const Error error = testing::CatchError([] { RuntimeSession session(SequenceMapModel(false, false)); });
  EXPECT_EQ(error.code(), ErrorCode::kUnimplemented);
  EXPECT_NE(std::string(error.what()).find("input 1 ('scale')"), std::string::npos) << error.what();
}

}  // namespace
}  // namespace onnx_light::runtime

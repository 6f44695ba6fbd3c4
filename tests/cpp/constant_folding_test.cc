// Constant folding at session build (passes/constant_folding): which nodes run once at build
// time, that results equal the unfolded plan, what events say about folded values, and which
// nodes are never folded.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph_builder.h"
#include "onnx_light/runtime/runtime.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

using testing::FloatTensor;
using testing::FloatValues;
using testing::GraphBuilder;

Tensor Int64Tensor(Shape shape, std::vector<int64_t> values) {
  Tensor t = Tensor::Allocate(DataType::kInt64, shape, MakeCpuAllocator());
  for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
  return t;
}

Attribute TensorAttr(std::string name, Tensor value) {
  Attribute attr{.name = std::move(name), .type = AttributeType::kTensor};
  attr.t = std::move(value);
  return attr;
}

struct RunResult {
  std::vector<float> y;
  std::vector<std::string> dispatched;  // run_node names in order
  std::vector<RuntimeEvent> events;
};

RunResult RunModel(const std::shared_ptr<const Model>& model, RuntimeSessionOptions options,
                   const Tensor& x, const std::string& output = "y") {
  RuntimeSession session(model, options);
  RuntimeContext rt = testing::MakeContext(true);
  rt.PutValue("x", x, TensorKind::kInput);
  session.Run(rt);
  RunResult result;
  result.y = FloatValues(*rt.FindTensor(output));
  result.events = rt.events();
  for (const RuntimeEvent& e : result.events) {
    if (e.action == RuntimeEventAction::kRunNode) result.dispatched.push_back(e.name);
  }
  return result;
}

RuntimeSessionOptions Unfolded() {
  RuntimeSessionOptions options;
  options.fold_constants = false;
  return options;
}

// y = x * (c + w), c from a Constant node, w an initializer: Constant and Add fold, Mul runs.
std::shared_ptr<const Model> ConstantArithmeticModel() {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{3}).Output("y", DataType::kFloat);
  b.AddNode("Constant", {}, {"c"}, "", {TensorAttr("value", FloatTensor({3}, {1, 2, 3}))});
  b.AddNode("Add", {"c", "w"}, {"s"});
  b.AddNode("Mul", {"x", "s"}, {"y"});
  b.graph().initializers = {{"w", FloatTensor({3}, {0.5f, 0.25f, -1.0f})}};
  return b.Build();
}

TEST(ConstantFoldingTest, DefaultOn) { EXPECT_TRUE(RuntimeSessionOptions{}.fold_constants); }

TEST(ConstantFoldingTest, FoldsConstantChainsAndMatchesTheUnfoldedPlan) {
  const Tensor x = FloatTensor({3}, {2, -1, 4});
  const RunResult folded = RunModel(ConstantArithmeticModel(), {}, x);
  const RunResult unfolded = RunModel(ConstantArithmeticModel(), Unfolded(), x);
  EXPECT_EQ(folded.dispatched, std::vector<std::string>({"Mul_2"}));
  EXPECT_EQ(unfolded.dispatched, std::vector<std::string>({"Constant_0", "Add_1", "Mul_2"}));
  EXPECT_EQ(folded.y, unfolded.y);
  EXPECT_EQ(folded.y, std::vector<float>({3.0f, -2.25f, 8.0f}));
}

TEST(ConstantFoldingTest, FoldedValueEventNamesTheNodesComputedAtBuildTime) {
  const RunResult folded = RunModel(ConstantArithmeticModel(), {}, FloatTensor({3}));
  const RuntimeEvent* s = nullptr;
  for (const RuntimeEvent& e : folded.events) {
    if (e.action == RuntimeEventAction::kAdd && e.name == "s") s = &e;
    // The consumed initializer w and the intermediate c are gone from the plan.
    EXPECT_NE(e.name, "c");
    EXPECT_NE(e.name, "w");
  }
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->kind, TensorKind::kInitializer);
  EXPECT_EQ(s->node_index, kNodeIndexInitializer);
  EXPECT_EQ(s->covered_node_indices, std::vector<int64_t>({0, 1}));
  EXPECT_EQ(s->covered_node_names, std::vector<std::string>({"Constant_0", "Add_1"}));
  // The node that still runs keeps its written position and covers nothing.
  for (const RuntimeEvent& e : folded.events) {
    if (e.action != RuntimeEventAction::kRunNode) continue;
    EXPECT_EQ(e.node_index, 2);
    EXPECT_TRUE(e.covered_node_indices.empty());
  }
}

// Shape of a graph input whose declared shape is static: Shape -> Gather -> Unsqueeze -> Concat
// -> Reshape folds up to the Reshape's shape input.
std::shared_ptr<const Model> StaticShapeModel(std::vector<int64_t> x_shape) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, x_shape).Output("y", DataType::kFloat);
  b.AddNode("Shape", {"x"}, {"shape"});
  b.AddNode("Gather", {"shape", "zero"}, {"batch"}, "",
            {Attribute{.name = "axis", .type = AttributeType::kInt, .i = 0}});
  b.AddNode("Unsqueeze", {"batch", "axes"}, {"batch1"});
  b.AddNode("Concat", {"batch1", "minus_one"}, {"target"}, "",
            {Attribute{.name = "axis", .type = AttributeType::kInt, .i = 0}});
  b.AddNode("Reshape", {"x", "target"}, {"y"});
  b.graph().initializers = {{"zero", Int64Tensor({}, {0})},
                            {"axes", Int64Tensor({1}, {0})},
                            {"minus_one", Int64Tensor({1}, {-1})}};
  return b.Build();
}

TEST(ConstantFoldingTest, ShapeOfAStaticGraphInputFolds) {
  const Tensor x = FloatTensor({2, 3, 2});
  const RunResult folded = RunModel(StaticShapeModel({2, 3, 2}), {}, x);
  EXPECT_EQ(folded.dispatched, std::vector<std::string>({"Reshape_4"}));
  EXPECT_EQ(folded.y, FloatValues(x));
}

TEST(ConstantFoldingTest, ShapeOfADynamicGraphInputRuns) {
  const RunResult folded = RunModel(StaticShapeModel({-1, 3, 2}), {}, FloatTensor({2, 3, 2}));
  EXPECT_EQ(folded.dispatched.size(), 5u);
}

TEST(ConstantFoldingTest, AFeedOfAnotherShapeIsStillRefused) {
  RuntimeSession session(StaticShapeModel({2, 3, 2}));
  RuntimeContext rt;
  rt.PutValue("x", FloatTensor({4, 3, 2}), TensorKind::kInput);
  EXPECT_THROW(session.Run(rt), Error);
}

// y = x + Transpose(w): the transpose of an initializer folds; a MatMul-style weight layout
// change costs nothing per run.
TEST(ConstantFoldingTest, TransposeOfAnInitializerFolds) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{3, 2}).Output("y", DataType::kFloat);
  b.AddNode("Transpose", {"w"}, {"wt"});
  b.AddNode("Add", {"x", "wt"}, {"y"});
  b.graph().initializers = {{"w", FloatTensor({2, 3}, {1, 2, 3, 4, 5, 6})}};
  const RunResult folded = RunModel(b.Build(), {}, FloatTensor({3, 2}, {0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(folded.dispatched, std::vector<std::string>({"Add_1"}));
  EXPECT_EQ(folded.y, std::vector<float>({1, 4, 2, 5, 3, 6}));
}

TEST(ConstantFoldingTest, NodesProducingGraphOutputsRandomNodesAndLargeResultsRun) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{1}).Output("y", DataType::kFloat);
  b.Output("out_const", DataType::kFloat).Output("noise", DataType::kFloat).Output("big", DataType::kFloat);
  b.AddNode("Identity", {"x"}, {"y"});
  b.AddNode("Neg", {"w"}, {"out_const"});  // a graph output keeps its producer
  b.AddNode("RandomUniform", {}, {"noise"}, "",
            {Attribute{.name = "shape", .type = AttributeType::kInts, .ints = {2}}});
  b.AddNode("ConstantOfShape", {"big_shape"}, {"big"});  // 9M elements: over the byte budget
  b.graph().initializers = {{"w", FloatTensor({1}, {2})},
                            {"big_shape", Int64Tensor({2}, {3000, 3000})}};
  const RunResult run = RunModel(b.Build(), {}, FloatTensor({1}, {7}));
  EXPECT_EQ(run.dispatched,
            std::vector<std::string>({"Identity_0", "Neg_1", "RandomUniform_2", "ConstantOfShape_3"}));
}

TEST(ConstantFoldingTest, ANodeTheKernelRefusesIsLeftForTheRunToReport) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{6}).Output("y", DataType::kFloat);
  b.AddNode("Reshape", {"w", "bad_shape"}, {"r"});  // 6 elements into [4]
  b.AddNode("Add", {"x", "r"}, {"y"});
  b.graph().initializers = {{"w", FloatTensor({6})}, {"bad_shape", Int64Tensor({1}, {4})}};
  RuntimeSession session(b.Build());
  RuntimeContext rt;
  rt.PutValue("x", FloatTensor({6}), TensorKind::kInput);
  try {
    session.Run(rt);
    FAIL() << "the run should fail";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("Reshape_0"), std::string::npos) << error.what();
  }
}

// A custom kernel's node is the host's: it runs, even when all its inputs are constants.
TEST(ConstantFoldingTest, CustomKernelNodesRun) {
  class Plus final : public KernelBase {
   public:
    void Run(RuntimeContext& rt) const override {
      const Tensor& a = rt.Input(0);
      const Tensor& b = rt.Input(1);
      Tensor& y = rt.AllocateOutput(0, DataType::kFloat, a.shape());
      for (int64_t i = 0; i < a.size(); ++i) y.data<float>()[i] = a.data<float>()[i] + b.data<float>()[i] + 100;
    }
  };
  KernelContext kernels(DefaultOpset(23));
  RegisterContextKernel(kernels, "", "Add", [](const KernelBuildInfo&) { return std::make_unique<Plus>(); });
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{2}).Output("y", DataType::kFloat);
  b.AddNode("Add", {"w", "w"}, {"c"});
  b.AddNode("Add", {"x", "c"}, {"y"});
  b.graph().initializers = {{"w", FloatTensor({2}, {1, 2})}};
  RuntimeSessionOptions options;
  options.kernel_context = kernels;
  const RunResult run = RunModel(b.Build(), options, FloatTensor({2}, {0, 0}));
  EXPECT_EQ(run.dispatched, std::vector<std::string>({"Add_0", "Add_1"}));
  EXPECT_EQ(run.y, std::vector<float>({202, 204}));
}

// KernelBuildInfo::constant_input: initializers and folded values, never a graph input (even
// one with an initializer default), an omitted input or a computed value.
TEST(ConstantFoldingTest, KernelsReceiveConstantInputsWhenBuilt) {
  static std::vector<bool> constant_flags;
  KernelContext kernels(DefaultOpset(23));
  RegisterContextKernel(kernels, "test.probe", "Probe", [](const KernelBuildInfo& info) {
    constant_flags.clear();
    for (size_t i = 0; i < info.num_inputs(); ++i) constant_flags.push_back(info.constant_input(i) != nullptr);
    class Pass final : public KernelBase {
     public:
      void Run(RuntimeContext& rt) const override { rt.SetOutput(0, rt.Input(0)); }
    };
    return std::make_unique<Pass>();
  });
  GraphBuilder b;
  b.Import("test.probe", 1);
  b.Input("x", DataType::kFloat, std::vector<int64_t>{2}).Input("overridable", DataType::kFloat);
  b.Output("y", DataType::kFloat);
  b.AddNode("Probe", {"x", "w", "", "overridable", "folded"}, {"y"}, "test.probe");
  b.AddNode("Neg", {"w"}, {"folded"});
  std::swap(b.graph().nodes[0], b.graph().nodes[1]);
  b.graph().initializers = {{"w", FloatTensor({2})}, {"overridable", FloatTensor({2})}};
  RuntimeSessionOptions options;
  options.kernel_context = kernels;
  RuntimeSession session(b.Build(), options);
  EXPECT_EQ(constant_flags, std::vector<bool>({false, true, false, false, true}));
  // Folding off: the Neg output is computed at run time.
  options.fold_constants = false;
  RuntimeSession unfolded(b.Build(), options);
  EXPECT_EQ(constant_flags, std::vector<bool>({false, true, false, false, false}));
}

}  // namespace
}  // namespace onnx_light::runtime

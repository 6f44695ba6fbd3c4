// No-op elimination at session build (passes/noop_elimination): removed nodes, collapsed
// reshapes and what their events say, and the nodes that must stay.
#include <gtest/gtest.h>

#include <memory>
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

struct RunResult {
  std::vector<float> y;
  std::vector<RuntimeEvent> nodes;  // run_node events
};

RunResult RunModel(const std::shared_ptr<const Model>& model, bool eliminate, Shape x_shape = {4}) {
  RuntimeSessionOptions options;
  options.eliminate_noop_nodes = eliminate;
  RuntimeSession session(model, options);
  RuntimeContext rt = testing::MakeContext(true);
  rt.PutValue("x", FloatTensor(x_shape), TensorKind::kInput);
  session.Run(rt);
  RunResult result;
  result.y = FloatValues(*rt.FindTensor("y"));
  for (const RuntimeEvent& e : rt.events()) {
    if (e.action == RuntimeEventAction::kRunNode) result.nodes.push_back(e);
  }
  return result;
}

std::vector<std::string> Names(const RunResult& run) {
  std::vector<std::string> names;
  for (const RuntimeEvent& e : run.nodes) names.push_back(e.name);
  return names;
}

Attribute IntAttr(std::string name, int64_t value) {
  return Attribute{.name = std::move(name), .type = AttributeType::kInt, .i = value};
}

TEST(NoopEliminationTest, DefaultOn) { EXPECT_TRUE(RuntimeSessionOptions{}.eliminate_noop_nodes); }

// x -> Identity -> Dropout -> Cast(float) -> Neg -> Identity -> y: only Neg and the Identity that
// writes the graph output stay.
std::shared_ptr<const Model> PassThroughModel() {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{4}).Output("y", DataType::kFloat);
  b.AddNode("Identity", {"x"}, {"a"});
  b.AddNode("Dropout", {"a"}, {"b"});
  b.AddNode("Cast", {"b"}, {"c"}, "", {IntAttr("to", static_cast<int64_t>(DataType::kFloat))});
  b.AddNode("Neg", {"c"}, {"d"});
  b.AddNode("Identity", {"d"}, {"y"});
  return b.Build();
}

TEST(NoopEliminationTest, PassThroughNodesAreRemoved) {
  const RunResult kept = RunModel(PassThroughModel(), false);
  const RunResult removed = RunModel(PassThroughModel(), true);
  EXPECT_EQ(Names(kept).size(), 5u);
  EXPECT_EQ(Names(removed), std::vector<std::string>({"Neg_3", "Identity_4"}));
  EXPECT_EQ(removed.y, kept.y);
  // The nodes that still run keep their written positions.
  EXPECT_EQ(removed.nodes[0].node_index, 3);
  EXPECT_EQ(removed.nodes[0].inputs, std::vector<std::string>({"x"}));
  EXPECT_EQ(removed.nodes[1].node_index, 4);
}

TEST(NoopEliminationTest, CastToAnotherTypeAndDropoutWithAReadMaskStay) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{4}).Output("y", DataType::kFloat);
  b.Output("mask", DataType::kBool);
  b.AddNode("Cast", {"x"}, {"h"}, "", {IntAttr("to", static_cast<int64_t>(DataType::kDouble))});
  b.AddNode("Cast", {"h"}, {"f"}, "", {IntAttr("to", static_cast<int64_t>(DataType::kFloat))});
  b.AddNode("Dropout", {"f"}, {"y", "mask"});
  const RunResult run = RunModel(b.Build(), true);
  EXPECT_EQ(Names(run), std::vector<std::string>({"Cast_0", "Cast_1", "Dropout_2"}));
}

TEST(NoopEliminationTest, DropoutInTrainingModeStays) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{4}).Input("training", DataType::kBool);
  b.Output("y", DataType::kFloat);
  b.AddNode("Dropout", {"x", "", "training"}, {"d"});
  b.AddNode("Neg", {"d"}, {"y"});
  RuntimeSession session(b.Build());
  RuntimeContext rt = testing::MakeContext(true);
  rt.PutValue("x", FloatTensor({4}), TensorKind::kInput);
  Tensor training = Tensor::Allocate(DataType::kBool, {}, MakeCpuAllocator());
  training.data<bool>()[0] = false;
  rt.PutValue("training", training, TensorKind::kInput);
  session.Run(rt);
  int dropouts = 0;
  for (const RuntimeEvent& e : rt.events()) {
    dropouts += e.action == RuntimeEventAction::kRunNode && e.op_type == "Dropout";
  }
  EXPECT_EQ(dropouts, 1);
}

// Reshape(Reshape(x, [2, 6]), [3, 4]) runs as one Reshape that names both written nodes.
TEST(NoopEliminationTest, ReshapeChainsCollapseAndNameBothNodes) {
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{12}).Output("y", DataType::kFloat);
  b.AddNode("Reshape", {"x", "s1"}, {"r"});
  b.AddNode("Reshape", {"r", "s2"}, {"y"});
  auto shape = [](std::vector<int64_t> dims) {
    Tensor t = Tensor::Allocate(DataType::kInt64, {static_cast<int64_t>(dims.size())}, MakeCpuAllocator());
    for (size_t i = 0; i < dims.size(); ++i) t.data<int64_t>()[i] = dims[i];
    return t;
  };
  b.graph().initializers = {{"s1", shape({2, 6})}, {"s2", shape({3, -1})}};
  const RunResult run = RunModel(b.Build(), true, {12});
  ASSERT_EQ(run.nodes.size(), 1u);
  EXPECT_EQ(run.nodes[0].name, "Reshape_1");
  EXPECT_EQ(run.nodes[0].node_index, 0);
  EXPECT_EQ(run.nodes[0].inputs, std::vector<std::string>({"x", "s2"}));
  EXPECT_EQ(run.nodes[0].covered_node_indices, std::vector<int64_t>({0, 1}));
  EXPECT_EQ(run.nodes[0].covered_node_names, std::vector<std::string>({"Reshape_0", "Reshape_1"}));
  EXPECT_EQ(run.y, FloatValues(FloatTensor({12})));

  // A 0 in the outer shape copies a dimension of the inner result: not collapsed.
  b.graph().initializers[1] = {"s2", shape({0, -1})};
  EXPECT_EQ(RunModel(b.Build(), true, {12}).nodes.size(), 2u);
}

// A value read inside a subgraph keeps its producer, even an Identity.
TEST(NoopEliminationTest, ValuesReadBySubgraphsStay) {
  auto branch = std::make_shared<Graph>();
  branch->name = "then";
  Node neg{.name = "inner", .op_type = "Neg", .inputs = {"a"}, .outputs = {"out"}};
  branch->nodes.push_back(neg);
  branch->outputs.push_back({"out", GraphBuilder::TensorType(DataType::kFloat, std::nullopt)});
  GraphBuilder b;
  b.Input("x", DataType::kFloat, std::vector<int64_t>{4}).Output("y", DataType::kFloat);
  b.AddNode("Identity", {"x"}, {"a"});
  Attribute then_branch{.name = "then_branch", .type = AttributeType::kGraph};
  then_branch.g = branch;
  Attribute else_branch{.name = "else_branch", .type = AttributeType::kGraph};
  else_branch.g = branch;
  b.AddNode("If", {"cond"}, {"y"}, "", {then_branch, else_branch});
  Tensor cond = Tensor::Allocate(DataType::kBool, {}, MakeCpuAllocator());
  cond.data<bool>()[0] = true;
  b.graph().initializers = {{"cond", cond}};
  const RunResult run = RunModel(b.Build(), true);
  EXPECT_EQ(run.y, std::vector<float>({0, -1, -2, -3}));
  bool identity_ran = false;
  for (const RuntimeEvent& e : run.nodes) identity_ran |= e.name == "Identity_0";
  EXPECT_TRUE(identity_ran);
}

}  // namespace
}  // namespace onnx_light::runtime

#pragma once
// Control-flow models for the stop, timeout and budget tests: a Loop that would run (almost)
// forever, with or without a body, and a Loop whose body runs an If.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph_builder.h"
#include "onnx_light/runtime/model.h"

namespace onnx_light::runtime::testing {

inline constexpr int64_t kAlmostForever = int64_t{1} << 62;

inline Tensor Int64Scalar(int64_t value) {
  Tensor t = Tensor::Allocate(DataType::kInt64, {}, MakeCpuAllocator());
  *t.data<int64_t>() = value;
  return t.AsReadOnly();
}

inline Tensor BoolScalar(bool value) {
  Tensor t = Tensor::Allocate(DataType::kBool, {}, MakeCpuAllocator());
  *t.data<bool>() = value;
  return t.AsReadOnly();
}

inline Attribute GraphAttribute(std::string name, Graph graph) {
  Attribute attr;
  attr.name = std::move(name);
  attr.type = AttributeType::kGraph;
  attr.g = std::make_shared<const Graph>(std::move(graph));
  return attr;
}

/// A Loop body (iter, cond_in, v_in) -> (cond_out, v_out) made of `nodes`; with none, the body
/// hands its inputs straight back.
inline Graph LoopBody(std::vector<Node> nodes, std::string cond_out = "cond_in",
                      std::string v_out = "v_in") {
  Graph body;
  body.name = "body";
  body.inputs = {{"iter", GraphBuilder::TensorType(DataType::kInt64, std::vector<int64_t>{})},
                 {"cond_in", GraphBuilder::TensorType(DataType::kBool, std::vector<int64_t>{})},
                 {"v_in", GraphBuilder::TensorType(DataType::kFloat, std::vector<int64_t>{1})}};
  body.outputs = {{cond_out, GraphBuilder::TensorType(DataType::kBool, std::vector<int64_t>{})},
                  {v_out, GraphBuilder::TensorType(DataType::kFloat, std::vector<int64_t>{1})}};
  body.nodes = std::move(nodes);
  return body;
}

inline Node MakeNode(std::string name, std::string op, std::vector<std::string> inputs,
                     std::vector<std::string> outputs, std::vector<Attribute> attributes = {},
                     std::string domain = "") {
  Node node;
  node.name = std::move(name);
  node.op_type = std::move(op);
  node.domain = std::move(domain);
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  node.attributes = std::move(attributes);
  return node;
}

/// The body of LoopModel: v_out = v_in + 1, cond passed through.
inline Graph AddOneBody() {
  Graph body = LoopBody({MakeNode("pass_cond", "Identity", {"cond_in"}, {"cond_out"}),
                         MakeNode("add_one", "Add", {"v_in", "one"}, {"v_out"})},
                        "cond_out", "v_out");
  Tensor one = Tensor::Allocate(DataType::kFloat, {1}, MakeCpuAllocator());
  one.data<float>()[0] = 1.0f;
  body.initializers.push_back({"one", one.AsReadOnly()});
  return body;
}

/// A Loop body that runs an If each iteration: v_out = If(cond_in, then: v_in + 1, else: v_in).
inline Graph NestedIfBody() {
  Graph then_branch;
  then_branch.name = "then";
  then_branch.outputs = {{"t", GraphBuilder::TensorType(DataType::kFloat, std::vector<int64_t>{1})}};
  then_branch.nodes = {MakeNode("then_add", "Add", {"v_in", "one"}, {"t"})};
  Graph else_branch;
  else_branch.name = "else";
  else_branch.outputs = {{"e", GraphBuilder::TensorType(DataType::kFloat, std::vector<int64_t>{1})}};
  else_branch.nodes = {MakeNode("else_pass", "Identity", {"v_in"}, {"e"})};
  Graph body = LoopBody({MakeNode("pass_cond", "Identity", {"cond_in"}, {"cond_out"}),
                         MakeNode("if", "If", {"cond_in"}, {"v_out"},
                                  {GraphAttribute("then_branch", std::move(then_branch)),
                                   GraphAttribute("else_branch", std::move(else_branch))})},
                        "cond_out", "v_out");
  Tensor one = Tensor::Allocate(DataType::kFloat, {1}, MakeCpuAllocator());
  one.data<float>()[0] = 1.0f;
  body.initializers.push_back({"one", one.AsReadOnly()});
  return body;
}

/// y = Loop(M, true, v0 = x) over `body`; M is the graph input "M" (int64 scalar), x [1] float.
/// With M = kAlmostForever the run ends only when stopped.
inline std::shared_ptr<const Model> LoopModel(Graph body) {
  GraphBuilder b;
  b.Input("M", DataType::kInt64, std::vector<int64_t>{})
      .Input("x", DataType::kFloat, std::vector<int64_t>{1})
      .Output("y", DataType::kFloat, std::vector<int64_t>{1});
  b.graph().initializers.push_back({"cond", BoolScalar(true)});
  b.AddNode("Loop", {"M", "cond", "x"}, {"y"}, "", {GraphAttribute("body", std::move(body))});
  b.graph().nodes.back().name = "loop";
  return b.Build();
}

}  // namespace onnx_light::runtime::testing

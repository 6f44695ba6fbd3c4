#pragma once
// A feedback model whose append happens inside an If branch, shared by the persistent-state and
// trace tests: Identity(x) -> x_id; If(cond) { then: AppendRows(past, x_id) } else { x_id };
// past <- present. AppendRows is a test kernel registered in `domain` by the caller.

#include <memory>
#include <string>

#include "graph_builder.h"

namespace onnx_light::runtime::testing {

inline std::shared_ptr<const Model> BranchAppendModel(const std::string& domain) {
  auto then_branch = std::make_shared<Graph>();
  then_branch->name = "then";
  then_branch->outputs.push_back({"branch_present", GraphBuilder::TensorType(DataType::kFloat, {})});
  Node append;
  append.name = "inner_append";
  append.op_type = "AppendRows";
  append.domain = domain;
  append.inputs = {"past", "x_id"};
  append.outputs = {"branch_present"};
  then_branch->nodes.push_back(append);
  auto else_branch = std::make_shared<Graph>();
  else_branch->name = "else";
  else_branch->outputs.push_back({"x_id", GraphBuilder::TensorType(DataType::kFloat, {})});
  Attribute then_attr{.name = "then_branch", .type = AttributeType::kGraph, .g = then_branch};
  Attribute else_attr{.name = "else_branch", .type = AttributeType::kGraph, .g = else_branch};
  GraphBuilder b;
  b.Import(domain, 1)
      .Input("past", DataType::kFloat, std::vector<int64_t>{2, -1, 3})
      .Input("x", DataType::kFloat, std::vector<int64_t>{2, -1, 3})
      .Input("cond", DataType::kBool, std::vector<int64_t>{})
      .Output("present", DataType::kFloat)
      .AddNode("Identity", {"x"}, {"x_id"})
      .AddNode("If", {"cond"}, {"present"}, "", {then_attr, else_attr})
      .Bind("past", "present");
  return b.Build();
}

/// Node index of the If in BranchAppendModel.
inline constexpr int64_t kBranchAppendIfIndex = 1;

}  // namespace onnx_light::runtime::testing

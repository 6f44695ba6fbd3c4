#pragma once
// Builds in-memory models for tests without going through protobuf bytes.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "onnx_light/runtime/model.h"

namespace onnx_light::runtime::testing {

class GraphBuilder {
 public:
  explicit GraphBuilder(int64_t opset = 23) {
    model_.ir_version = 10;
    model_.opset_imports.push_back({"", opset});
  }
  GraphBuilder& Import(std::string domain, int64_t version) {
    model_.opset_imports.push_back({std::move(domain), version});
    return *this;
  }
  GraphBuilder& Input(std::string name, DataType type, std::optional<std::vector<int64_t>> shape = {}) {
    model_.graph.inputs.push_back({std::move(name), TensorType(type, std::move(shape))});
    return *this;
  }
  GraphBuilder& Output(std::string name, DataType type, std::optional<std::vector<int64_t>> shape = {}) {
    model_.graph.outputs.push_back({std::move(name), TensorType(type, std::move(shape))});
    return *this;
  }
  GraphBuilder& AddNode(std::string op_type, std::vector<std::string> inputs, std::vector<std::string> outputs,
                        std::string domain = "", std::vector<Attribute> attributes = {}) {
    Node node;
    node.name = op_type + "_" + std::to_string(model_.graph.nodes.size());
    node.op_type = std::move(op_type);
    node.domain = std::move(domain);
    node.inputs = std::move(inputs);
    node.outputs = std::move(outputs);
    node.attributes = std::move(attributes);
    model_.graph.nodes.push_back(std::move(node));
    return *this;
  }
  GraphBuilder& Bind(std::string input, std::string output) {
    model_.graph.persistent_bindings.push_back({std::move(input), std::move(output)});
    return *this;
  }
  Graph& graph() { return model_.graph; }
  std::shared_ptr<const Model> Build() const { return std::make_shared<Model>(model_); }

  static TypeInfo TensorType(DataType type, std::optional<std::vector<int64_t>> shape) {
    TypeInfo info;
    info.kind = TypeInfo::Kind::kTensor;
    info.element_type = type;
    info.shape = std::move(shape);
    return info;
  }

 private:
  Model model_;
};

/// A float tensor of `shape` filled with `values` (or 0, 1, 2, ... when empty).
inline Tensor FloatTensor(Shape shape, std::vector<float> values = {}) {
  Tensor t = Tensor::Allocate(DataType::kFloat, shape, MakeCpuAllocator());
  for (int64_t i = 0; i < t.size(); ++i) {
    t.data<float>()[i] = values.empty() ? static_cast<float>(i) : values.at(static_cast<size_t>(i));
  }
  return t;
}

/// The elements of a (possibly strided) float tensor in row-major order.
inline std::vector<float> FloatValues(const Tensor& t) {
  Tensor c = t.Contiguous(MakeCpuAllocator());
  return {c.data<float>(), c.data<float>() + c.size()};
}

}  // namespace onnx_light::runtime::testing

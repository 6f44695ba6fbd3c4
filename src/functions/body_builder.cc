#include "functions/body_builder.h"

#include <algorithm>
#include <utility>

namespace onnx_light::runtime::functions_internal {

namespace {

Attribute Named(std::string name, AttributeType type) {
  Attribute attr;
  attr.name = std::move(name);
  attr.type = type;
  return attr;
}

template <typename T>
Tensor MakeTensor(DataType type, const std::vector<T>& values, Shape shape) {
  Tensor tensor = Tensor::Allocate(type, std::move(shape), MakeCpuAllocator());
  std::copy_n(values.begin(), static_cast<size_t>(tensor.size()), tensor.data<T>());
  return tensor.AsReadOnly();
}

}  // namespace

Attribute IntAttribute(std::string name, int64_t value) {
  Attribute attr = Named(std::move(name), AttributeType::kInt);
  attr.i = value;
  return attr;
}

Attribute FloatAttribute(std::string name, float value) {
  Attribute attr = Named(std::move(name), AttributeType::kFloat);
  attr.f = value;
  return attr;
}

Attribute StringAttribute(std::string name, std::string value) {
  Attribute attr = Named(std::move(name), AttributeType::kString);
  attr.s = std::move(value);
  return attr;
}

Attribute IntsAttribute(std::string name, std::vector<int64_t> values) {
  Attribute attr = Named(std::move(name), AttributeType::kInts);
  attr.ints = std::move(values);
  return attr;
}

Attribute GraphAttribute(std::string name, std::shared_ptr<const Graph> graph) {
  Attribute attr = Named(std::move(name), AttributeType::kGraph);
  attr.g = std::move(graph);
  return attr;
}

Attribute ReferenceAttribute(std::string name, AttributeType type, std::string ref_name) {
  Attribute attr = Named(std::move(name), type);
  attr.ref_attr_name = std::move(ref_name);
  return attr;
}

Tensor Int64Tensor(std::vector<int64_t> values, Shape shape) {
  return MakeTensor(DataType::kInt64, values, std::move(shape));
}

Tensor FloatTensor(std::vector<float> values, Shape shape) {
  return MakeTensor(DataType::kFloat, values, std::move(shape));
}

Tensor BoolTensor(bool value) {
  Tensor tensor = Tensor::Allocate(DataType::kBool, {}, MakeCpuAllocator());
  *tensor.data<bool>() = value;
  return tensor.AsReadOnly();
}

BodyBuilder& BodyBuilder::Add(std::string op_type, std::vector<std::string> inputs,
                              std::vector<std::string> outputs, std::vector<Attribute> attributes) {
  Node node;
  node.op_type = std::move(op_type);
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  node.attributes = std::move(attributes);
  nodes_.push_back(std::move(node));
  return *this;
}

BodyBuilder& BodyBuilder::Constant(std::string name, Tensor value) {
  Attribute attr = Named("value", AttributeType::kTensor);
  attr.t = std::move(value);
  return Add("Constant", {}, {std::move(name)}, {std::move(attr)});
}

}  // namespace onnx_light::runtime::functions_internal

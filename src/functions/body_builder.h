#pragma once
// Small helpers the context-dependent builders write function bodies with: nodes of the default
// domain, attributes and constant tensors.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "onnx_light/runtime/model.h"

namespace onnx_light::runtime::functions_internal {

Attribute IntAttribute(std::string name, int64_t value);
Attribute FloatAttribute(std::string name, float value);
Attribute StringAttribute(std::string name, std::string value);
Attribute IntsAttribute(std::string name, std::vector<int64_t> values);
Attribute GraphAttribute(std::string name, std::shared_ptr<const Graph> graph);
/// `name` refers to the caller's attribute `ref_name` (`name = @ref_name` in onnx's text form).
Attribute ReferenceAttribute(std::string name, AttributeType type, std::string ref_name);

/// Tensors for Constant nodes. Shape {} is a scalar.
Tensor Int64Tensor(std::vector<int64_t> values, Shape shape);
Tensor FloatTensor(std::vector<float> values, Shape shape);
Tensor BoolTensor(bool value);

/// Appends nodes to a body. Operators are in the default domain.
class BodyBuilder {
 public:
  explicit BodyBuilder(std::vector<Node>& nodes) : nodes_(nodes) {}

  /// `outputs = op_type <attributes> (inputs)`; "" marks an omitted optional input.
  BodyBuilder& Add(std::string op_type, std::vector<std::string> inputs,
                   std::vector<std::string> outputs, std::vector<Attribute> attributes = {});
  /// `name = Constant <value = value> ()`.
  BodyBuilder& Constant(std::string name, Tensor value);

 private:
  std::vector<Node>& nodes_;
};

}  // namespace onnx_light::runtime::functions_internal

#include "session/input_validation.h"

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

namespace {

std::string DescribeType(const TypeInfo& type) {
  switch (type.kind) {
    case TypeInfo::Kind::kTensor: {
      std::string dims = "?";
      if (type.shape) {
        std::vector<std::string> parts;
        for (int64_t d : *type.shape) parts.push_back(d < 0 ? "?" : std::to_string(d));
        dims = fmt::format("[{}]", fmt::join(parts, ", "));
      }
      return fmt::format("tensor({}){}", DataTypeName(type.element_type), dims);
    }
    case TypeInfo::Kind::kSequence: return "sequence";
    case TypeInfo::Kind::kOptional: return "optional";
    case TypeInfo::Kind::kMap: return "map";
    case TypeInfo::Kind::kSparseTensor: return "sparse tensor";
    case TypeInfo::Kind::kUnknown: return "any";
  }
  return "any";
}

void ValidateTensor(const std::string& name, const TypeInfo& type, const Tensor& tensor) {
  if (type.element_type != DataType::kUndefined && tensor.dtype() != type.element_type) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("input '{}': expected element type {}, got {} (expected {}, got "
                            "tensor({}){})",
                            name, DataTypeName(type.element_type), DataTypeName(tensor.dtype()),
                            DescribeType(type), DataTypeName(tensor.dtype()),
                            ShapeToString(tensor.shape())));
  }
  if (!type.shape) return;
  const std::vector<int64_t>& dims = *type.shape;
  if (static_cast<size_t>(tensor.rank()) != dims.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("input '{}': expected rank {} ({}), got rank {} with shape {}", name,
                            dims.size(), DescribeType(type), tensor.rank(),
                            ShapeToString(tensor.shape())));
  }
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] >= 0 && dims[d] != tensor.shape()[d]) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("input '{}': dimension {} must be {} ({}), got {} (shape {})", name, d,
                              dims[d], DescribeType(type), tensor.shape()[d],
                              ShapeToString(tensor.shape())));
    }
  }
}

}  // namespace

void ValidateInputValue(const ValueInfo& input, const RuntimeValue& value) {
  const TypeInfo& type = input.type;
  switch (type.kind) {
    case TypeInfo::Kind::kTensor:
      if (!value.is_tensor()) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("input '{}': expected {}, got {}", input.name, DescribeType(type),
                                value.Describe()));
      }
      ValidateTensor(input.name, type, value.tensor());
      return;
    case TypeInfo::Kind::kSequence:
      if (value.kind() != RuntimeValue::Kind::kSequence) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("input '{}': expected a sequence, got {}", input.name,
                                value.Describe()));
      }
      return;
    default:
      return;
  }
}

}  // namespace onnx_light::runtime

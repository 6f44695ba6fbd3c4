#include "session/input_validation.h"

#include <fmt/format.h>

#include "onnx_light/runtime/allocator.h"
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
    case TypeInfo::Kind::kSequence:
      return type.inner ? fmt::format("sequence({})", DescribeType(*type.inner)) : "sequence";
    case TypeInfo::Kind::kOptional: return "optional";
    case TypeInfo::Kind::kMap: {
      const bool valued = type.inner && type.inner->kind == TypeInfo::Kind::kTensor;
      return fmt::format("map({}, {})", DataTypeName(type.element_type),
                         valued ? DataTypeName(type.inner->element_type) : "?");
    }
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

// Keys and values are 1-D and as long as each other; keys ascend strictly (sorted, unique).
template <typename Key>
void ValidateMapKeys(const std::string& name, const Tensor& keys) {
  const Tensor contiguous = keys.Contiguous(MakeCpuAllocator());
  const Key* k = contiguous.data<Key>();
  for (int64_t i = 1; i < keys.size(); ++i) {
    if (k[i] == k[i - 1]) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("input '{}': map key {} appears more than once", name, k[i]));
    }
    if (k[i] < k[i - 1]) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("input '{}': map keys must be in ascending order ({} follows {})", name,
                              k[i], k[i - 1]));
    }
  }
}

void ValidateMap(const std::string& name, const TypeInfo& type, const TensorMap& map) {
  const DataType key_type = map.keys.dtype();
  const DataType value_type = map.values.dtype();
  if (map.keys.rank() != 1 || map.values.rank() != 1 || map.keys.size() != map.values.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("input '{}': a map needs 1-D keys and values of one length, got keys {} "
                            "and values {}",
                            name, ShapeToString(map.keys.shape()), ShapeToString(map.values.shape())));
  }
  const DataType want_value =
      type.inner && type.inner->kind == TypeInfo::Kind::kTensor ? type.inner->element_type : DataType::kUndefined;
  if ((type.element_type != DataType::kUndefined && key_type != type.element_type) ||
      (want_value != DataType::kUndefined && value_type != want_value)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("input '{}': expected {}, got map({}, {})", name, DescribeType(type),
                            DataTypeName(key_type), DataTypeName(value_type)));
  }
  if (key_type == DataType::kInt64) {
    ValidateMapKeys<int64_t>(name, map.keys);
  } else if (key_type == DataType::kString) {
    ValidateMapKeys<std::string>(name, map.keys);
  } else {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("input '{}': map keys must be int64 or string, got {}", name,
                            DataTypeName(key_type)));
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
    case TypeInfo::Kind::kMap:
      if (value.kind() != RuntimeValue::Kind::kMap) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("input '{}': expected {}, got {}", input.name, DescribeType(type),
                                value.Describe()));
      }
      ValidateMap(input.name, type, value.map());
      return;
    case TypeInfo::Kind::kSequence:
      if (type.inner && type.inner->kind == TypeInfo::Kind::kMap) {
        if (value.kind() == RuntimeValue::Kind::kSequence && value.sequence().items.empty()) return;
        if (value.kind() != RuntimeValue::Kind::kMapSequence) {
          throw Error(ErrorCode::kInvalidArgument,
                      fmt::format("input '{}': expected {}, got {}", input.name, DescribeType(type),
                                  value.Describe()));
        }
        for (const TensorMap& map : value.map_sequence().items) ValidateMap(input.name, *type.inner, map);
        return;
      }
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

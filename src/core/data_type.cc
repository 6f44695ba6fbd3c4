#include "onnx_light/runtime/data_type.h"

#include <string>

namespace onnx_light::runtime {

size_t ElementSize(DataType type) noexcept {
  switch (type) {
    case DataType::kFloat: return 4;
    case DataType::kUInt8: return 1;
    case DataType::kInt8: return 1;
    case DataType::kUInt16: return 2;
    case DataType::kInt16: return 2;
    case DataType::kInt32: return 4;
    case DataType::kInt64: return 8;
    case DataType::kString: return sizeof(std::string);
    case DataType::kBool: return 1;
    case DataType::kFloat16: return 2;
    case DataType::kDouble: return 8;
    case DataType::kUInt32: return 4;
    case DataType::kUInt64: return 8;
    case DataType::kComplex64: return 8;
    case DataType::kComplex128: return 16;
    case DataType::kBFloat16: return 2;
    case DataType::kUndefined: return 0;
  }
  return 0;
}

std::string_view DataTypeName(DataType type) noexcept {
  switch (type) {
    case DataType::kFloat: return "float32";
    case DataType::kUInt8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kUInt16: return "uint16";
    case DataType::kInt16: return "int16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kString: return "string";
    case DataType::kBool: return "bool";
    case DataType::kFloat16: return "float16";
    case DataType::kDouble: return "float64";
    case DataType::kUInt32: return "uint32";
    case DataType::kUInt64: return "uint64";
    case DataType::kComplex64: return "complex64";
    case DataType::kComplex128: return "complex128";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kUndefined: return "undefined";
  }
  return "unknown";
}

bool IsSupportedDataType(int32_t onnx_code) noexcept {
  return onnx_code >= 1 && onnx_code <= 16 && ElementSize(static_cast<DataType>(onnx_code)) != 0;
}

}  // namespace onnx_light::runtime

#pragma once
// Element types, numbered as ONNX TensorProto.DataType.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace onnx_light::runtime {

enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
};

/// Bytes per element; 0 for kUndefined and for types the runtime cannot store.
size_t ElementSize(DataType type) noexcept;

/// Lowercase name as used in kernel-usage names and messages ("float32", "int64", "float16").
std::string_view DataTypeName(DataType type) noexcept;

/// True for the ONNX codes this runtime can hold in a Tensor.
bool IsSupportedDataType(int32_t onnx_code) noexcept;

}  // namespace onnx_light::runtime

#include "onnx_light/runtime/data_type.h"

#include <limits>
#include <string>

namespace onnx_light::runtime {

int ElementBits(DataType type) noexcept {
  switch (type) {
    case DataType::kFloat: return 32;
    case DataType::kUInt8: return 8;
    case DataType::kInt8: return 8;
    case DataType::kUInt16: return 16;
    case DataType::kInt16: return 16;
    case DataType::kInt32: return 32;
    case DataType::kInt64: return 64;
    case DataType::kString: return static_cast<int>(8 * sizeof(std::string));
    case DataType::kBool: return 8;
    case DataType::kFloat16: return 16;
    case DataType::kDouble: return 64;
    case DataType::kUInt32: return 32;
    case DataType::kUInt64: return 64;
    case DataType::kComplex64: return 64;
    case DataType::kComplex128: return 128;
    case DataType::kBFloat16: return 16;
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat8E8M0: return 8;
    case DataType::kUInt4:
    case DataType::kInt4:
    case DataType::kFloat4E2M1: return 4;
    case DataType::kUInt2:
    case DataType::kInt2: return 2;
    case DataType::kFloat6E2M3:
    case DataType::kFloat6E3M2: return 6;
    case DataType::kUndefined: return 0;
  }
  return 0;
}

size_t ElementSize(DataType type) noexcept {
  const int bits = ElementBits(type);
  return bits % 8 == 0 ? static_cast<size_t>(bits / 8) : 0;
}

size_t StorageBytes(DataType type, int64_t elements) noexcept {
  const auto bits = static_cast<uint64_t>(ElementBits(type));
  if (bits == 0 || elements <= 0) return 0;
  // elements = 8q + r: bytes = q * bits + ceil(r * bits / 8), with no intermediate overflow.
  const uint64_t q = static_cast<uint64_t>(elements) / 8;
  const uint64_t r = static_cast<uint64_t>(elements) % 8;
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(q, bits, &bytes) || __builtin_add_overflow(bytes, (r * bits + 7) / 8, &bytes) ||
      bytes > std::numeric_limits<size_t>::max()) {
    return std::numeric_limits<size_t>::max();
  }
  return static_cast<size_t>(bytes);
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
    case DataType::kFloat8E4M3FN: return "float8e4m3fn";
    case DataType::kFloat8E4M3FNUZ: return "float8e4m3fnuz";
    case DataType::kFloat8E5M2: return "float8e5m2";
    case DataType::kFloat8E5M2FNUZ: return "float8e5m2fnuz";
    case DataType::kUInt4: return "uint4";
    case DataType::kInt4: return "int4";
    case DataType::kFloat4E2M1: return "float4e2m1";
    case DataType::kFloat8E8M0: return "float8e8m0";
    case DataType::kUInt2: return "uint2";
    case DataType::kInt2: return "int2";
    case DataType::kFloat6E2M3: return "float6e2m3";
    case DataType::kFloat6E3M2: return "float6e3m2";
    case DataType::kUndefined: return "undefined";
  }
  return "unknown";
}

bool IsSupportedDataType(int32_t onnx_code) noexcept {
  return onnx_code >= 1 && onnx_code <= kMaxDataTypeCode && ElementBits(static_cast<DataType>(onnx_code)) != 0;
}

bool IsLowPrecisionFloat(DataType type) noexcept {
  switch (type) {
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat4E2M1:
    case DataType::kFloat8E8M0:
    case DataType::kFloat6E2M3:
    case DataType::kFloat6E3M2: return true;
    default: return false;
  }
}

}  // namespace onnx_light::runtime

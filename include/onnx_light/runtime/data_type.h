#pragma once
// Element types, numbered as ONNX TensorProto.DataType, and how their elements are stored.
//
// Storage: every type is stored as a little-endian, LSB-first stream of fixed-width elements.
// Element i of a contiguous run occupies bits [i * bits, (i + 1) * bits) counted from bit 0 of
// the run's first byte. For the byte-sized types this is the usual array; for the sub-byte types
// it is ONNX's packing: int4/uint4/float4e2m1 two per byte (low nibble first), int2/uint2 four per
// byte (lowest bits first), float6e2m3/float6e3m2 four in three bytes (a 6-bit element may
// straddle two bytes). The padding bits of a final partial byte are zero when the runtime writes
// them. Byte counts always come from StorageBytes, never from elements x ElementSize.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "onnx_light/runtime/export.h"

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
  kFloat8E4M3FN = 17,    // 1 sign, 4 exponent, 3 mantissa bits; no infinities, NaN = S.1111.111
  kFloat8E4M3FNUZ = 18,  // no infinities or negative zero, NaN = 0x80
  kFloat8E5M2 = 19,      // IEEE-like: infinities and NaNs
  kFloat8E5M2FNUZ = 20,  // no infinities or negative zero, NaN = 0x80
  kUInt4 = 21,           // two per byte
  kInt4 = 22,            // two per byte
  kFloat4E2M1 = 23,      // two per byte; no infinities or NaN
  kFloat8E8M0 = 24,      // unsigned power of two 2^(e - 127); NaN = 0xFF, no zero
  kUInt2 = 25,           // four per byte
  kInt2 = 26,            // four per byte
  kFloat6E2M3 = 27,      // four in three bytes; no infinities or NaN
  kFloat6E3M2 = 28,      // four in three bytes; no infinities or NaN
};

/// The largest ONNX element-type code this runtime knows.
inline constexpr int32_t kMaxDataTypeCode = 28;

/// Bits one element occupies in storage: 8 * bytes for the byte-sized types, 4 for
/// int4/uint4/float4e2m1, 2 for int2/uint2, 6 for the float6 types, 8 * sizeof(std::string) for
/// strings; 0 for kUndefined and codes the runtime does not know.
ONNX_LIGHT_API int ElementBits(DataType type) noexcept;

/// True for the types whose elements are narrower than a byte (several share one byte).
inline bool IsSubByte(DataType type) noexcept {
  const int bits = ElementBits(type);
  return bits > 0 && bits < 8;
}

/// Bytes per element of a byte-addressable type (1, 2, 4, 8, 16, or sizeof(std::string)).
/// 0 for sub-byte types (their elements have no byte size: use StorageBytes), for kUndefined and
/// for unknown codes.
ONNX_LIGHT_API size_t ElementSize(DataType type) noexcept;

/// Bytes that `elements` elements of `type` occupy stored contiguously from a byte boundary:
/// ceil(elements * ElementBits(type) / 8). 0 for unknown types and non-positive counts;
/// SIZE_MAX when the count does not fit size_t (no real buffer has that size, so comparing or
/// allocating with it fails).
ONNX_LIGHT_API size_t StorageBytes(DataType type, int64_t elements) noexcept;

/// True when element `index` of a contiguous run starts on a byte boundary (always for
/// byte-sized types; for sub-byte types when index * bits is a multiple of 8).
inline bool IsByteAligned(DataType type, int64_t index) noexcept {
  return (index * ElementBits(type)) % 8 == 0;
}

/// Byte offset of element `index` of a contiguous run; requires IsByteAligned(type, index).
inline int64_t ByteOffset(DataType type, int64_t index) noexcept {
  return index * ElementBits(type) / 8;
}

/// Lowercase name as used in kernel-usage names and messages: "float32", "int64", "float16",
/// and ONNX's spelling for the newer types ("float8e4m3fn", "int4", "float6e3m2", ...).
ONNX_LIGHT_API std::string_view DataTypeName(DataType type) noexcept;

/// True for the ONNX codes this runtime can hold in a Tensor.
ONNX_LIGHT_API bool IsSupportedDataType(int32_t onnx_code) noexcept;

/// True for the float8/float6/float4 types and float8e8m0 (the low-precision floats).
ONNX_LIGHT_API bool IsLowPrecisionFloat(DataType type) noexcept;

}  // namespace onnx_light::runtime

#pragma once
// Conversions between float32/float64 and the low-precision float formats ONNX defines:
// float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, float8e8m0, float4e2m1, float6e2m3,
// float6e3m2. A code is the element's bit pattern in the low bits of a byte (unpacked; see
// core/packed_bits.h for the packed storage of the 4- and 6-bit types).
//
// Decoding is exact (every value of these formats is a float32). Encoding rounds to nearest,
// ties to even, from the exact source value (float32 or float64, so a float64 source is rounded
// once, not twice), and then applies the format's out-of-range rule:
//
//   format          NaN in          +-Inf in / rounded value beyond max finite
//                                   saturate = true        saturate = false
//   e4m3fn          +-NaN (S.1111.111)   +-max (448)        +-NaN
//   e5m2            +-NaN (S.11111.10)   +-max (57344)      +-Inf
//   e4m3fnuz        NaN (0x80)           +-max (240)        NaN
//   e5m2fnuz        NaN (0x80)           +-max (57344)      NaN
//   e2m1, e2m3,     a zero whose sign    +-max (6, 7.5, 28) always (the formats have no
//   e3m2            bit is the NaN's     infinity or NaN)
//                   inverted
//
// fnuz formats have no negative zero: -0 and negative values that round to zero give +0. These
// are the results of onnx.reference's Cast (onnx.numpy_helper.saturate_cast and ml_dtypes), bit
// for bit; the NaN rule of the 4- and 6-bit formats is ml_dtypes' (the onnx float4 note says
// NaN -> 6, the reference and the conformance cases give zero; we follow the reference).
//
// float8e8m0 (an unsigned power of two 2^(e - 127), NaN = 0xFF, no zero) follows
// onnx.numpy_helper.to_float8e8m0 on the float32 value: only the exponent field counts, the sign
// is ignored, and the mantissa decides the rounding (kUp: any fraction rounds up; kDown:
// truncate; kNearest: round half up on the magnitude). With saturate a round-up from the largest
// exponent stays at 2^127. Two points where Cast-24's table is explicit and the reference script
// is not are taken from the table: +-Inf gives 2^127 (E8M0_MAX) when saturating and NaN
// otherwise, and +-0 gives NaN when not saturating (0x00, 2^-127, when saturating).
//
// Thread-safe: pure functions over immutable tables.

#include <cstdint>

#include "onnx_light/runtime/data_type.h"

namespace onnx_light::runtime {

/// Cast-24's round_mode for float8e8m0.
enum class E8M0Rounding { kUp, kDown, kNearest };

/// The 2^ElementBits(type) values of a low-precision float type, indexed by code (NaN where the
/// code is NaN). Null for other types.
const float* LowPrecisionDecodeTable(DataType type) noexcept;

/// The value of `code` (low ElementBits(type) bits) of a low-precision float type; exact.
inline float LowPrecisionToFloat(DataType type, uint8_t code) noexcept {
  return LowPrecisionDecodeTable(type)[code];
}

/// Decodes `n` unpacked codes into floats.
void DecodeLowPrecision(DataType type, const uint8_t* codes, int64_t n, float* out) noexcept;

/// The code of `value` in the float8/float6/float4 `type` (not float8e8m0), rounded to nearest
/// even; `saturate` as in Cast-19 (ignored by the 4- and 6-bit formats, which always saturate).
uint8_t FloatToLowPrecision(DataType type, float value, bool saturate) noexcept;
uint8_t DoubleToLowPrecision(DataType type, double value, bool saturate) noexcept;

/// Block forms of the two above: `n` values into `n` unpacked codes.
void EncodeLowPrecision(DataType type, const float* values, int64_t n, uint8_t* codes, bool saturate) noexcept;
void EncodeLowPrecision(DataType type, const double* values, int64_t n, uint8_t* codes, bool saturate) noexcept;

/// float8e8m0 code of a float32 value (see the file comment).
uint8_t FloatToE8M0(float value, bool saturate, E8M0Rounding rounding) noexcept;
void EncodeE8M0(const float* values, int64_t n, uint8_t* codes, bool saturate, E8M0Rounding rounding) noexcept;

}  // namespace onnx_light::runtime

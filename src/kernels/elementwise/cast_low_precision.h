#pragma once
// Cast between the element types ONNX added for low precision (float8e4m3fn/fnuz, float8e5m2/fnuz,
// float8e8m0, float4e2m1, float6e2m3/e3m2, int4/uint4, int2/uint2) and every numeric type and
// bool. cast_kernels.cc routes a Cast or CastLike here when either side is one of those types;
// strings go through float32/float64/int64 there.
//
// Rules (docs/element-types.md):
// - To a low-precision float: round to nearest even from the exact source value, then the
//   format's saturate rule (core/low_precision.h); float8e8m0 takes the value as float32 first
//   and rounds per round_mode.
// - To int4/uint4/int2/uint2: from an integer or bool, the low bits (wrap-around, as Cast does
//   between integer types); from a float, truncation toward zero, and 0 for NaN, infinities and
//   values whose truncation lies outside the type's range (the spec leaves these undefined; 0 is
//   what ml_dtypes gives, so onnx.reference and the conformance cases expect it).
// - From a low-precision float: the exact value as float32, then the usual Cast rule to the
//   target. From int4/uint4/int2/uint2: the integer value.

#include "core/low_precision.h"
#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

struct LowPrecisionCastOptions {
  bool saturate = true;
  E8M0Rounding rounding = E8M0Rounding::kUp;
};

/// True for the types this file adds to Cast: the low-precision floats and the packed integers.
bool IsLowPrecisionCastType(DataType type) noexcept;

/// The Cast (and CastLike) version that first lists `type` among its allowed types: 19 for the
/// float8 types, 21 for int4/uint4, 23 for float4e2m1, 24 for float8e8m0, 25 for int2/uint2, 28
/// for the float6 types; 1 for every other type.
int64_t FirstCastVersion(DataType type) noexcept;

/// Casts the contiguous `src` into the contiguous `dst` of the same element count, where `src`
/// or `dst` has a low-precision type and neither is a string. Unsupported partner types (complex)
/// are reported for the node's input 0.
void CastLowPrecision(const RuntimeContext& rt, const Tensor& src, Tensor& dst, const LowPrecisionCastOptions& options);

}  // namespace onnx_light::runtime

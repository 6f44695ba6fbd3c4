#pragma once
// The hot loops of QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear for float32 and
// 8-bit integers, with an AVX2 path chosen at run time and a portable one.
//
// Quantize: y = saturate(rint(x / scale) + zero_point) to [-128, 127] (int8) or [0, 255]
// (uint8); rint rounds half to even, NaN gives the type's minimum (what onnx.reference's
// int32 conversion and clip give), +-Inf and huge values saturate. The division is a true
// float32 division, never a multiplication by 1 / scale, so results are bit-exact.
// Dequantize: y = (float(x) - float(zero_point)) * scale, in float32 (exact subtraction, one
// rounding).

#include <cstdint>

namespace onnx_light::runtime {

/// One scale and zero point for all `n` elements; `y` is int8_t* or uint8_t*.
void QuantizeRowF32(const float* x, int64_t n, float scale, float zero_point, bool is_signed, void* y);
/// Element i uses scale[i] and zero_point[i].
void QuantizeRowF32PerElement(const float* x, int64_t n, const float* scale, const float* zero_point,
                              bool is_signed, void* y);
/// `x` is int8_t* or uint8_t*.
void DequantizeRowToF32(const void* x, bool is_signed, int64_t n, float scale, float zero_point, float* y);
void DequantizeRowToF32PerElement(const void* x, bool is_signed, int64_t n, const float* scale,
                                  const float* zero_point, float* y);
/// Minimum and maximum of `n` > 0 floats, NaN elements ignored (both NaN when all are).
void MinMaxF32(const float* x, int64_t n, float* min_value, float* max_value);

/// True when the AVX2 loops are used (the CPU has AVX2 and ONNX_LIGHT_DISABLE_AVX2 is unset).
bool QuantRowsUseAvx2();

}  // namespace onnx_light::runtime

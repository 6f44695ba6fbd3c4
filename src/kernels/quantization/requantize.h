#pragma once
// The output stage of QLinearMatMul and QLinearConv, as onnx.reference computes it: the int32
// accumulator times the multiplier (a_scale * b_scale / y_scale, in the scales' type) in
// float64, plus the output zero point, rounded half to even and clipped to int8/uint8.

#include <cstdint>

#include "kernels/quantization/quant_arith.h"

namespace onnx_light::runtime {

/// a_scale * b_scale / y_scale computed in `scale_type` (float32, float16 or bfloat16).
inline double RequantMultiplier(DataType scale_type, double a_scale, double b_scale, double y_scale) {
  return DivideIn(scale_type, MultiplyIn(scale_type, a_scale, b_scale), y_scale);
}

/// y[i] = clip(rint(acc[i] * multiplier + zero_point)); `y` is int8_t* or uint8_t*.
/// Clipping to integer bounds commutes with rounding, so the value is clipped first (NaN gives
/// the minimum) and then rounded half to even by adding and subtracting 1.5 * 2^52, which the
/// baseline x86-64 build would otherwise do with a libm call per element. Vectorised per CPU;
/// with AVX-512, 16 lanes at a time and a conversion that rounds half to even (the same values).
/// `bias` is added to every accumulator first, wrapping like numpy's int32 (QLinearConv's B).
void RequantizeRow(const int32_t* acc, int64_t n, double multiplier, double zero_point, bool is_signed, void* y,
                   int32_t bias = 0);

/// The same with one multiplier per element (per-column scales of a matmul row).
void RequantizeColumns(const int32_t* acc, int64_t n, const double* multipliers, double zero_point, bool is_signed,
                       void* y);

}  // namespace onnx_light::runtime

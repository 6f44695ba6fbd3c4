#pragma once
// The element loops of the com.microsoft quantized operators, written to give ONNX Runtime's CPU
// results bit for bit (its MLAS kernels on an x86-64 CPU with AVX2 and FMA), with an AVX2 path
// chosen at run time (QuantRowsUseAvx2, linear_rows.h) and a portable one computing the same
// float32 operations in the same order. 8-bit data travels as bytes; `is_signed` says int8.
//
// Rounding: float32 to int32 to nearest even, as cvtps2dq does (a value outside the int32 range
// or NaN gives INT32_MIN), then saturation to the 8-bit range.

#include <cstdint>

namespace onnx_light::runtime {

/// QLinearAdd. `p` is the vector operand, `s` the other one (one element when `s_scalar`):
///   fixed = float(zc) - fma(rp, zp, rs * zs),  y = sat(rint(fma(p, rp, fma(s, rs, fixed))))
/// with rp = scale_p / scale_c and rs = scale_s / scale_c (float32 divisions).
struct QLinearAddTerms {
  float rp, rs, fixed;
};
QLinearAddTerms MakeQLinearAddTerms(float scale_p, int32_t zp, float scale_s, int32_t zs, float scale_c, int32_t zc);
void QLinearAddRow(const void* p, const void* s, bool s_scalar, int64_t n, const QLinearAddTerms& terms,
                   bool is_signed, void* y);

/// QLinearMul: y = sat(rint(float((a - za) * (b - zb)) * ratio + float(zc))), the product and the
/// sum each rounded to float32 (no fused multiply-add), ratio = scale_a * scale_b / scale_c.
void QLinearMulRow(const void* a, const void* b, bool b_scalar, int64_t n, int32_t za, int32_t zb, float ratio,
                   int32_t zc, bool is_signed, void* y);

/// sums[r] = the sum of the `len` 8-bit values of row r (rows contiguous, `rows` of them).
void SumByteRows(const void* x, bool is_signed, int64_t rows, int64_t len, int32_t* sums);

/// Adds each of the `rows` contiguous rows of `channels` 8-bit values into acc[channel].
void AccumulateByteColumns(const void* x, bool is_signed, int64_t rows, int64_t channels, int32_t* acc);

/// The requantization of ONNX Runtime's integer GEMM and average pooling output stage:
///   y[i] = clamp(rint(float(acc[i] + bias) * scale), lo - zp, hi - zp) + zp
/// in float32; `scales` (one per element, may be null) replaces `scale`.
void RequantizeInt32(const int32_t* acc, int64_t n, int32_t bias, float scale, const float* scales, int32_t zp,
                     bool is_signed, void* y);

/// cvtps2dq on one value: round to nearest even, INT32_MIN outside the int32 range and for NaN.
inline int32_t RoundToInt32LikeCvtps(float v) {
  if (!(v > -2147483648.0f && v < 2147483648.0f)) return INT32_MIN;
  // Adding and subtracting 1.5 * 2^23 rounds to nearest even for |v| < 2^22; larger floats are
  // integers already.
  if (v > 4194304.0f || v < -4194304.0f) return static_cast<int32_t>(v);
  constexpr float kRound = 12582912.0f;
  return static_cast<int32_t>((v + kRound) - kRound);
}

}  // namespace onnx_light::runtime

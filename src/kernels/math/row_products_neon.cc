#include "kernels/math/row_products_neon.h"

#if ONNX_LIGHT_HAVE_NEON_ROW_PRODUCTS

#include <arm_neon.h>

#include <algorithm>

#include "kernels/elementwise/fast_math.h"

namespace onnx_light::runtime::neon {

namespace {

// Four elements as floats. float16 converts in hardware (FCVTL is base aarch64); bfloat16 is the
// high half of a float32, so widening with a 16-bit shift is exact.
inline float32x4_t Load4(const float* p) { return vld1q_f32(p); }
inline float32x4_t Load4(const Float16* p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
}
inline float32x4_t Load4(const BFloat16* p) {
  return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p)), 16));
}

inline float ToFloat(float v) { return v; }
inline float ToFloat(Float16 v) { return fast_math::HalfToFloat(v.bits); }
inline float ToFloat(BFloat16 v) { return fast_math::BFloat16ToFloat(v.bits); }

// Four rows at a time against the same x vector (x is loaded once for all four), then one row
// with two accumulators so consecutive multiply-adds do not wait on each other.
template <typename E>
void RowDotsImpl(const E* rows, int64_t stride, int64_t n, int64_t width, const float* x, float alpha, float* out) {
  const int64_t body = width - width % 4;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const E* r = rows + j * stride;
    float32x4_t acc[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    for (int64_t c = 0; c < body; c += 4) {
      const float32x4_t xv = vld1q_f32(x + c);
      for (int k = 0; k < 4; ++k) acc[k] = vfmaq_f32(acc[k], Load4(r + k * stride + c), xv);
    }
    for (int k = 0; k < 4; ++k) {
      float sum = vaddvq_f32(acc[k]);
      for (int64_t c = body; c < width; ++c) sum += ToFloat(r[k * stride + c]) * x[c];
      out[j + k] = alpha * sum;
    }
  }
  for (; j < n; ++j) {
    const E* r = rows + j * stride;
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = vdupq_n_f32(0.0f);
    int64_t c = 0;
    for (; c + 8 <= body; c += 8) {
      a0 = vfmaq_f32(a0, Load4(r + c), vld1q_f32(x + c));
      a1 = vfmaq_f32(a1, Load4(r + c + 4), vld1q_f32(x + c + 4));
    }
    if (c < body) a0 = vfmaq_f32(a0, Load4(r + c), vld1q_f32(x + c));
    float sum = vaddvq_f32(vaddq_f32(a0, a1));
    for (c = body; c < width; ++c) sum += ToFloat(r[c]) * x[c];
    out[j] = alpha * sum;
  }
}

// Narrow rows (an attention head, 4·V wide): the output row stays in V registers per set, and
// consecutive rows alternate between R sets so R·V multiply-adds are independent.
template <int V, typename E>
void WeightedNarrow(const E* rows, int64_t stride, int64_t n, const float* w, float* out) {
  constexpr int R = V >= 8 ? 1 : 8 / V;
  float32x4_t acc[R][V];
  for (auto& set : acc) {
    for (float32x4_t& a : set) a = vdupq_n_f32(0.0f);
  }
  int64_t j = 0;
  for (; j + R <= n; j += R) {
    for (int r = 0; r < R; ++r) {
      const E* row = rows + (j + r) * stride;
      const float wj = w[j + r];
      for (int v = 0; v < V; ++v) acc[r][v] = vfmaq_n_f32(acc[r][v], Load4(row + 4 * v), wj);
    }
  }
  for (; j < n; ++j) {
    const E* row = rows + j * stride;
    for (int v = 0; v < V; ++v) acc[0][v] = vfmaq_n_f32(acc[0][v], Load4(row + 4 * v), w[j]);
  }
  for (int v = 0; v < V; ++v) {
    float32x4_t sum = acc[0][v];
    for (int r = 1; r < R; ++r) sum = vaddq_f32(sum, acc[r][v]);
    vst1q_f32(out + 4 * v, sum);
  }
}

// Wide rows (a weight matrix, the one-row MatMul): `out` gathers four rows per pass, so the
// matrix streams through once in storage order while `out` stays in cache.
template <typename E>
void WeightedWide(const E* rows, int64_t stride, int64_t n, int64_t width, const float* w, float* out) {
  const int64_t body = width - width % 4;
  std::fill_n(out, width, 0.0f);
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const E* r = rows + j * stride;
    const float w0 = w[j], w1 = w[j + 1], w2 = w[j + 2], w3 = w[j + 3];
    for (int64_t c = 0; c < body; c += 4) {
      float32x4_t acc = vld1q_f32(out + c);
      acc = vfmaq_n_f32(acc, Load4(r + c), w0);
      acc = vfmaq_n_f32(acc, Load4(r + stride + c), w1);
      acc = vfmaq_n_f32(acc, Load4(r + 2 * stride + c), w2);
      acc = vfmaq_n_f32(acc, Load4(r + 3 * stride + c), w3);
      vst1q_f32(out + c, acc);
    }
    for (int64_t c = body; c < width; ++c) {
      out[c] += w0 * ToFloat(r[c]) + w1 * ToFloat(r[stride + c]) + w2 * ToFloat(r[2 * stride + c]) +
                w3 * ToFloat(r[3 * stride + c]);
    }
  }
  for (; j < n; ++j) {
    const E* r = rows + j * stride;
    for (int64_t c = 0; c < body; c += 4) vst1q_f32(out + c, vfmaq_n_f32(vld1q_f32(out + c), Load4(r + c), w[j]));
    for (int64_t c = body; c < width; ++c) out[c] += w[j] * ToFloat(r[c]);
  }
}

template <typename E>
void WeightedRowSumImpl(const E* rows, int64_t stride, int64_t n, int64_t width, const float* w, float* out) {
  switch (width) {
    case 16: return WeightedNarrow<4>(rows, stride, n, w, out);
    case 32: return WeightedNarrow<8>(rows, stride, n, w, out);
    case 64: return WeightedNarrow<16>(rows, stride, n, w, out);
    default: return WeightedWide(rows, stride, n, width, w, out);
  }
}

}  // namespace

template <typename E>
void RowDots(const E* rows, int64_t row_stride, int64_t n, int64_t width, const float* x, float alpha, float* out) {
  RowDotsImpl(rows, row_stride, n, width, x, alpha, out);
}

template <typename E>
void WeightedRowSum(const E* rows, int64_t row_stride, int64_t n, int64_t width, const float* weights, float* out) {
  WeightedRowSumImpl(rows, row_stride, n, width, weights, out);
}

#define ONNX_LIGHT_NEON_ROW_PRODUCTS(E)                                                                        \
  template void RowDots<E>(const E*, int64_t, int64_t, int64_t, const float*, float, float*);                  \
  template void WeightedRowSum<E>(const E*, int64_t, int64_t, int64_t, const float*, float*);
ONNX_LIGHT_NEON_ROW_PRODUCTS(float)
ONNX_LIGHT_NEON_ROW_PRODUCTS(Float16)
ONNX_LIGHT_NEON_ROW_PRODUCTS(BFloat16)
#undef ONNX_LIGHT_NEON_ROW_PRODUCTS

}  // namespace onnx_light::runtime::neon

#endif  // ONNX_LIGHT_HAVE_NEON_ROW_PRODUCTS

#include "kernels/math/row_products.h"

#include <algorithm>

#include "kernels/registry/cpu_features.h"
#include "kernels/elementwise/fast_math.h"
#include "kernels/math/row_products_avx512.h"
#include "kernels/math/row_products_neon.h"

namespace onnx_light::runtime {

namespace {

// Column blocks of this many floats keep their accumulators in registers (4 AVX-512 vectors).
constexpr int64_t kBlock = 64;

inline float ToFloat(float v) { return v; }
inline float ToFloat(Float16 v) { return fast_math::HalfToFloat(v.bits); }
inline float ToFloat(BFloat16 v) { return fast_math::BFloat16ToFloat(v.bits); }

// out[0, W) = sum_j weights[j] * rows[j * row_stride + (0, W)], accumulated in registers. Sets
// > 1 spreads consecutive rows over that many accumulator sets, so a narrow block (one attention
// head) has independent additions in flight instead of one chain as long as the rows.
template <int64_t W, int Sets = 1, typename E>
inline void WeightedBlock(const E* rows, int64_t row_stride, int64_t n, const float* weights, float* out) {
  float acc[Sets][W] = {};
  int64_t j = 0;
  for (; j + Sets <= n; j += Sets) {
    for (int set = 0; set < Sets; ++set) {
      const E* row = rows + (j + set) * row_stride;
      const float w = weights[j + set];
#pragma omp simd
      for (int64_t c = 0; c < W; ++c) acc[set][c] += w * ToFloat(row[c]);
    }
  }
  for (; j < n; ++j) {
    const E* row = rows + j * row_stride;
    const float w = weights[j];
#pragma omp simd
    for (int64_t c = 0; c < W; ++c) acc[0][c] += w * ToFloat(row[c]);
  }
  for (int set = 1; set < Sets; ++set) {
#pragma omp simd
    for (int64_t c = 0; c < W; ++c) acc[0][c] += acc[set][c];
  }
  std::copy_n(acc[0], W, out);
}

template <typename E>
inline void WeightedRowSumImpl(const E* rows, int64_t row_stride, int64_t n, int64_t width, const float* weights,
                               float* out) {
  if (width == 16) return WeightedBlock<16, 4>(rows, row_stride, n, weights, out);
  if (width == 32) return WeightedBlock<32, 2>(rows, row_stride, n, weights, out);
  int64_t c = 0;
  for (; c + kBlock <= width; c += kBlock) WeightedBlock<kBlock>(rows + c, row_stride, n, weights, out + c);
  for (; c + 16 <= width; c += 16) WeightedBlock<16>(rows + c, row_stride, n, weights, out + c);
  if (c == width) return;
  const int64_t tail = width - c;
  std::fill_n(out + c, tail, 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    const E* row = rows + j * row_stride + c;
    for (int64_t t = 0; t < tail; ++t) out[c + t] += weights[j] * ToFloat(row[t]);
  }
}

template <typename E>
inline void RowDotsImpl(const E* rows, int64_t row_stride, int64_t n, int64_t width, const float* x, float alpha,
                        float* out) {
  for (int64_t j = 0; j < n; ++j) {
    const E* row = rows + j * row_stride;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < width; ++c) sum += ToFloat(row[c]) * x[c];
    out[j] = alpha * sum;
  }
}

}  // namespace

namespace {

template <typename E>
void DispatchRowDots(const E* rows, int64_t row_stride, int64_t n, int64_t width, const float* x, float alpha,
                     float* out) {
#if ONNX_LIGHT_HAVE_AVX512_ROW_PRODUCTS
  if (UseAvx512()) return avx512::RowDots(rows, row_stride, n, width, x, alpha, out);
#endif
#if ONNX_LIGHT_HAVE_NEON_ROW_PRODUCTS
  return neon::RowDots(rows, row_stride, n, width, x, alpha, out);
#endif
  RowDotsPortable(rows, row_stride, n, width, x, alpha, out);
}

template <typename E>
void DispatchWeightedRowSum(const E* rows, int64_t row_stride, int64_t n, int64_t width, const float* weights,
                            float* out) {
#if ONNX_LIGHT_HAVE_AVX512_ROW_PRODUCTS
  if (UseAvx512()) return avx512::WeightedRowSum(rows, row_stride, n, width, weights, out);
#endif
#if ONNX_LIGHT_HAVE_NEON_ROW_PRODUCTS
  return neon::WeightedRowSum(rows, row_stride, n, width, weights, out);
#endif
  WeightedRowSumPortable(rows, row_stride, n, width, weights, out);
}

}  // namespace

// The four entry points for one element type: the portable versions (one clone per instruction
// set) and the public ones, which take the AVX-512 versions when the CPU has them and the NEON
// ones on aarch64.
#define ONNX_LIGHT_ROW_PRODUCTS(E)                                                                          \
  ONNX_LIGHT_CPU_CLONES void RowDotsPortable(const E* rows, int64_t row_stride, int64_t n, int64_t width,   \
                                             const float* x, float alpha, float* out) {                    \
    RowDotsImpl(rows, row_stride, n, width, x, alpha, out);                                                 \
  }                                                                                                         \
  ONNX_LIGHT_CPU_CLONES void WeightedRowSumPortable(const E* rows, int64_t row_stride, int64_t n,           \
                                                    int64_t width, const float* weights, float* out) {      \
    WeightedRowSumImpl(rows, row_stride, n, width, weights, out);                                           \
  }                                                                                                         \
  void RowDots(const E* rows, int64_t row_stride, int64_t n, int64_t width, const float* x, float alpha,     \
               float* out) {                                                                                \
    DispatchRowDots(rows, row_stride, n, width, x, alpha, out);                                             \
  }                                                                                                         \
  void WeightedRowSum(const E* rows, int64_t row_stride, int64_t n, int64_t width, const float* weights,     \
                      float* out) {                                                                         \
    DispatchWeightedRowSum(rows, row_stride, n, width, weights, out);                                       \
  }

ONNX_LIGHT_ROW_PRODUCTS(float)
ONNX_LIGHT_ROW_PRODUCTS(Float16)
ONNX_LIGHT_ROW_PRODUCTS(BFloat16)
#undef ONNX_LIGHT_ROW_PRODUCTS

}  // namespace onnx_light::runtime

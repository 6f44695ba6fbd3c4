#include "kernels/row_products.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#define ONNX_LIGHT_HAVE_AVX512_PATH 1
#else
#define ONNX_LIGHT_HAVE_AVX512_PATH 0
#endif

// One clone per instruction set; the dynamic loader picks the best one for the running CPU.
#if defined(__x86_64__) && defined(__GNUC__)
#define ONNX_LIGHT_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ONNX_LIGHT_CPU_CLONES
#endif

namespace onnx_light::runtime {

namespace {

// Column blocks of this many floats keep their accumulators in registers (4 AVX-512 vectors).
constexpr int64_t kBlock = 64;

// out[0, W) = sum_j weights[j] * rows[j * row_stride + (0, W)], accumulated in registers.
template <int64_t W>
inline void WeightedBlock(const float* rows, int64_t row_stride, int64_t n, const float* weights,
                          float* out) {
  float acc[W] = {};
  for (int64_t j = 0; j < n; ++j) {
    const float* row = rows + j * row_stride;
    const float w = weights[j];
#pragma omp simd
    for (int64_t c = 0; c < W; ++c) acc[c] += w * row[c];
  }
  std::copy_n(acc, W, out);
}

#if ONNX_LIGHT_HAVE_AVX512_PATH
// GCC vector types rather than <immintrin.h>: GCC 12's AVX-512 intrinsics raise
// -Wmaybe-uninitialized inside its own headers once inlined (GCC bug 105593).
using Lanes = float __attribute__((vector_size(64), aligned(4)));

__attribute__((target("avx512f"))) inline Lanes LoadLanes(const float* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Horizontal sum by halving (the order of a vector reduction, not of a scalar loop).
__attribute__((target("avx512f"))) inline float SumLanes(Lanes v) {
  using Half = float __attribute__((vector_size(32)));
  using Quarter = float __attribute__((vector_size(16)));
  const Half h = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                 __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const Quarter q = __builtin_shufflevector(h, h, 0, 1, 2, 3) + __builtin_shufflevector(h, h, 4, 5, 6, 7);
  return (q[0] + q[2]) + (q[1] + q[3]);
}

// Four rows at a time: a row's sum is a short chain of multiply-adds that ends in a horizontal
// reduction, so one row at a time leaves the core waiting on latency rather than on memory
// (compilers do not interleave the reductions of different rows on their own).
__attribute__((target("avx512f"))) void RowDotsAvx512(const float* rows, int64_t row_stride, int64_t n,
                                                      int64_t width, const float* x, float alpha, float* out) {
  const int64_t body = width - width % 16;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const float* r = rows + j * row_stride;
    Lanes a0 = {}, a1 = {}, a2 = {}, a3 = {};
    for (int64_t c = 0; c < body; c += 16) {
      const Lanes xv = LoadLanes(x + c);
      a0 += LoadLanes(r + c) * xv;
      a1 += LoadLanes(r + row_stride + c) * xv;
      a2 += LoadLanes(r + 2 * row_stride + c) * xv;
      a3 += LoadLanes(r + 3 * row_stride + c) * xv;
    }
    float s[4] = {SumLanes(a0), SumLanes(a1), SumLanes(a2), SumLanes(a3)};
    for (int64_t c = body; c < width; ++c) {
      for (int k = 0; k < 4; ++k) s[k] += r[k * row_stride + c] * x[c];
    }
    for (int k = 0; k < 4; ++k) out[j + k] = alpha * s[k];
  }
  for (; j < n; ++j) {
    const float* r = rows + j * row_stride;
    Lanes a = {};
    for (int64_t c = 0; c < body; c += 16) a += LoadLanes(r + c) * LoadLanes(x + c);
    float s = SumLanes(a);
    for (int64_t c = body; c < width; ++c) s += r[c] * x[c];
    out[j] = alpha * s;
  }
}
#endif

}  // namespace

ONNX_LIGHT_CPU_CLONES
void RowDotsPortable(const float* rows, int64_t row_stride, int64_t n, int64_t width, const float* x,
                     float alpha, float* out) {
  for (int64_t j = 0; j < n; ++j) {
    const float* row = rows + j * row_stride;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < width; ++c) sum += row[c] * x[c];
    out[j] = alpha * sum;
  }
}

void RowDots(const float* rows, int64_t row_stride, int64_t n, int64_t width, const float* x, float alpha,
             float* out) {
#if ONNX_LIGHT_HAVE_AVX512_PATH
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512) return RowDotsAvx512(rows, row_stride, n, width, x, alpha, out);
#endif
  RowDotsPortable(rows, row_stride, n, width, x, alpha, out);
}

ONNX_LIGHT_CPU_CLONES
void WeightedRowSum(const float* rows, int64_t row_stride, int64_t n, int64_t width,
                    const float* weights, float* out) {
  int64_t c = 0;
  for (; c + kBlock <= width; c += kBlock) WeightedBlock<kBlock>(rows + c, row_stride, n, weights, out + c);
  for (; c + 16 <= width; c += 16) WeightedBlock<16>(rows + c, row_stride, n, weights, out + c);
  if (c == width) return;
  const int64_t tail = width - c;
  std::fill_n(out + c, tail, 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    const float* row = rows + j * row_stride + c;
    for (int64_t t = 0; t < tail; ++t) out[c + t] += weights[j] * row[t];
  }
}

}  // namespace onnx_light::runtime

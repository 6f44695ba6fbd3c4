// GCC 12's AVX-512 intrinsics seed results with _mm512_undefined_ps() and, once inlined into a
// target("avx512f") function, warn that it is uninitialized (GCC bug 105593, fixed in GCC 13).
// The pragmas must come before the header: the warnings are reported inside it.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/math/row_products_avx512.h"

#if ONNX_LIGHT_HAVE_AVX512_ROW_PRODUCTS

#include <immintrin.h>

#include <algorithm>

#define ONNX_LIGHT_AVX512 __attribute__((target("avx512f")))

namespace onnx_light::runtime::avx512 {

namespace {

// Sixteen elements as floats; LoadTail reads only `count` < 16 of them (the rest are zero).
ONNX_LIGHT_AVX512 inline __m512 Load16(const float* p) { return _mm512_loadu_ps(p); }
ONNX_LIGHT_AVX512 inline __m512 Load16(const Float16* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
ONNX_LIGHT_AVX512 inline __m512 Load16(const BFloat16* p) {
  const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}
ONNX_LIGHT_AVX512 inline __m512 LoadTail(const float* p, int64_t count) {
  return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << count) - 1u), p);
}
// 16-bit tails go through a zeroed copy: masked 16-bit loads would need AVX512BW.
template <typename E>
ONNX_LIGHT_AVX512 inline __m512 LoadTail(const E* p, int64_t count) {
  E tmp[16] = {};
  std::copy_n(p, count, tmp);
  return Load16(tmp);
}

// Lane l of the result is the sum of the sixteen lanes of v[l]: a transposing tree of 15 adds
// (instead of a separate horizontal reduction per row). Level by level the vectors hold two,
// four, eight, then sixteen rows' partial sums.
ONNX_LIGHT_AVX512 inline __m512 SumEach(const __m512 (&v)[16]) {
  __m512 pairs[8];  // per 128-bit lane: [r0, r1, r0, r1] partials of rows 2i, 2i+1
  for (int i = 0; i < 8; ++i) {
    pairs[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  }
  __m512 quads[4];  // per 128-bit lane: [r0, r1, r2, r3] partials of rows 4i..4i+3
  for (int i = 0; i < 4; ++i) {
    const __m512d a = _mm512_castps_pd(pairs[2 * i]);
    const __m512d b = _mm512_castps_pd(pairs[2 * i + 1]);
    quads[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  __m512 octs[2];  // 128-bit lanes: rows 8i..8i+3 (twice), rows 8i+4..8i+7 (twice)
  for (int i = 0; i < 2; ++i) {
    octs[i] = _mm512_add_ps(_mm512_shuffle_f32x4(quads[2 * i], quads[2 * i + 1], 0x88),
                            _mm512_shuffle_f32x4(quads[2 * i], quads[2 * i + 1], 0xDD));
  }
  return _mm512_add_ps(_mm512_shuffle_f32x4(octs[0], octs[1], 0x88), _mm512_shuffle_f32x4(octs[0], octs[1], 0xDD));
}

// Sixteen rows at a time, reduced together by SumEach; then four, then one. A row's sum is a
// short chain of multiply-adds ending in a reduction, so one row at a time waits on latency
// rather than on memory.
template <typename E>
ONNX_LIGHT_AVX512 void RowDotsImpl(const E* rows, int64_t stride, int64_t n, int64_t width, const float* x,
                                   float alpha, float* out) {
  const int64_t tail = width % 16;
  const int64_t body = width - tail;
  const __m512 x_tail = tail != 0 ? LoadTail(x + body, tail) : _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const E* r = rows + j * stride;
    __m512 acc[16];
    for (__m512& a : acc) a = _mm512_setzero_ps();
    for (int64_t c = 0; c < body; c += 16) {
      const __m512 xv = _mm512_loadu_ps(x + c);
      for (int k = 0; k < 16; ++k) acc[k] = _mm512_fmadd_ps(Load16(r + k * stride + c), xv, acc[k]);
    }
    if (tail != 0) {
      for (int k = 0; k < 16; ++k) acc[k] = _mm512_fmadd_ps(LoadTail(r + k * stride + body, tail), x_tail, acc[k]);
    }
    _mm512_storeu_ps(out + j, _mm512_mul_ps(_mm512_set1_ps(alpha), SumEach(acc)));
  }
  for (; j + 4 <= n; j += 4) {
    const E* r = rows + j * stride;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t c = 0; c < body; c += 16) {
      const __m512 xv = _mm512_loadu_ps(x + c);
      a0 = _mm512_fmadd_ps(Load16(r + c), xv, a0);
      a1 = _mm512_fmadd_ps(Load16(r + stride + c), xv, a1);
      a2 = _mm512_fmadd_ps(Load16(r + 2 * stride + c), xv, a2);
      a3 = _mm512_fmadd_ps(Load16(r + 3 * stride + c), xv, a3);
    }
    if (tail != 0) {
      a0 = _mm512_fmadd_ps(LoadTail(r + body, tail), x_tail, a0);
      a1 = _mm512_fmadd_ps(LoadTail(r + stride + body, tail), x_tail, a1);
      a2 = _mm512_fmadd_ps(LoadTail(r + 2 * stride + body, tail), x_tail, a2);
      a3 = _mm512_fmadd_ps(LoadTail(r + 3 * stride + body, tail), x_tail, a3);
    }
    out[j] = alpha * _mm512_reduce_add_ps(a0);
    out[j + 1] = alpha * _mm512_reduce_add_ps(a1);
    out[j + 2] = alpha * _mm512_reduce_add_ps(a2);
    out[j + 3] = alpha * _mm512_reduce_add_ps(a3);
  }
  for (; j < n; ++j) {
    const E* r = rows + j * stride;
    __m512 a = _mm512_setzero_ps();
    for (int64_t c = 0; c < body; c += 16) a = _mm512_fmadd_ps(Load16(r + c), _mm512_loadu_ps(x + c), a);
    if (tail != 0) a = _mm512_fmadd_ps(LoadTail(r + body, tail), x_tail, a);
    out[j] = alpha * _mm512_reduce_add_ps(a);
  }
}

// Narrow rows (an attention head, 16·V wide): the output row lives in V registers per set of
// rows, and consecutive rows go to R sets, so R·V (at least 8) multiply-adds are independent
// instead of each row waiting for the previous one's.
template <int V, typename E>
ONNX_LIGHT_AVX512 void WeightedNarrow(const E* rows, int64_t stride, int64_t n, const float* w, float* out) {
  constexpr int R = V >= 8 ? 1 : 8 / V;
  __m512 acc[R][V];
  for (auto& set : acc) {
    for (__m512& a : set) a = _mm512_setzero_ps();
  }
  int64_t j = 0;
  for (; j + R <= n; j += R) {
    for (int r = 0; r < R; ++r) {
      const E* row = rows + (j + r) * stride;
      const __m512 wj = _mm512_set1_ps(w[j + r]);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(Load16(row + 16 * v), wj, acc[r][v]);
    }
  }
  for (; j < n; ++j) {
    const E* row = rows + j * stride;
    const __m512 wj = _mm512_set1_ps(w[j]);
    for (int v = 0; v < V; ++v) acc[0][v] = _mm512_fmadd_ps(Load16(row + 16 * v), wj, acc[0][v]);
  }
  for (int v = 0; v < V; ++v) {
    __m512 sum = acc[0][v];
    for (int r = 1; r < R; ++r) sum = _mm512_add_ps(sum, acc[r][v]);
    _mm512_storeu_ps(out + 16 * v, sum);
  }
}

// Wide rows (a weight matrix): out (a panel of at most kPanel floats, resident in L1) gathers
// four rows per pass, so the matrix streams through once in its storage order.
constexpr int64_t kPanel = 4096;

template <typename E>
ONNX_LIGHT_AVX512 void WeightedPanel(const E* rows, int64_t stride, int64_t n, int64_t width, const float* w,
                                     float* out) {
  // Rows per pass: more rows amortise the panel's load and store; beyond 4 float32 rows (8 KiB
  // apart in a 2048-wide matrix) the extra concurrent streams cost more than they save.
  constexpr int kRows = sizeof(E) == 2 ? 8 : 4;
  const int64_t tail = width % 16;
  const int64_t body = width - tail;
  const __mmask16 tail_mask = static_cast<__mmask16>((1u << tail) - 1u);
  std::fill_n(out, width, 0.0f);
  int64_t j = 0;
  for (; j + kRows <= n; j += kRows) {
    const E* r = rows + j * stride;
    __m512 wk[kRows];
    for (int k = 0; k < kRows; ++k) wk[k] = _mm512_set1_ps(w[j + k]);
    for (int64_t c = 0; c < body; c += 16) {
      __m512 acc = _mm512_loadu_ps(out + c);
      for (int k = 0; k < kRows; ++k) acc = _mm512_fmadd_ps(Load16(r + k * stride + c), wk[k], acc);
      _mm512_storeu_ps(out + c, acc);
    }
    if (tail != 0) {
      __m512 acc = _mm512_maskz_loadu_ps(tail_mask, out + body);
      for (int k = 0; k < kRows; ++k) acc = _mm512_fmadd_ps(LoadTail(r + k * stride + body, tail), wk[k], acc);
      _mm512_mask_storeu_ps(out + body, tail_mask, acc);
    }
  }
  for (; j < n; ++j) {
    const E* r = rows + j * stride;
    const __m512 wj = _mm512_set1_ps(w[j]);
    for (int64_t c = 0; c < body; c += 16) {
      _mm512_storeu_ps(out + c, _mm512_fmadd_ps(Load16(r + c), wj, _mm512_loadu_ps(out + c)));
    }
    if (tail != 0) {
      const __m512 acc = _mm512_fmadd_ps(LoadTail(r + body, tail), wj, _mm512_maskz_loadu_ps(tail_mask, out + body));
      _mm512_mask_storeu_ps(out + body, tail_mask, acc);
    }
  }
}

template <typename E>
ONNX_LIGHT_AVX512 void WeightedRowSumImpl(const E* rows, int64_t stride, int64_t n, int64_t width,
                                          const float* w, float* out) {
  switch (width) {
    case 16: return WeightedNarrow<1>(rows, stride, n, w, out);
    case 32: return WeightedNarrow<2>(rows, stride, n, w, out);
    case 48: return WeightedNarrow<3>(rows, stride, n, w, out);
    case 64: return WeightedNarrow<4>(rows, stride, n, w, out);
    default: break;
  }
  for (int64_t c = 0; c < width; c += kPanel) {
    WeightedPanel(rows + c, stride, n, std::min(kPanel, width - c), w, out + c);
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

#define ONNX_LIGHT_INSTANTIATE(E)                                                                            \
  template void RowDots<E>(const E*, int64_t, int64_t, int64_t, const float*, float, float*);               \
  template void WeightedRowSum<E>(const E*, int64_t, int64_t, int64_t, const float*, float*);
ONNX_LIGHT_INSTANTIATE(float)
ONNX_LIGHT_INSTANTIATE(Float16)
ONNX_LIGHT_INSTANTIATE(BFloat16)
#undef ONNX_LIGHT_INSTANTIATE

}  // namespace onnx_light::runtime::avx512

#endif  // ONNX_LIGHT_HAVE_AVX512_ROW_PRODUCTS

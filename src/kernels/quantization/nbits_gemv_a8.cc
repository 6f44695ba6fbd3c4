// The weight-only product with A quantized to 8 bits (nbits_matmul.h, NBitsGemvA8): each scale
// block of an A row becomes int8 values with one scale, and the block's sum over K is an integer
// dot product of those values with the 4-bit codes, four pairs at a time (VPDPBUSD), instead of
// one float multiply-add per weight. The integer sums are exact; A's rounding to 8 bits is the
// only difference from the float loops (docs/quantization.md).
// GCC 12's AVX-512 intrinsics warn about their own _mm512_undefined seeds once inlined (GCC bug
// 105593, as in nbits_gemv.cc); the pragmas must precede the header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ONNX_LIGHT_NBITS_A8 1
#else
#define ONNX_LIGHT_NBITS_A8 0
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "kernels/quantization/nbits_matmul.h"

namespace onnx_light::runtime {

#if ONNX_LIGHT_NBITS_A8
namespace {

constexpr int64_t kTile = kNBitsTileColumns;
constexpr int64_t kGroup = kNBitsGroupRows;
#define ONNX_LIGHT_A8_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

// Quantizes A[k0, k1) (one scale block, k1 - k0 a multiple of 8 except at K's end) into `bytes`
// (relative to k0: group g's even rows, then its odd rows, 4 bytes each). Returns false for a
// NaN or an infinity.
ONNX_LIGHT_A8_TARGET bool QuantizeBlock(const float* a, int64_t k0, int64_t k1, uint8_t* bytes, float* scale,
                                        int32_t* sum) {
  __m512 amax = _mm512_setzero_ps();
  __mmask16 bad = 0;
  for (int64_t k = k0; k < k1; k += 16) {
    const __mmask16 live = static_cast<__mmask16>(k1 - k >= 16 ? 0xFFFF : (1u << (k1 - k)) - 1u);
    const __m512 v = _mm512_abs_ps(_mm512_maskz_loadu_ps(live, a + k));
    // Not finite: NaN (unordered with itself) or infinite (equal to +inf once absolute).
    bad |= _mm512_cmp_ps_mask(v, _mm512_set1_ps(INFINITY), _CMP_NLT_UQ);
    amax = _mm512_max_ps(amax, v);
  }
  if (bad != 0) return false;
  const float m = _mm512_reduce_max_ps(amax);
  *scale = m / 127.0f;
  const __m512 inverse = _mm512_set1_ps(m > 0.0f ? 127.0f / m : 0.0f);
  // Within each 8 bytes (one group of K rows): rows 0, 2, 4, 6, then 1, 3, 5, 7.
  const __m128i split = _mm_setr_epi8(0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15);
  __m512i total = _mm512_setzero_si512();
  for (int64_t k = k0; k < k1; k += 16) {
    const int64_t count = std::min<int64_t>(16, k1 - k);
    const __mmask16 live = static_cast<__mmask16>(count == 16 ? 0xFFFF : (1u << count) - 1u);
    // Nearest, ties to even (the default rounding mode); |a| * 127 / max stays within 127.
    const __m512i qi = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(live, a + k), inverse));
    total = _mm512_add_epi32(total, qi);
    const __m128i q8 = _mm_shuffle_epi8(_mm512_cvtsepi32_epi8(qi), split);
    const int64_t stored = (count + kGroup - 1) / kGroup * kGroup;  // whole groups, zero-padded
    _mm_mask_storeu_epi8(bytes + (k - k0), static_cast<__mmask16>(stored == 16 ? 0xFFFF : 0xFF), q8);
  }
  *sum = _mm512_reduce_add_epi32(total);
  return true;
}

// C[r, T tiles from t] for one row of quantized A. Per group of 8 K rows a tile's 16 dwords hold
// each column's 8 codes (row j in bits 4j..4j+3): the low nibbles of its bytes are rows 0, 2, 4,
// 6 and the high ones rows 1, 3, 5, 7, which meet A's even and odd dwords in two VPDPBUSD.
template <int T>
ONNX_LIGHT_A8_TARGET void TilesA8(const PackedNBits& w, const uint32_t* pairs, const float* a_scales,
                                  const int32_t* a_sums, float* c, int64_t t) {
  const __m512i nibbles = _mm512_set1_epi8(0x0F);
  // Codes are biased by 8: the written zero point, in code units, is the centred one plus 8.
  const __m512i bias = _mm512_set1_epi32(8);
  __m512 acc[T];
  for (int u = 0; u < T; ++u) acc[u] = _mm512_setzero_ps();
  for (int64_t b = 0; b < w.blocks; ++b) {
    const int64_t g_begin = b * w.block_size / kGroup;
    const int64_t g_end = std::min(w.groups, (b + 1) * w.block_size / kGroup);
    __m512i lo[T], hi[T];
    for (int u = 0; u < T; ++u) lo[u] = hi[u] = _mm512_setzero_si512();
    for (int64_t g = g_begin; g < g_end; ++g) {
      const __m512i even = _mm512_set1_epi32(static_cast<int>(pairs[2 * g]));
      const __m512i odd = _mm512_set1_epi32(static_cast<int>(pairs[2 * g + 1]));
      for (int u = 0; u < T; ++u) {
        const __m512i x = _mm512_loadu_si512(w.codes.data() + ((t + u) * w.groups + g) * kTile);
        lo[u] = _mm512_dpbusd_epi32(lo[u], _mm512_and_si512(x, nibbles), even);
        hi[u] = _mm512_dpbusd_epi32(hi[u], _mm512_and_si512(_mm512_srli_epi32(x, 4), nibbles), odd);
      }
    }
    const __m512i a_sum = _mm512_set1_epi32(a_sums[b]);
    const __m512 a_scale = _mm512_set1_ps(a_scales[b]);
    for (int u = 0; u < T; ++u) {
      const size_t at = static_cast<size_t>(((t + u) * w.blocks + b) * kTile);
      __m512i zero_point = bias;
      if (!w.centered) {
        zero_point = _mm512_add_epi32(
            bias, _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.zero_points.data() + at))));
      }
      const __m512i dot = _mm512_sub_epi32(_mm512_add_epi32(lo[u], hi[u]), _mm512_mullo_epi32(zero_point, a_sum));
      const __m512 scale = _mm512_mul_ps(_mm512_loadu_ps(w.scales.data() + at), a_scale);
      acc[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[u]);
    }
  }
  alignas(64) float out[kTile];
  for (int u = 0; u < T; ++u) {
    _mm512_store_ps(out, acc[u]);
    const int64_t cols = std::min(kTile, w.n - (t + u) * kTile);
    std::memcpy(c + (t + u) * kTile, out, static_cast<size_t>(cols) * sizeof(float));
  }
}

bool VnniAllowed() {
  const char* off = std::getenv("ONNX_LIGHT_DISABLE_AVX512");
  if (off != nullptr && *off != '\0' && std::strcmp(off, "0") != 0) return false;
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}

}  // namespace
#endif

bool NBitsA8Applies(const PackedNBits& w) {
#if ONNX_LIGHT_NBITS_A8
  static const bool cpu = VnniAllowed();
  return cpu && w.bits == 4 && w.block_size % kNBitsGroupRows == 0 &&
         w.block_size <= kNBitsA8MaxBlock;
#else
  (void)w;
  return false;
#endif
}

bool QuantizeActivations(const PackedNBits& w, const float* a, int64_t rows, int64_t lda, QuantizedActivations* q) {
#if ONNX_LIGHT_NBITS_A8
  q->pairs.assign(static_cast<size_t>(rows * w.groups * 2), 0u);
  q->scales.resize(static_cast<size_t>(rows * w.blocks));
  q->sums.resize(static_cast<size_t>(rows * w.blocks));
  for (int64_t r = 0; r < rows; ++r) {
    auto* bytes = reinterpret_cast<uint8_t*>(q->pairs.data() + r * w.groups * 2);
    for (int64_t b = 0; b < w.blocks; ++b) {
      const int64_t k0 = b * w.block_size, k1 = std::min(w.k, k0 + w.block_size);
      const size_t at = static_cast<size_t>(r * w.blocks + b);
      if (!QuantizeBlock(a + r * lda, k0, k1, bytes + k0, &q->scales[at], &q->sums[at])) return false;
    }
  }
  return true;
#else
  (void)w, (void)a, (void)rows, (void)lda, (void)q;
  return false;
#endif
}

void NBitsGemvA8(const PackedNBits& w, const QuantizedActivations& q, int64_t rows, float* c, int64_t ldc,
                 int64_t tile_begin, int64_t tile_end) {
#if ONNX_LIGHT_NBITS_A8
  for (int64_t r = 0; r < rows; ++r) {
    const uint32_t* pairs = q.pairs.data() + r * w.groups * 2;
    const float* scales = q.scales.data() + r * w.blocks;
    const int32_t* sums = q.sums.data() + r * w.blocks;
    float* cr = c + r * ldc;
    int64_t t = tile_begin;
    for (; t + 4 <= tile_end; t += 4) TilesA8<4>(w, pairs, scales, sums, cr, t);
    for (; t < tile_end; ++t) TilesA8<1>(w, pairs, scales, sums, cr, t);
  }
#else
  (void)w, (void)q, (void)rows, (void)c, (void)ldc, (void)tile_begin, (void)tile_end;
#endif
}

}  // namespace onnx_light::runtime

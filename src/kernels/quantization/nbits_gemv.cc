// The loops of the fused 4-bit MatMul (nbits_matmul.h): a portable reference, AVX2 and AVX-512.
// Every path dequantizes a weight as float((code - zp)) * scale, the float32 product
// DequantizeLinear computes, so the only difference from the unfused graph is the order of the
// sums (and fused multiply-adds).
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kernels/quantization/linear_rows.h"
#include "kernels/quantization/nbits_matmul.h"
#include "kernels/registry/cpu_features.h"

namespace onnx_light::runtime {

namespace {

constexpr int64_t kTile = kNBitsTileColumns;

const uint8_t* TileCodes(const PackedNBits& w, int64_t t) { return w.codes.data() + t * w.k * 16; }
const float* TileScales(const PackedNBits& w, int64_t t, int64_t b) {
  return w.scales.data() + (t * w.blocks + b) * kTile;
}
const uint8_t* TileZeros(const PackedNBits& w, int64_t t, int64_t b) {
  return w.zero_points.data() + (t * w.blocks + b) * kTile;
}

void StoreTile(const float* acc, int64_t t, int64_t n, float* c) {
  const int64_t cols = std::min(kTile, n - t * kTile);
  std::memcpy(c + t * kTile, acc, static_cast<size_t>(cols) * sizeof(float));
}

void GemvScalar(const PackedNBits& w, const float* a, int64_t rows, int64_t lda, float* c, int64_t ldc,
                int64_t tile_begin, int64_t tile_end) {
  float wv[kTile];
  for (int64_t t = tile_begin; t < tile_end; ++t) {
    for (int64_t r = 0; r < rows; ++r) {
      float acc[kTile] = {};
      const uint8_t* codes = TileCodes(w, t);
      for (int64_t b = 0; b < w.blocks; ++b) {
        const float* s = TileScales(w, t, b);
        const uint8_t* z = TileZeros(w, t, b);
        const int64_t k_end = std::min(w.k, (b + 1) * w.block_size);
        for (int64_t k = b * w.block_size; k < k_end; ++k) {
          const uint8_t* row = codes + k * 16;
          for (int j = 0; j < 16; ++j) {
            wv[j] = static_cast<float>((row[j] & 15) - z[j]) * s[j];
            wv[16 + j] = static_cast<float>((row[j] >> 4) - z[16 + j]) * s[16 + j];
          }
          const float x = a[r * lda + k];
          for (int j = 0; j < kTile; ++j) acc[j] += x * wv[j];
        }
      }
      StoreTile(acc, t, w.n, c + r * ldc);
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define ONNX_LIGHT_NBITS_X86 1

template <int R>
__attribute__((target("avx2,fma"))) void GemvTileAvx2(const PackedNBits& w, const float* a, int64_t lda, float* c,
                                                      int64_t ldc, int64_t t) {
  __m256 acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < 4; ++q) acc[r][q] = _mm256_setzero_ps();
  const __m128i mask = _mm_set1_epi8(15);
  const uint8_t* codes = TileCodes(w, t);
  for (int64_t b = 0; b < w.blocks; ++b) {
    const float* s = TileScales(w, t, b);
    const uint8_t* zp = TileZeros(w, t, b);
    const __m128i z_lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(zp));
    const __m128i z_hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(zp + 16));
    const __m256 s0 = _mm256_loadu_ps(s), s1 = _mm256_loadu_ps(s + 8), s2 = _mm256_loadu_ps(s + 16),
                 s3 = _mm256_loadu_ps(s + 24);
    const int64_t k_end = std::min(w.k, (b + 1) * w.block_size);
    for (int64_t k = b * w.block_size; k < k_end; ++k) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + k * 16));
      const __m128i lo = _mm_sub_epi8(_mm_and_si128(x, mask), z_lo);
      const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(x, 4), mask), z_hi);
      const __m256 w0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), s0);
      const __m256 w1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), s1);
      const __m256 w2 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), s2);
      const __m256 w3 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))), s3);
      for (int r = 0; r < R; ++r) {
        const __m256 x_r = _mm256_broadcast_ss(a + r * lda + k);
        acc[r][0] = _mm256_fmadd_ps(x_r, w0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(x_r, w1, acc[r][1]);
        acc[r][2] = _mm256_fmadd_ps(x_r, w2, acc[r][2]);
        acc[r][3] = _mm256_fmadd_ps(x_r, w3, acc[r][3]);
      }
    }
  }
  alignas(32) float out[kTile];
  for (int r = 0; r < R; ++r) {
    for (int q = 0; q < 4; ++q) _mm256_store_ps(out + 8 * q, acc[r][q]);
    StoreTile(out, t, w.n, c + r * ldc);
  }
}

template <int R>
__attribute__((target("avx512f,avx2,fma"))) void GemvTileAvx512(const PackedNBits& w, const float* a, int64_t lda,
                                                                float* c, int64_t ldc, int64_t t) {
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  const __m128i mask = _mm_set1_epi8(15);
  const uint8_t* codes = TileCodes(w, t);
  for (int64_t b = 0; b < w.blocks; ++b) {
    const float* s = TileScales(w, t, b);
    const uint8_t* zp = TileZeros(w, t, b);
    const __m128i z_lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(zp));
    const __m128i z_hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(zp + 16));
    const __m512 s0 = _mm512_loadu_ps(s), s1 = _mm512_loadu_ps(s + 16);
    const int64_t k_end = std::min(w.k, (b + 1) * w.block_size);
    for (int64_t k = b * w.block_size; k < k_end; ++k) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + k * 16));
      const __m128i lo = _mm_sub_epi8(_mm_and_si128(x, mask), z_lo);
      const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(x, 4), mask), z_hi);
      const __m512 w0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo)), s0);
      const __m512 w1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi)), s1);
      for (int r = 0; r < R; ++r) {
        const __m512 x_r = _mm512_set1_ps(a[r * lda + k]);
        acc[r][0] = _mm512_fmadd_ps(x_r, w0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(x_r, w1, acc[r][1]);
      }
    }
  }
  alignas(64) float out[kTile];
  for (int r = 0; r < R; ++r) {
    _mm512_store_ps(out, acc[r][0]);
    _mm512_store_ps(out + 16, acc[r][1]);
    StoreTile(out, t, w.n, c + r * ldc);
  }
}

bool Avx512Allowed() {
  const char* off = std::getenv("ONNX_LIGHT_DISABLE_AVX512");
  if (off != nullptr && *off != '\0' && std::strcmp(off, "0") != 0) return false;
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
}
#endif

}  // namespace

NBitsIsa BestNBitsIsa() {
#ifdef ONNX_LIGHT_NBITS_X86
  static const NBitsIsa isa = [] {
    if (!QuantRowsUseAvx2() || !__builtin_cpu_supports("fma")) return NBitsIsa::kScalar;
    return Avx512Allowed() ? NBitsIsa::kAvx512 : NBitsIsa::kAvx2;
  }();
  return isa;
#else
  return NBitsIsa::kScalar;
#endif
}

std::string_view NBitsIsaName(NBitsIsa isa) {
  switch (isa) {
    case NBitsIsa::kAvx512: return "avx512";
    case NBitsIsa::kAvx2: return "avx2";
    default: return "scalar";
  }
}

void NBitsGemv(NBitsIsa isa, const PackedNBits& w, const float* a, int64_t rows, int64_t lda, float* c,
               int64_t ldc, int64_t tile_begin, int64_t tile_end) {
#ifdef ONNX_LIGHT_NBITS_X86
  if (isa != NBitsIsa::kScalar) {
    const bool wide = isa == NBitsIsa::kAvx512;
    const int group = wide ? 4 : 2;
    for (int64_t r0 = 0; r0 < rows; r0 += group) {
      const int64_t r = std::min<int64_t>(group, rows - r0);
      const float* ar = a + r0 * lda;
      float* cr = c + r0 * ldc;
      for (int64_t t = tile_begin; t < tile_end; ++t) {
        if (wide) {
          switch (r) {
            case 1: GemvTileAvx512<1>(w, ar, lda, cr, ldc, t); break;
            case 2: GemvTileAvx512<2>(w, ar, lda, cr, ldc, t); break;
            case 3: GemvTileAvx512<3>(w, ar, lda, cr, ldc, t); break;
            default: GemvTileAvx512<4>(w, ar, lda, cr, ldc, t); break;
          }
        } else if (r == 1) {
          GemvTileAvx2<1>(w, ar, lda, cr, ldc, t);
        } else {
          GemvTileAvx2<2>(w, ar, lda, cr, ldc, t);
        }
      }
    }
    return;
  }
#endif
  GemvScalar(w, a, rows, lda, c, ldc, tile_begin, tile_end);
}

void DequantizeNBitsRows(const PackedNBits& w, int64_t k_begin, int64_t k_end, int64_t tile_begin,
                         int64_t tile_end, float* out) {
  for (int64_t t = tile_begin; t < tile_end; ++t) {
    const uint8_t* codes = TileCodes(w, t);
    const int64_t cols = std::min(kTile, w.n - t * kTile);
    for (int64_t k = k_begin; k < k_end; ++k) {
      const int64_t b = k / w.block_size;
      const float* s = TileScales(w, t, b);
      const uint8_t* z = TileZeros(w, t, b);
      const uint8_t* row = codes + k * 16;
      float wv[kTile];
      for (int j = 0; j < 16; ++j) {
        wv[j] = static_cast<float>((row[j] & 15) - z[j]) * s[j];
        wv[16 + j] = static_cast<float>((row[j] >> 4) - z[16 + j]) * s[16 + j];
      }
      std::memcpy(out + (k - k_begin) * w.n + t * kTile, wv, static_cast<size_t>(cols) * sizeof(float));
    }
  }
}

}  // namespace onnx_light::runtime

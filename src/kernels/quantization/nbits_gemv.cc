// The loops of the fused weight-only MatMul (nbits_matmul.h): a portable reference, AVX2 and
// AVX-512, for 4-bit and 8-bit codes.
// The reference multiplies by DequantizeLinear's own float32 weights; the vector loops regroup
// the sum per scale block (nbits_matmul.h, NBitsGemv), exact in real arithmetic.
// GCC 12's AVX-512 intrinsics warn about their own _mm512_undefined_ps() seeds once inlined
// (GCC bug 105593, as in row_products_avx512.cc); the pragmas must precede the header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/quantization/linear_rows.h"
#include "kernels/quantization/nbits_matmul.h"
#include "kernels/registry/cpu_features.h"

namespace onnx_light::runtime {

namespace {

constexpr int64_t kTile = kNBitsTileColumns;
constexpr int64_t kGroup = kNBitsGroupRows;

const uint32_t* TileCodes(const PackedNBits& w, int64_t t) { return w.codes.data() + t * w.groups * kTile; }
const float* TileScales(const PackedNBits& w, int64_t t, int64_t b) {
  return w.scales.data() + (t * w.blocks + b) * kTile;
}
const int8_t* TileZeroPoints(const PackedNBits& w, int64_t t, int64_t b) {
  return w.zero_points.data() + (t * w.blocks + b) * kTile;
}
// Row k of a tile's 8-bit codes: 16 int8s, one per column.
const int8_t* TileRow8(const uint32_t* tile_codes, int64_t k) {
  return reinterpret_cast<const int8_t*>(tile_codes) + k * kTile;
}

// The centred code (nbits_matmul.h) of row k, column c of a tile.
int CentredCode(const PackedNBits& w, const uint32_t* tile_codes, int64_t k, int64_t c) {
  if (w.bits == 8) return TileRow8(tile_codes, k)[c];
  return static_cast<int>((tile_codes[(k / kGroup) * kTile + c] >> (4 * (k % kGroup))) & 15) - 8;
}

// DequantizeLinear's weight: (q - zp) * scale, rounded once to float32 (q - zp is exact).
float Weight(const PackedNBits& w, const uint32_t* tile_codes, int64_t t, int64_t k, int64_t c) {
  const int64_t b = k / w.block_size;
  const int zp = TileZeroPoints(w, t, b)[c];
  return static_cast<float>(CentredCode(w, tile_codes, k, c) - zp) * TileScales(w, t, b)[c];
}

void StoreTile(const float* acc, int64_t t, int64_t n, float* c) {
  const int64_t cols = std::min(kTile, n - t * kTile);
  std::memcpy(c + t * kTile, acc, static_cast<size_t>(cols) * sizeof(float));
}

void GemvScalar(const PackedNBits& w, const float* a, int64_t rows, int64_t lda, float* c, int64_t ldc,
                int64_t tile_begin, int64_t tile_end) {
  for (int64_t t = tile_begin; t < tile_end; ++t) {
    const uint32_t* codes = TileCodes(w, t);
    for (int64_t r = 0; r < rows; ++r) {
      float acc[kTile] = {};
      for (int64_t k = 0; k < w.k; ++k) {
        const float x = a[r * lda + k];
        for (int64_t j = 0; j < kTile; ++j) acc[j] += x * Weight(w, codes, t, k, j);
      }
      StoreTile(acc, t, w.n, c + r * ldc);
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define ONNX_LIGHT_NBITS_X86 1

// Per row r < rows and scale block b: the sum of a[r, block b], for the zero-point term
// (empty when every zero point is the centre 8).
std::vector<float> BlockSums(const PackedNBits& w, const float* a, int64_t rows, int64_t lda) {
  std::vector<float> sums;
  if (w.centered) return sums;
  sums.resize(static_cast<size_t>(rows * w.blocks));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < w.blocks; ++b) {
      float s = 0.0f;
      for (int64_t k = b * w.block_size; k < std::min(w.k, (b + 1) * w.block_size); ++k) s += a[r * lda + k];
      sums[static_cast<size_t>(r * w.blocks + b)] = s;
    }
  }
  return sums;
}

// Ends scale block b of R rows x T tiles: acc += scale * (the block's sum - centred zero point
// * the block's sum of A), the two partial sums of each tile added first.
template <int R, int T>
__attribute__((target("avx512f,avx2,fma"), always_inline)) inline void ScaleBlockAvx512(
    const PackedNBits& w, const float* sums, int64_t t, int64_t b, const __m512 (&part)[R][T][2],
    __m512 (&acc)[R][T]) {
  for (int u = 0; u < T; ++u) {
    const __m512 scale = _mm512_loadu_ps(TileScales(w, t + u, b));
    const __m512 zero_point = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(TileZeroPoints(w, t + u, b)))));
    for (int r = 0; r < R; ++r) {
      __m512 sum = _mm512_add_ps(part[r][u][0], part[r][u][1]);
      if (!w.centered) sum = _mm512_fnmadd_ps(zero_point, _mm512_set1_ps(sums[r * w.blocks + b]), sum);
      acc[r][u] = _mm512_fmadd_ps(scale, sum, acc[r][u]);
    }
  }
}

template <int R, int T>
__attribute__((target("avx512f,avx2,fma"), always_inline)) inline void StoreTilesAvx512(
    const PackedNBits& w, const __m512 (&acc)[R][T], float* c, int64_t ldc, int64_t t) {
  alignas(64) float out[kTile];
  for (int r = 0; r < R; ++r) {
    for (int u = 0; u < T; ++u) {
      _mm512_store_ps(out, acc[r][u]);
      StoreTile(out, t + u, w.n, c + r * ldc);
    }
  }
}

// R rows of A times T (1 or 2) tiles starting at tile t. Per scale block, the codes' values
// code - 8 come from a 16-entry table indexed by the nibble itself (vpermps reads only an
// index's low 4 bits, so shifting the packed dword is all the unpacking), two accumulators per
// tile (even and odd K rows) keep the multiply-adds independent.
template <int R, int T>
__attribute__((target("avx512f,avx2,fma"))) void GemvTilesAvx512(const PackedNBits& w, const float* a, int64_t lda,
                                                                 const float* sums, float* c, int64_t ldc,
                                                                 int64_t t) {
  const __m512 table = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int u = 0; u < T; ++u) acc[r][u] = _mm512_setzero_ps();
  for (int64_t b = 0; b < w.blocks; ++b) {
    const int64_t k_begin = b * w.block_size, k_end = std::min(w.k, k_begin + w.block_size);
    __m512 part[R][T][2];
    for (int r = 0; r < R; ++r)
      for (int u = 0; u < T; ++u) part[r][u][0] = part[r][u][1] = _mm512_setzero_ps();
    for (int64_t k0 = k_begin; k0 < k_end; k0 += kGroup) {
      const int64_t g = k0 / kGroup;
      __m512i x[T];
      for (int u = 0; u < T; ++u) x[u] = _mm512_loadu_si512(TileCodes(w, t + u) + g * kTile);
      const int rows = static_cast<int>(std::min<int64_t>(kGroup, k_end - k0));
      if (rows == kGroup) {
#pragma GCC unroll 8
        for (int j = 0; j < kGroup; ++j) {
          for (int u = 0; u < T; ++u) {
            const __m512 wv = _mm512_permutexvar_ps(j == 0 ? x[u] : _mm512_srli_epi32(x[u], 4 * j), table);
            for (int r = 0; r < R; ++r) {
              part[r][u][j & 1] = _mm512_fmadd_ps(_mm512_set1_ps(a[r * lda + k0 + j]), wv, part[r][u][j & 1]);
            }
          }
        }
      } else {
        for (int j = 0; j < rows; ++j) {
          for (int u = 0; u < T; ++u) {
            const __m512 wv = _mm512_permutexvar_ps(_mm512_srli_epi32(x[u], 4 * j), table);
            for (int r = 0; r < R; ++r) {
              part[r][u][0] = _mm512_fmadd_ps(_mm512_set1_ps(a[r * lda + k0 + j]), wv, part[r][u][0]);
            }
          }
        }
      }
    }
    ScaleBlockAvx512<R, T>(w, sums, t, b, part, acc);
  }
  StoreTilesAvx512<R, T>(w, acc, c, ldc, t);
}

// The 8-bit form of GemvTilesAvx512: a K row of a tile is 16 int8 codes, sign-extended and
// converted in two instructions.
template <int R, int T>
__attribute__((target("avx512f,avx2,fma"))) void GemvTiles8Avx512(const PackedNBits& w, const float* a, int64_t lda,
                                                                  const float* sums, float* c, int64_t ldc,
                                                                  int64_t t) {
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int u = 0; u < T; ++u) acc[r][u] = _mm512_setzero_ps();
  const uint32_t* codes[T];
  for (int u = 0; u < T; ++u) codes[u] = TileCodes(w, t + u);
  for (int64_t b = 0; b < w.blocks; ++b) {
    const int64_t k_begin = b * w.block_size, k_end = std::min(w.k, k_begin + w.block_size);
    __m512 part[R][T][2];
    for (int r = 0; r < R; ++r)
      for (int u = 0; u < T; ++u) part[r][u][0] = part[r][u][1] = _mm512_setzero_ps();
    for (int64_t k = k_begin; k < k_end; ++k) {
      for (int u = 0; u < T; ++u) {
        const __m512 wv = _mm512_cvtepi32_ps(
            _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(TileRow8(codes[u], k)))));
        for (int r = 0; r < R; ++r) {
          part[r][u][k & 1] = _mm512_fmadd_ps(_mm512_set1_ps(a[r * lda + k]), wv, part[r][u][k & 1]);
        }
      }
    }
    ScaleBlockAvx512<R, T>(w, sums, t, b, part, acc);
  }
  StoreTilesAvx512<R, T>(w, acc, c, ldc, t);
}

// The AVX2 form of GemvTilesAvx512 and GemvTiles8Avx512 for one tile: nibbles masked and
// converted (AVX2 has no 16-entry permute), eight columns per vector.
template <int R, int kBits>
__attribute__((target("avx2,fma"))) void GemvTileAvx2(const PackedNBits& w, const float* a, int64_t lda,
                                                      const float* sums, float* c, int64_t ldc, int64_t t) {
  const __m256i mask = _mm256_set1_epi32(15);
  const __m256 eight = _mm256_set1_ps(8.0f);
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < w.blocks; ++b) {
    const int64_t k_begin = b * w.block_size, k_end = std::min(w.k, k_begin + w.block_size);
    __m256 part[R][2];
    for (int r = 0; r < R; ++r) part[r][0] = part[r][1] = _mm256_setzero_ps();
    for (int64_t k = k_begin; kBits == 8 && k < k_end; ++k) {
      const int8_t* row = TileRow8(TileCodes(w, t), k);
      const __m256 w0 =
          _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row))));
      const __m256 w1 =
          _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + 8))));
      for (int r = 0; r < R; ++r) {
        const __m256 xr = _mm256_broadcast_ss(a + r * lda + k);
        part[r][0] = _mm256_fmadd_ps(xr, w0, part[r][0]);
        part[r][1] = _mm256_fmadd_ps(xr, w1, part[r][1]);
      }
    }
    for (int64_t k0 = k_begin; kBits == 4 && k0 < k_end; k0 += kGroup) {
      const uint32_t* g = TileCodes(w, t) + (k0 / kGroup) * kTile;
      const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g));
      const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + 8));
      const int rows = static_cast<int>(std::min<int64_t>(kGroup, k_end - k0));
      for (int j = 0; j < rows; ++j) {
        const __m256i shift = _mm256_set1_epi64x(4 * j);
        const __m256 w0 = _mm256_sub_ps(
            _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(x0, _mm256_castsi256_si128(shift)), mask)), eight);
        const __m256 w1 = _mm256_sub_ps(
            _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(x1, _mm256_castsi256_si128(shift)), mask)), eight);
        for (int r = 0; r < R; ++r) {
          const __m256 xr = _mm256_broadcast_ss(a + r * lda + k0 + j);
          part[r][0] = _mm256_fmadd_ps(xr, w0, part[r][0]);
          part[r][1] = _mm256_fmadd_ps(xr, w1, part[r][1]);
        }
      }
    }
    const float* s = TileScales(w, t, b);
    const __m256 s0 = _mm256_loadu_ps(s), s1 = _mm256_loadu_ps(s + 8);
    const __m128i zero_points = _mm_loadu_si128(reinterpret_cast<const __m128i*>(TileZeroPoints(w, t, b)));
    const __m256 z0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(zero_points));
    const __m256 z1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(zero_points, 8)));
    for (int r = 0; r < R; ++r) {
      const __m256 sr = _mm256_set1_ps(w.centered ? 0.0f : sums[r * w.blocks + b]);
      acc[r][0] = _mm256_fmadd_ps(s0, _mm256_fnmadd_ps(z0, sr, part[r][0]), acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(s1, _mm256_fnmadd_ps(z1, sr, part[r][1]), acc[r][1]);
    }
  }
  alignas(32) float out[kTile];
  for (int r = 0; r < R; ++r) {
    _mm256_store_ps(out, acc[r][0]);
    _mm256_store_ps(out + 8, acc[r][1]);
    StoreTile(out, t, w.n, c + r * ldc);
  }
}

template <int R>
void Avx512Rows(const PackedNBits& w, const float* a, int64_t lda, const float* sums, float* c, int64_t ldc,
                int64_t tile_begin, int64_t tile_end) {
  int64_t t = tile_begin;
  if (w.bits == 8) {
    for (; t + 2 <= tile_end; t += 2) GemvTiles8Avx512<R, 2>(w, a, lda, sums, c, ldc, t);
    if (t < tile_end) GemvTiles8Avx512<R, 1>(w, a, lda, sums, c, ldc, t);
    return;
  }
  for (; t + 2 <= tile_end; t += 2) GemvTilesAvx512<R, 2>(w, a, lda, sums, c, ldc, t);
  if (t < tile_end) GemvTilesAvx512<R, 1>(w, a, lda, sums, c, ldc, t);
}

template <int R>
void Avx2Rows(const PackedNBits& w, const float* a, int64_t lda, const float* sums, float* c, int64_t ldc,
              int64_t tile_begin, int64_t tile_end) {
  for (int64_t t = tile_begin; t < tile_end; ++t) {
    if (w.bits == 8) {
      GemvTileAvx2<R, 8>(w, a, lda, sums, c, ldc, t);
    } else {
      GemvTileAvx2<R, 4>(w, a, lda, sums, c, ldc, t);
    }
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
  if (isa != NBitsIsa::kScalar && w.groups_fit_blocks()) {
    const bool wide = isa == NBitsIsa::kAvx512;
    const int group = wide ? 4 : 2;
    const std::vector<float> all_sums = BlockSums(w, a, rows, lda);
    for (int64_t r0 = 0; r0 < rows; r0 += group) {
      const int64_t r = std::min<int64_t>(group, rows - r0);
      const float* ar = a + r0 * lda;
      float* cr = c + r0 * ldc;
      const float* sums = all_sums.empty() ? nullptr : all_sums.data() + r0 * w.blocks;
      if (wide) {
        switch (r) {
          case 1: Avx512Rows<1>(w, ar, lda, sums, cr, ldc, tile_begin, tile_end); break;
          case 2: Avx512Rows<2>(w, ar, lda, sums, cr, ldc, tile_begin, tile_end); break;
          case 3: Avx512Rows<3>(w, ar, lda, sums, cr, ldc, tile_begin, tile_end); break;
          default: Avx512Rows<4>(w, ar, lda, sums, cr, ldc, tile_begin, tile_end); break;
        }
        continue;
      }
      if (r == 1) {
        Avx2Rows<1>(w, ar, lda, sums, cr, ldc, tile_begin, tile_end);
      } else {
        Avx2Rows<2>(w, ar, lda, sums, cr, ldc, tile_begin, tile_end);
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
    const uint32_t* codes = TileCodes(w, t);
    const int64_t cols = std::min(kTile, w.n - t * kTile);
    for (int64_t k = k_begin; k < k_end; ++k) {
      float* row = out + (k - k_begin) * w.n + t * kTile;
      for (int64_t j = 0; j < cols; ++j) row[j] = Weight(w, codes, t, k, j);
    }
  }
}

}  // namespace onnx_light::runtime

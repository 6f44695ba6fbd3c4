#include "kernels/quantization/int_gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>

#include "core/thread_pool.h"
#include "kernels/quantization/linear_rows.h"

namespace onnx_light::runtime {

namespace {

constexpr int64_t kPanel = 16;  // columns per packed panel
constexpr int64_t kRows = 4;    // rows per micro-tile

// Packs with `get(row, col)` returning the int16 value of B'.
// `narrow`: also keep the int8 copy when every value fits (B of a matmul; a convolution's
// per-run columns skip the extra pass).
template <typename Get>
void PackWith(int64_t k, int64_t n, PackedIntB* out, bool narrow, int16_t* storage, Get get) {
  out->k = k;
  out->n = n;
  out->k_pairs = (k + 1) / 2;
  out->panels = (n + kPanel - 1) / kPanel;
  const int64_t size = out->panels * out->k_pairs * 2 * kPanel;
  if (storage == nullptr) {
    out->data.assign(static_cast<size_t>(size), 0);
    storage = out->data.data();
  } else {
    out->data.clear();
    std::fill(storage, storage + size, int16_t{0});
    narrow = false;
  }
  out->panels_data = storage;
  for (int64_t p = 0; p < out->panels; ++p) {
    int16_t* panel = storage + p * out->k_pairs * 2 * kPanel;
    const int64_t c0 = p * kPanel, cols = std::min(kPanel, n - c0);
    for (int64_t r = 0; r < k; ++r) {
      int16_t* dst = panel + (r / 2) * 2 * kPanel + (r % 2);
      for (int64_t c = 0; c < cols; ++c) dst[2 * c] = get(r, c0 + c);
    }
  }
  out->narrow.clear();
  if (!narrow) return;
  const bool fits = std::all_of(out->data.begin(), out->data.end(), [](int16_t v) { return v >= -128 && v <= 127; });
  if (fits) out->narrow.assign(out->data.begin(), out->data.end());
}

// Portable tile: rows x 16 columns of one panel.
void TileScalar(const int16_t* a, int64_t lda, int64_t rows, const int16_t* panel, int64_t k_pairs,
                int32_t* acc /* rows x 16 */) {
  for (int64_t r = 0; r < rows; ++r) {
    uint32_t sum[kPanel] = {};
    const int16_t* ar = a + r * lda;
    for (int64_t p = 0; p < k_pairs; ++p) {
      const int32_t a0 = ar[2 * p], a1 = ar[2 * p + 1];
      const int16_t* b = panel + p * 2 * kPanel;
      for (int64_t c = 0; c < kPanel; ++c) {
        // Each pair fits int32; the running sum wraps like the reference's int32.
        sum[c] += static_cast<uint32_t>(a0 * b[2 * c] + a1 * b[2 * c + 1]);
      }
    }
    for (int64_t c = 0; c < kPanel; ++c) acc[r * kPanel + c] = static_cast<int32_t>(sum[c]);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define ONNX_LIGHT_INT_GEMM_AVX2 1

// The 16 int16 values of panel step p, columns 0-7 (`half` 0) or 8-15 (`half` 1): loaded from
// the int16 panels, or from the int8 copy widened as it is loaded.
__attribute__((target("avx2"))) inline __m256i LoadPanelHalf(const int16_t* panel, int64_t p, int half) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + p * 32 + half * 16));
}
__attribute__((target("avx2"))) inline __m256i LoadPanelHalf(const int8_t* panel, int64_t p, int half) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(panel + p * 32 + half * 16)));
}

// R rows against one panel of int16 (`Panel` int16_t) or int8 (`Panel` int8_t) values.
template <int R, typename Panel>
__attribute__((target("avx2"))) void TileAvx2(const int16_t* a, int64_t lda, const Panel* panel, int64_t k_pairs,
                                              int32_t* acc) {
  __m256i c0[R], c1[R];
  for (int r = 0; r < R; ++r) c0[r] = c1[r] = _mm256_setzero_si256();
  for (int64_t p = 0; p < k_pairs; ++p) {
    const __m256i b0 = LoadPanelHalf(panel, p, 0);
    const __m256i b1 = LoadPanelHalf(panel, p, 1);
    for (int r = 0; r < R; ++r) {
      int32_t pair;
      std::memcpy(&pair, a + r * lda + 2 * p, sizeof(pair));
      const __m256i av = _mm256_set1_epi32(pair);
      c0[r] = _mm256_add_epi32(c0[r], _mm256_madd_epi16(av, b0));
      c1[r] = _mm256_add_epi32(c1[r], _mm256_madd_epi16(av, b1));
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * kPanel), c0[r]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * kPanel + 8), c1[r]);
  }
}

// The full 4-row tile with named accumulators: the array form above makes GCC copy every
// accumulator once per step (8 extra moves in a 20-instruction loop).
__attribute__((target("avx2"))) void Tile4Avx2(const int16_t* a, int64_t lda, const int16_t* panel, int64_t k_pairs,
                                               int32_t* acc) {
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  const auto* a0 = reinterpret_cast<const uint8_t*>(a);
  const uint8_t* a1 = a0 + 2 * lda;
  const uint8_t* a2 = a1 + 2 * lda;
  const uint8_t* a3 = a2 + 2 * lda;
  for (int64_t p = 0; p < k_pairs; ++p) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + p * 32));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + p * 32 + 16));
    int32_t v0, v1, v2, v3;
    std::memcpy(&v0, a0 + 4 * p, 4);
    std::memcpy(&v1, a1 + 4 * p, 4);
    std::memcpy(&v2, a2 + 4 * p, 4);
    std::memcpy(&v3, a3 + 4 * p, 4);
    const __m256i x0 = _mm256_set1_epi32(v0), x1 = _mm256_set1_epi32(v1);
    const __m256i x2 = _mm256_set1_epi32(v2), x3 = _mm256_set1_epi32(v3);
    c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(x0, b0));
    c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(x0, b1));
    c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(x1, b0));
    c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(x1, b1));
    c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(x2, b0));
    c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(x2, b1));
    c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(x3, b0));
    c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(x3, b1));
  }
  auto* out = reinterpret_cast<__m256i*>(acc);
  _mm256_storeu_si256(out + 0, c00);
  _mm256_storeu_si256(out + 1, c01);
  _mm256_storeu_si256(out + 2, c10);
  _mm256_storeu_si256(out + 3, c11);
  _mm256_storeu_si256(out + 4, c20);
  _mm256_storeu_si256(out + 5, c21);
  _mm256_storeu_si256(out + 6, c30);
  _mm256_storeu_si256(out + 7, c31);
}

// One to three rows against the int8 panels.
void TileNarrowDispatchAvx2(const int16_t* a, int64_t lda, int64_t rows, const int8_t* panel, int64_t k_pairs,
                            int32_t* acc) {
  switch (rows) {
    case 3: return TileAvx2<3>(a, lda, panel, k_pairs, acc);
    case 2: return TileAvx2<2>(a, lda, panel, k_pairs, acc);
    default: return TileAvx2<1>(a, lda, panel, k_pairs, acc);
  }
}

void TileDispatchAvx2(const int16_t* a, int64_t lda, int64_t rows, const int16_t* panel, int64_t k_pairs,
                      int32_t* acc) {
  switch (rows) {
    case 4: return Tile4Avx2(a, lda, panel, k_pairs, acc);
    case 3: return TileAvx2<3>(a, lda, panel, k_pairs, acc);
    case 2: return TileAvx2<2>(a, lda, panel, k_pairs, acc);
    default: return TileAvx2<1>(a, lda, panel, k_pairs, acc);
  }
}
#endif

}  // namespace

bool IntGemmUsesAvx2() {
#ifdef ONNX_LIGHT_INT_GEMM_AVX2
  return QuantRowsUseAvx2();
#else
  return false;
#endif
}

void PackInt8B(const void* b, bool is_signed, int64_t k, int64_t n, int64_t ldb, const int32_t* zero_point,
               bool per_column, PackedIntB* out, int16_t* storage) {
  if (is_signed) {
    const auto* s = static_cast<const int8_t*>(b);
    PackWith(k, n, out, true, storage, [&](int64_t r, int64_t c) {
      return static_cast<int16_t>(s[r * ldb + c] - zero_point[per_column ? c : 0]);
    });
  } else {
    const auto* u = static_cast<const uint8_t*>(b);
    PackWith(k, n, out, true, storage, [&](int64_t r, int64_t c) {
      return static_cast<int16_t>(u[r * ldb + c] - zero_point[per_column ? c : 0]);
    });
  }
}

void PackInt16B(const int16_t* b, int64_t k, int64_t n, int64_t ldb, PackedIntB* out, int16_t* storage) {
  PackWith(k, n, out, false, storage, [&](int64_t r, int64_t c) { return b[r * ldb + c]; });
}

void WidenInt8A(const void* a, bool is_signed, int64_t m, int64_t k, int64_t lda, const int32_t* zero_point,
                bool per_row, int16_t* out) {
  const int64_t kp = PaddedDepth(k);
  for (int64_t r = 0; r < m; ++r) {
    const int32_t zp = zero_point[per_row ? r : 0];
    int16_t* dst = out + r * kp;
    if (is_signed) {
      const int8_t* src = static_cast<const int8_t*>(a) + r * lda;
      for (int64_t j = 0; j < k; ++j) dst[j] = static_cast<int16_t>(src[j] - zp);
    } else {
      const uint8_t* src = static_cast<const uint8_t*>(a) + r * lda;
      for (int64_t j = 0; j < k; ++j) dst[j] = static_cast<int16_t>(src[j] - zp);
    }
    if (kp != k) dst[k] = 0;
  }
}

void IntGemm(int64_t m, const int16_t* a, const PackedIntB& b, int32_t* c, int64_t ldc, ThreadPool* pool) {
  if (m == 0 || b.n == 0) return;
  const int64_t lda = 2 * b.k_pairs;
#ifdef ONNX_LIGHT_INT_GEMM_AVX2
  const bool avx2 = IntGemmUsesAvx2();
#endif
  // Enough panels per task that a task does at least ~64k multiply-adds.
  const int64_t per_panel = std::max<int64_t>(1, m * b.k_pairs * 2 * kPanel);
  const int64_t min_panels = std::max<int64_t>(1, (int64_t{1} << 16) / per_panel);
  ParallelFor(pool, b.panels, min_panels, [&](int64_t first, int64_t last) {
    alignas(32) int32_t acc[kRows * kPanel];
    for (int64_t p = first; p < last; ++p) {
      const int16_t* panel = b.panels_data + p * b.k_pairs * 2 * kPanel;
      const int64_t c0 = p * kPanel, cols = std::min(kPanel, b.n - c0);
      for (int64_t r0 = 0; r0 < m; r0 += kRows) {
        const int64_t rows = std::min(kRows, m - r0);
#ifdef ONNX_LIGHT_INT_GEMM_AVX2
        if (avx2 && rows < kRows && !b.narrow.empty()) {
          TileNarrowDispatchAvx2(a + r0 * lda, lda, rows, b.narrow.data() + p * b.k_pairs * 2 * kPanel, b.k_pairs,
                                 acc);
        } else if (avx2) {
          TileDispatchAvx2(a + r0 * lda, lda, rows, panel, b.k_pairs, acc);
        } else {
          TileScalar(a + r0 * lda, lda, rows, panel, b.k_pairs, acc);
        }
#else
        TileScalar(a + r0 * lda, lda, rows, panel, b.k_pairs, acc);
#endif
        for (int64_t r = 0; r < rows; ++r) {
          std::memcpy(c + (r0 + r) * ldc + c0, acc + r * kPanel, cols * sizeof(int32_t));
        }
      }
    }
  });
}

}  // namespace onnx_light::runtime

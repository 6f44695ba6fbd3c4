// GCC 12's AVX-512 intrinsics seed results with _mm512_undefined_ps() and, once inlined into a
// target("avx512f") function, warn that it is uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/nn/conv_grouped_shifted.h"

#include <algorithm>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ONNX_LIGHT_GROUPED_SHIFTED 1
#else
#define ONNX_LIGHT_GROUPED_SHIFTED 0
#endif

namespace onnx_light::runtime {

namespace {

#if ONNX_LIGHT_GROUPED_SHIFTED

constexpr int64_t kLanes = 16;

// Lanes e .. e + 15 of the 32 in (lo, hi).
template <int kShift>
__attribute__((target("avx512f"), always_inline)) inline __m512 Shifted(__m512 lo, __m512 hi) {
  if constexpr (kShift == 0) {
    return lo;
  } else {
    return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(hi), _mm512_castps_si512(lo), kShift));
  }
}

// Kernel columns kCol.. of one kernel row into one output row's accumulators: column kw reads
// phase kw % kStride shifted by kw / kStride, in the general tile's order (kw = 0, 1, 2, ...)
// so that the sums round alike.
template <int kVecs, int kKw, int kStride, int kCol>
__attribute__((target("avx512f"), always_inline)) inline void ColumnTaps(const __m512 (&a)[kStride][kVecs + 1],
                                                                         const float* wrow, __m512* acc) {
  if constexpr (kCol < kKw) {
    const __m512 w = _mm512_set1_ps(wrow[kCol]);
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) {
      acc[j] = _mm512_fmadd_ps(w, Shifted<kCol / kStride>(a[kCol % kStride][j], a[kCol % kStride][j + 1]), acc[j]);
    }
    ColumnTaps<kVecs, kKw, kStride, kCol + 1>(a, wrow, acc);
  }
}

// One kernel row's taps for one output row: each of its kStride phase rows loaded once, then
// every kernel column from registers.
template <int kVecs, int kKw, int kStride>
__attribute__((target("avx512f"), always_inline)) inline void RowTaps(const float* row, int64_t phase_plane,
                                                                      const float* wrow, __m512* acc) {
  __m512 a[kStride][kVecs + 1];
#pragma GCC unroll 2
  for (int p = 0; p < kStride; ++p) {
    // A phase whose taps all read it unshifted needs no vector past the tile.
    const bool shifted = (kKw - 1 - p) / kStride > 0;
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) a[p][j] = _mm512_loadu_ps(row + p * phase_plane + j * kLanes);
    a[p][kVecs] = shifted ? _mm512_loadu_ps(row + p * phase_plane + kVecs * kLanes) : _mm512_setzero_ps();
  }
  ColumnTaps<kVecs, kKw, kStride, 0>(a, wrow, acc);
}

// kRows output rows x kVecs vectors of columns over every (channel, kernel row) of the group.
// The taps run in the general tile's order, (channel, kh, kw), so the sums round alike.
template <int kRows, int kVecs, int kKw, int kStride>
__attribute__((target("avx512f"))) void ShiftedTile(const GroupedConvPlan& plan, const float* base, const float* w,
                                                    int64_t row_step, float bias, float* y, int64_t ow_n,
                                                    int64_t width, const float* y_end) {
  __m512 acc[kRows][kVecs];
  const __m512 b = _mm512_set1_ps(bias);
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) acc[r][j] = b;
  }
  const int64_t kh_n = plan.g.kernel[0];
  const int64_t dh = plan.g.dilation[0];
  for (int64_t c = 0; c < plan.cg; ++c) {
    for (int64_t kh = 0; kh < kh_n; ++kh) {
      const float* wrow = w + (c * kh_n + kh) * kKw;
      const float* phase0 = base + c * plan.channel_plane + kh * dh * plan.pitch;
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) RowTaps<kVecs, kKw, kStride>(phase0 + r * row_step, plan.phase_plane, wrow, acc[r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) {
      const int64_t n = width - j * kLanes;
      float* dst = y + r * ow_n + j * kLanes;
      if (n >= kLanes || (y_end != nullptr && dst + kLanes <= y_end)) {
        _mm512_storeu_ps(dst, acc[r][j]);
      } else {
        _mm512_mask_storeu_ps(dst, static_cast<__mmask16>((1u << n) - 1u), acc[r][j]);
      }
    }
  }
}

// A band of `rows` output rows (the full band or the plane's last, shorter one, taken a row
// at a time) of `vecs` vectors.
template <int kKw, int kStride>
__attribute__((target("avx512f"))) void ShiftedBand(const GroupedConvPlan& plan, int64_t rows, int vecs,
                                                    const float* base, const float* w, int64_t row_step, float bias,
                                                    float* y, int64_t ow_n, int64_t width, const float* y_end) {
#define ONNX_LIGHT_SHIFTED_TILES(kBand, kVecs)                                                              \
  if (vecs == kVecs) {                                                                                      \
    if (rows == kBand) return ShiftedTile<kBand, kVecs, kKw, kStride>(plan, base, w, row_step, bias, y, ow_n, \
                                                                      width, y_end);                        \
    for (int64_t r = 0; r < rows; ++r) {                                                                    \
      ShiftedTile<1, kVecs, kKw, kStride>(plan, base + r * row_step, w, row_step, bias, y + r * ow_n, ow_n, \
                                          width, y_end);                                                    \
    }                                                                                                       \
    return;                                                                                                 \
  }
  ONNX_LIGHT_SHIFTED_TILES(8, 1)
  ONNX_LIGHT_SHIFTED_TILES(4, 2)
  ONNX_LIGHT_SHIFTED_TILES(2, 3)
  ONNX_LIGHT_SHIFTED_TILES(2, 4)
#undef ONNX_LIGHT_SHIFTED_TILES
}

using BandFunction = void (*)(const GroupedConvPlan&, int64_t, int, const float*, const float*, int64_t, float,
                              float*, int64_t, int64_t, const float*);

BandFunction BandFor(const GroupedConvPlan& plan) {
  const int64_t kw = plan.g.kernel[1];
  const int64_t sw = plan.g.stride[1];
  // Not 3 wide at stride 2: its phases take 9 loads for 12 FMAs, and the general tile's 12
  // loads, only 4 of them shifted, measured faster.
  if (kw == 3 && sw == 1) return ShiftedBand<3, 1>;
  if (kw == 5 && sw == 1) return ShiftedBand<5, 1>;
  if (kw == 5 && sw == 2) return ShiftedBand<5, 2>;
  return nullptr;
}

#endif

}  // namespace

bool GroupedPlaneShiftedApplies(const GroupedConvPlan& plan) {
#if ONNX_LIGHT_GROUPED_SHIFTED
  return plan.level == SimdLevel::kAvx512 && plan.g.rank() == 2 && plan.g.dilation[1] == 1 && BandFor(plan) != nullptr;
#else
  (void)plan;
  return false;
#endif
}

void GroupedPlaneShifted(const GroupedConvPlan& plan, const float* xpad, const float* w, float bias,
                         const ConvEpilogue& epilogue, const float* z, float* y) {
#if ONNX_LIGHT_GROUPED_SHIFTED
  const BandFunction band_fn = BandFor(plan);
  const int64_t oh_n = plan.g.output[0];
  const int64_t ow_n = plan.g.output[1];
  const int64_t row_step = plan.g.stride[0] * plan.pitch;
  // The general tile's shapes: eight independent accumulators per tile.
  const int64_t row_vecs = (ow_n + kLanes - 1) / kLanes;
  const int64_t band = row_vecs == 1 ? 8 : row_vecs == 2 ? 4 : 2;
  const bool run_epilogue = !epilogue.is_identity() || z != nullptr;
  const float* y_end = row_vecs <= 4 ? y + oh_n * ow_n : nullptr;
  for (int64_t oh0 = 0; oh0 < oh_n; oh0 += band) {
    const int64_t rows = std::min(band, oh_n - oh0);
    for (int64_t ow0 = 0; ow0 < ow_n; ow0 += 4 * kLanes) {
      const int64_t width = ow_n - ow0;
      const int vecs = static_cast<int>(std::min<int64_t>(4, (width + kLanes - 1) / kLanes));
      band_fn(plan, rows, vecs, xpad + oh0 * row_step + ow0, w, row_step, bias, y + oh0 * ow_n + ow0, ow_n, width,
              y_end);
    }
    if (run_epilogue) {
      ApplyConvEpilogue(epilogue, y + oh0 * ow_n, z != nullptr ? z + oh0 * ow_n : nullptr, rows * ow_n, 0.0f);
    }
  }
#else
  (void)plan, (void)xpad, (void)w, (void)bias, (void)epilogue, (void)z, (void)y;
#endif
}

}  // namespace onnx_light::runtime

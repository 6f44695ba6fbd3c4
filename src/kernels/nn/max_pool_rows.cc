// GCC 12's AVX-512 intrinsics seed results with _mm512_undefined_ps() and, once inlined into a
// target("avx512f") function, warn that it is uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/nn/max_pool_rows.h"

#include <algorithm>
#include <limits>

#include "kernels/registry/cpu_features.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ONNX_LIGHT_MAX_POOL_ROWS 1
#else
#define ONNX_LIGHT_MAX_POOL_ROWS 0
#endif

namespace onnx_light::runtime {

namespace {

constexpr int64_t kLanes = 16;

// The row buffer: the horizontal padding, the reduced input row, and enough -inf after it for
// the last block of sixteen outputs to read whole vectors at every tap.
int64_t RowBufferSize(const WindowGeometry& g) {
  const int64_t blocks = (g.output[1] + kLanes - 1) / kLanes;
  return g.pad_begin[1] + g.input[1] + blocks * kLanes * g.stride[1] + g.kernel[1] + 2 * kLanes;
}

#if ONNX_LIGHT_MAX_POOL_ROWS
__mmask16 TailMask(int64_t n) { return static_cast<__mmask16>((1u << (n % kLanes)) - 1u); }

// mid[0, w) = the column-wise maximum of input rows [r_lo, r_hi) of the plane xp (-inf when the
// window has no row inside the input); mid[w, ...) keeps its -inf.
__attribute__((target("avx512f"))) void ReduceRows(const float* xp, int64_t w, int64_t r_lo, int64_t r_hi,
                                                   float* mid) {
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const int64_t full = w - w % kLanes;
  for (int64_t i = 0; i < full; i += kLanes) {
    // _mm512_max_ps(v, acc) is v > acc ? v : acc: a NaN v leaves acc.
    __m512 acc = lowest;
    for (int64_t r = r_lo; r < r_hi; ++r) acc = _mm512_max_ps(_mm512_loadu_ps(xp + r * w + i), acc);
    _mm512_storeu_ps(mid + i, acc);
  }
  if (full < w) {
    const __mmask16 tail = TailMask(w);
    __m512 acc = lowest;
    for (int64_t r = r_lo; r < r_hi; ++r) {
      acc = _mm512_max_ps(_mm512_mask_loadu_ps(lowest, tail, xp + r * w + full), acc);
    }
    _mm512_mask_storeu_ps(mid + full, tail, acc);
  }
}

// y[0, ow_n) from the row buffer: y[o] = max over k < kw of row[o * stride + k].
template <int kStride>
__attribute__((target("avx512f"))) void SlideRow(const float* row, int64_t ow_n, int64_t kw, float* y) {
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  for (int64_t ow = 0; ow < ow_n; ow += kLanes) {
    const float* base = row + ow * kStride;
    __m512 acc = lowest;
    for (int64_t k = 0; k < kw; ++k) {
      __m512 taps;
      if constexpr (kStride == 1) {
        taps = _mm512_loadu_ps(base + k);
      } else {
        taps = _mm512_permutex2var_ps(_mm512_loadu_ps(base + k), even, _mm512_loadu_ps(base + k + kLanes));
      }
      acc = _mm512_max_ps(taps, acc);
    }
    if (ow + kLanes <= ow_n) {
      _mm512_storeu_ps(y + ow, acc);
    } else {
      _mm512_mask_storeu_ps(y + ow, TailMask(ow_n), acc);
    }
  }
}

// Planes at most two vectors wide whose output rows fit in one vector (squeezenet's 27x27 ->
// 13x13): each output row is computed in registers, the window's input rows reduced into two
// vectors and every tap's sixteen columns picked from those by one permute, where the row buffer
// path paid two calls, a store and reloads for each 13-output row.
constexpr int64_t kMaxNarrowTaps = 16;

bool NarrowApplies(const WindowGeometry& g) {
  return g.input[1] <= 2 * kLanes && g.output[1] <= kLanes && g.kernel[1] <= kMaxNarrowTaps;
}

__attribute__((target("avx512f"))) void MaxPoolNarrow(const float* x, int64_t planes, const WindowGeometry& g,
                                                      float* y) {
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const int64_t h = g.input[0];
  const int64_t w = g.input[1];
  const int64_t oh_n = g.output[0];
  const int64_t ow_n = g.output[1];
  const int64_t kw_n = g.kernel[1];
  // Tap k of output column o reads input column o * stride + k - pad: its lane of the pair of
  // vectors, when that column exists (else -inf, like the row buffer's padding).
  __m512i index[kMaxNarrowTaps];
  __mmask16 valid[kMaxNarrowTaps];
  const __m512i columns = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __mmask16 outputs = static_cast<__mmask16>((1u << ow_n) - 1u);
  for (int64_t k = 0; k < kw_n; ++k) {
    index[k] = _mm512_add_epi32(_mm512_mullo_epi32(columns, _mm512_set1_epi32(static_cast<int>(g.stride[1]))),
                                _mm512_set1_epi32(static_cast<int>(k - g.pad_begin[1])));
    valid[k] = outputs & _mm512_cmpge_epi32_mask(index[k], _mm512_setzero_si512()) &
               _mm512_cmplt_epi32_mask(index[k], _mm512_set1_epi32(static_cast<int>(w)));
  }
  const __mmask16 low = w >= kLanes ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << w) - 1u);
  const __mmask16 high = w > kLanes ? static_cast<__mmask16>((1u << (w - kLanes)) - 1u) : __mmask16(0);
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float* xp = x + plane * h * w;
    for (int64_t oh = 0; oh < oh_n; ++oh, y += ow_n) {
      const int64_t start = oh * g.stride[0] - g.pad_begin[0];
      const int64_t r_hi = std::min(start + g.kernel[0], h);
      __m512 v0 = lowest;
      __m512 v1 = lowest;
      for (int64_t r = std::max<int64_t>(start, 0); r < r_hi; ++r) {
        v0 = _mm512_max_ps(_mm512_mask_loadu_ps(lowest, low, xp + r * w), v0);
        if (high != 0) v1 = _mm512_max_ps(_mm512_mask_loadu_ps(lowest, high, xp + r * w + kLanes), v1);
      }
      __m512 acc = lowest;
      for (int64_t k = 0; k < kw_n; ++k) {
        const __m512 taps = _mm512_mask_blend_ps(valid[k], lowest, _mm512_permutex2var_ps(v0, index[k], v1));
        acc = _mm512_max_ps(taps, acc);
      }
      _mm512_mask_storeu_ps(y, outputs, acc);
    }
  }
}
#endif

}  // namespace

bool MaxPoolRowsApplies(const WindowGeometry& g) {
#if ONNX_LIGHT_MAX_POOL_ROWS
  return g.rank() == 2 && g.dilation[0] == 1 && g.dilation[1] == 1 && (g.stride[1] == 1 || g.stride[1] == 2) &&
         UseAvx512();
#else
  (void)g;
  return false;
#endif
}

int64_t MaxPoolRowsScratchSize(const WindowGeometry& g) { return RowBufferSize(g); }

void MaxPoolRows(const float* x, int64_t planes, const WindowGeometry& g, float* y, float* scratch) {
#if ONNX_LIGHT_MAX_POOL_ROWS
  const int64_t h = g.input[0];
  const int64_t w = g.input[1];
  const int64_t oh_n = g.output[0];
  const int64_t ow_n = g.output[1];
  if (NarrowApplies(g)) return MaxPoolNarrow(x, planes, g, y);
  std::fill(scratch, scratch + RowBufferSize(g), -std::numeric_limits<float>::infinity());
  float* mid = scratch + g.pad_begin[1];
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float* xp = x + plane * h * w;
    for (int64_t oh = 0; oh < oh_n; ++oh, y += ow_n) {
      const int64_t start = oh * g.stride[0] - g.pad_begin[0];
      ReduceRows(xp, w, std::max<int64_t>(start, 0), std::min(start + g.kernel[0], h), mid);
      if (g.stride[1] == 1) {
        SlideRow<1>(scratch, ow_n, g.kernel[1], y);
      } else {
        SlideRow<2>(scratch, ow_n, g.kernel[1], y);
      }
    }
  }
#else
  (void)x, (void)planes, (void)g, (void)y, (void)scratch;
#endif
}

}  // namespace onnx_light::runtime

// GCC 12's AVX-512 intrinsics seed results with _mm512_undefined_ps() and, once inlined into a
// target("avx512f") function, warn that it is uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/nn/conv_padded_image.h"

#include <algorithm>
#include <cstring>

#include <vector>

#include "core/thread_pool.h"
#include "kernels/registry/cpu_features.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ONNX_LIGHT_PAD_AVX512 1
#else
#define ONNX_LIGHT_PAD_AVX512 0
#endif

namespace onnx_light::runtime {

PaddedImage PaddedImage::Of(const WindowGeometry& g) {
  PaddedImage p;
  p.rows = (g.output[0] - 1) * g.stride[0] + g.kernel[0];
  p.pitch = (g.output[1] - 1) * g.stride[1] + g.kernel[1];
  p.plane = p.rows * p.pitch;
  p.phase_plane = p.plane;
  return p;
}

PaddedImage PaddedImage::Phased(const WindowGeometry& g) {
  PaddedImage p = Of(g);
  p.phases = g.stride[1];
  p.pitch = (p.pitch + p.phases - 1) / p.phases;
  p.phase_plane = p.rows * p.pitch;
  p.plane = p.phases * p.phase_plane;
  return p;
}

namespace {

#if ONNX_LIGHT_PAD_AVX512
// Deals a padded row out to two phases: dst0[j] = row[2j], dst1[j] = row[2j + 1] for j < n.
// `row` holds at least 2 * n + 32 floats.
__attribute__((target("avx512f"))) void DealTwoPhases(const float* row, int64_t n, float* dst0, float* dst1) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  for (int64_t j = 0; j < n; j += 16) {
    const __m512 a = _mm512_loadu_ps(row + 2 * j);
    const __m512 b = _mm512_loadu_ps(row + 2 * j + 16);
    const __mmask16 m = n - j >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (n - j)) - 1u);
    _mm512_mask_storeu_ps(dst0 + j, m, _mm512_permutex2var_ps(a, even, b));
    _mm512_mask_storeu_ps(dst1 + j, m, _mm512_permutex2var_ps(a, odd, b));
  }
}
#endif

// PadPlanes for a phased image: each padded row is built whole in `row`, then dealt out to the
// phases.
void PadPhasedPlanes(const float* x, int64_t channels, const WindowGeometry& g, const PaddedImage& p, float* out) {
  const int64_t ih_n = g.input[0];
  const int64_t iw_n = g.input[1];
  const int64_t width = p.phases * p.pitch;
  const int64_t lo = std::min(g.pad_begin[1], width);
  const int64_t hi = std::max(lo, std::min(g.pad_begin[1] + iw_n, width));
  std::vector<float> row(static_cast<size_t>(width + 32), 0.0f);
#if ONNX_LIGHT_PAD_AVX512
  const bool two_phases = p.phases == 2 && UseAvx512();
#endif
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t r = 0; r < p.rows; ++r) {
      const int64_t ih = r - g.pad_begin[0];
      const bool inside = ih >= 0 && ih < ih_n && hi > lo;
      if (inside) std::memcpy(row.data() + lo, x + (c * ih_n + ih) * iw_n, static_cast<size_t>(hi - lo) * sizeof(float));
#if ONNX_LIGHT_PAD_AVX512
      if (inside && two_phases) {
        float* dst = out + c * p.plane + r * p.pitch;
        DealTwoPhases(row.data(), p.pitch, dst, dst + p.phase_plane);
        continue;
      }
#endif
      for (int64_t q = 0; q < p.phases; ++q) {
        float* dst = out + c * p.plane + q * p.phase_plane + r * p.pitch;
        if (!inside) {
          std::fill(dst, dst + p.pitch, 0.0f);
          continue;
        }
        for (int64_t j = 0; j < p.pitch; ++j) dst[j] = row[j * p.phases + q];
      }
    }
  }
}

// PadImage without the slack: planes [0, channels) only, padded rows [row_begin, row_end) of each.
void PadPlanes(const float* x, int64_t channels, const WindowGeometry& g, const PaddedImage& p, float* out,
               int64_t row_begin = 0, int64_t row_end = -1) {
  if (p.phases > 1) return PadPhasedPlanes(x, channels, g, p, out);
  if (row_end < 0) row_end = p.rows;
  const int64_t ih_n = g.input[0];
  const int64_t iw_n = g.input[1];
  // Columns [pad_begin, pad_begin + iw_n) of a padded row hold the input row, clipped to the
  // padded width.
  const int64_t lo = std::min(g.pad_begin[1], p.pitch);
  const int64_t hi = std::max(lo, std::min(g.pad_begin[1] + iw_n, p.pitch));
  for (int64_t c = 0; c < channels; ++c) {
    float* plane = out + c * p.plane;
    for (int64_t r = row_begin; r < row_end; ++r) {
      float* row = plane + r * p.pitch;
      const int64_t ih = r - g.pad_begin[0];
      if (ih < 0 || ih >= ih_n) {
        std::fill(row, row + p.pitch, 0.0f);
        continue;
      }
      std::fill(row, row + lo, 0.0f);
      if (hi > lo) {
        std::memcpy(row + lo, x + (c * ih_n + ih) * iw_n, static_cast<size_t>(hi - lo) * sizeof(float));
      }
      std::fill(row + hi, row + p.pitch, 0.0f);
    }
  }
}

// The zeros after the last plane.
void FillSlack(int64_t channels, const PaddedImage& p, float* out) {
  std::fill(out + channels * p.plane, out + channels * p.plane + kPaddedImageSlack, 0.0f);
}

}  // namespace

void PadImage(const float* x, int64_t channels, const WindowGeometry& g, const PaddedImage& p, float* out,
              ThreadPool* pool) {
  // Whole planes per task, a task at least ~64 KiB of copy.
  const int64_t min_planes = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(p.plane, 1));
  ParallelForBalanced(pool, channels, min_planes, [&](int64_t begin, int64_t end) {
    PadPlanes(x + begin * g.input[0] * g.input[1], end - begin, g, p, out + begin * p.plane);
  });
  FillSlack(channels, p, out);
}

void PadImageRows(const float* x, int64_t channels, const WindowGeometry& g, const PaddedImage& p,
                  int64_t row_begin, int64_t row_end, float* out) {
  PadPlanes(x, channels, g, p, out, row_begin, row_end);
  if (row_end == p.rows) FillSlack(channels, p, out);
}

}  // namespace onnx_light::runtime

// GCC 12's AVX-512 intrinsics seed results with _mm512_undefined_ps() and, once inlined into a
// target("avx512f") function, warn that it is uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/nn/conv_grouped.h"
#include "kernels/nn/conv_grouped_shifted.h"

#include <algorithm>
#include <cstring>

#include "kernels/registry/cpu_features.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ONNX_LIGHT_GROUPED_SIMD 1
#else
#define ONNX_LIGHT_GROUPED_SIMD 0
#endif

namespace onnx_light::runtime {

namespace {

// Grouped convolutions with more input channels per group than this go to im2col + GEMM, where
// each group's GEMM is big enough to pay for itself.
constexpr int64_t kMaxDirectGroupChannels = 8;

int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

int64_t Lanes(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512:
      return 16;
    case SimdLevel::kAvx2:
      return 8;
    default:
      return 1;
  }
}

// The group's cg planes, zero-padded and split into stride_w column phases (see the header).
ONNX_LIGHT_CPU_CLONES void PadGroup(const GroupedConvPlan& plan, const float* x, float* scratch) {
  const WindowGeometry& g = plan.g;
  const int64_t ih_n = g.input[0];
  const int64_t iw_n = g.input[1];
  const int64_t sw = g.stride[1];
  const int64_t pt = g.pad_begin[0];
  const int64_t pl = g.pad_begin[1];
  const int64_t pitch = plan.pitch;
  for (int64_t c = 0; c < plan.cg; ++c) {
    const float* plane = x + c * ih_n * iw_n;
    for (int64_t p = 0; p < sw; ++p) {
      float* dst_phase = scratch + c * plan.channel_plane + p * plan.phase_plane;
      // Columns q whose input column q * sw + p - pl lies in [0, iw_n).
      const int64_t first = p - pl;  // input column of q = 0
      const int64_t q_lo = std::min(pitch, first >= 0 ? 0 : (-first + sw - 1) / sw);
      const int64_t q_hi = std::max(q_lo, std::min(pitch, iw_n - first <= 0 ? 0 : (iw_n - first + sw - 1) / sw));
      for (int64_t r = 0; r < plan.rows; ++r) {
        float* dst = dst_phase + r * pitch;
        const int64_t ih = r - pt;
        if (ih < 0 || ih >= ih_n || q_lo >= q_hi) {
          std::fill(dst, dst + pitch, 0.0f);
          continue;
        }
        const float* src = plane + ih * iw_n + first;
        std::fill(dst, dst + q_lo, 0.0f);
        if (sw == 1) {
          std::memcpy(dst + q_lo, src + q_lo, static_cast<size_t>(q_hi - q_lo) * sizeof(float));
        } else {
          for (int64_t q = q_lo; q < q_hi; ++q) dst[q] = src[q * sw];
        }
        std::fill(dst + q_hi, dst + pitch, 0.0f);
      }
    }
  }
}

// The fallback: the same padded layout and tap order, one output row at a time.
void ComputePlaneScalar(const GroupedConvPlan& plan, const float* xpad, const float* w, float bias,
                        const ConvEpilogue& epilogue, const float* z, float* y) {
  const int64_t oh_n = plan.g.output[0];
  const int64_t ow_n = plan.g.output[1];
  const int64_t row_step = plan.g.stride[0] * plan.pitch;
  for (int64_t oh = 0; oh < oh_n; ++oh) {
    float* out = y + oh * ow_n;
    std::fill(out, out + ow_n, bias);
    const float* base = xpad + oh * row_step;
    for (size_t t = 0; t < plan.taps.size(); ++t) {
      const float wv = w[t];
      const float* src = base + plan.taps[t];
      for (int64_t ow = 0; ow < ow_n; ++ow) out[ow] += wv * src[ow];
    }
  }
  if (!epilogue.is_identity() || z != nullptr) ApplyConvEpilogue(epilogue, y, z, oh_n * ow_n, 0.0f);
}

#if ONNX_LIGHT_GROUPED_SIMD

namespace avx512 {
#define ONNX_LIGHT_TILE_TARGET __attribute__((target("avx512f")))
using Vec = __m512;
constexpr int64_t kLanes = 16;
ONNX_LIGHT_TILE_TARGET inline Vec Set1(float v) { return _mm512_set1_ps(v); }
ONNX_LIGHT_TILE_TARGET inline Vec Load(const float* p) { return _mm512_loadu_ps(p); }
ONNX_LIGHT_TILE_TARGET inline Vec Fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
ONNX_LIGHT_TILE_TARGET inline void Store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
// The first n lanes through a stack copy (a masked store is slow on some CPUs).
ONNX_LIGHT_TILE_TARGET inline void StorePart(float* p, Vec v, int64_t n) {
  alignas(64) float tmp[kLanes];
  _mm512_store_ps(tmp, v);
  for (int64_t i = 0; i < n; ++i) p[i] = tmp[i];
}
ONNX_LIGHT_TILE_TARGET inline Vec Zero() { return _mm512_setzero_ps(); }
// row[c0 .. c0 + 16) with zeros outside [0, n). A vector inside the plane [begin, end) is loaded
// whole and the lanes outside the row cleared in registers; at the plane's edges a masked load
// reads only the row.
ONNX_LIGHT_TILE_TARGET inline Vec LoadRange(const float* row, int64_t c0, int64_t n, const float* begin,
                                            const float* end) {
  if (c0 >= 0 && c0 + kLanes <= n) return _mm512_loadu_ps(row + c0);
  const int64_t lo = std::max<int64_t>(0, -c0);
  const int64_t hi = std::min<int64_t>(kLanes, n - c0);
  if (hi <= lo) return Zero();
  const auto mask = static_cast<__mmask16>(((1u << hi) - 1u) & ~((1u << lo) - 1u));
  if (row + c0 >= begin && row + c0 + kLanes <= end) return _mm512_maskz_mov_ps(mask, _mm512_loadu_ps(row + c0));
  return _mm512_maskz_loadu_ps(mask, row + c0);
}
ONNX_LIGHT_TILE_TARGET inline Vec Even(Vec a, Vec b) {
  const __m512i idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return _mm512_permutex2var_ps(a, idx, b);
}
ONNX_LIGHT_TILE_TARGET inline Vec Odd(Vec a, Vec b) {
  const __m512i idx = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  return _mm512_permutex2var_ps(a, idx, b);
}
#include "kernels/nn/conv_grouped_tiles.inc"
#undef ONNX_LIGHT_TILE_TARGET
}  // namespace avx512

namespace avx2 {
#define ONNX_LIGHT_TILE_TARGET __attribute__((target("avx2,fma")))
using Vec = __m256;
constexpr int64_t kLanes = 8;
ONNX_LIGHT_TILE_TARGET inline Vec Set1(float v) { return _mm256_set1_ps(v); }
ONNX_LIGHT_TILE_TARGET inline Vec Load(const float* p) { return _mm256_loadu_ps(p); }
ONNX_LIGHT_TILE_TARGET inline Vec Fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
ONNX_LIGHT_TILE_TARGET inline void Store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
ONNX_LIGHT_TILE_TARGET inline void StorePart(float* p, Vec v, int64_t n) {
  alignas(32) float tmp[kLanes];
  _mm256_store_ps(tmp, v);
  for (int64_t i = 0; i < n; ++i) p[i] = tmp[i];
}
ONNX_LIGHT_TILE_TARGET inline Vec Zero() { return _mm256_setzero_ps(); }
// row[c0 .. c0 + 8) with zeros outside [0, n), as the AVX-512 version (a stack copy at the
// plane's edges).
ONNX_LIGHT_TILE_TARGET inline Vec LoadRange(const float* row, int64_t c0, int64_t n, const float* begin,
                                            const float* end) {
  if (c0 >= 0 && c0 + kLanes <= n) return _mm256_loadu_ps(row + c0);
  const int64_t lo = std::max<int64_t>(0, -c0);
  const int64_t hi = std::min<int64_t>(kLanes, n - c0);
  if (hi <= lo) return Zero();
  if (row + c0 >= begin && row + c0 + kLanes <= end) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i keep = _mm256_and_si256(_mm256_cmpgt_epi32(lane, _mm256_set1_epi32(static_cast<int>(lo) - 1)),
                                          _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(hi)), lane));
    return _mm256_and_ps(_mm256_castsi256_ps(keep), _mm256_loadu_ps(row + c0));
  }
  alignas(32) float tmp[kLanes] = {};
  for (int64_t i = lo; i < hi; ++i) tmp[i] = row[c0 + i];
  return _mm256_load_ps(tmp);
}
// Even / odd elements of the 16 in a, b: within each 128-bit half, then the halves' 64-bit
// pairs put in order.
ONNX_LIGHT_TILE_TARGET inline Vec Even(Vec a, Vec b) {
  const __m256 s = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}
ONNX_LIGHT_TILE_TARGET inline Vec Odd(Vec a, Vec b) {
  const __m256 s = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}
#include "kernels/nn/conv_grouped_tiles.inc"
#undef ONNX_LIGHT_TILE_TARGET
}  // namespace avx2

#endif

}  // namespace

bool SimdLevelSupported(SimdLevel level) {
  switch (level) {
    case SimdLevel::kScalar:
      return true;
#if ONNX_LIGHT_GROUPED_SIMD
    case SimdLevel::kAvx2: {
      static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
      return avx2;
    }
    case SimdLevel::kAvx512:
      return UseAvx512();
#endif
    default:
      return false;
  }
}

std::string_view SimdLevelName(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512:
      return "avx512";
    case SimdLevel::kAvx2:
      return "avx2";
    default:
      return "scalar";
  }
}

bool GroupedDirectApplies(const WindowGeometry& g, int64_t group, int64_t cg) {
  return (g.rank() == 1 || g.rank() == 2) && group > 1 && cg <= kMaxDirectGroupChannels;
}

GroupedConvPlan MakeGroupedConvPlan(const WindowGeometry& g, int64_t cg, int64_t mg, SimdLevel preferred) {
  GroupedConvPlan plan;
  if (g.rank() == 1) {
    plan.g.input = {1, g.input[0]};
    plan.g.output = {1, g.output[0]};
    plan.g.kernel = {1, g.kernel[0]};
    plan.g.stride = {1, g.stride[0]};
    plan.g.dilation = {1, g.dilation[0]};
    plan.g.pad_begin = {0, g.pad_begin[0]};
    plan.g.pad_end = {0, g.pad_end[0]};
  } else {
    plan.g = g;
  }
  const WindowGeometry& pg = plan.g;
  plan.cg = cg;
  plan.mg = mg;
  plan.level = preferred;
  // At most 8 output columns: AVX-512 would leave at least half of every vector idle.
  if (plan.level == SimdLevel::kAvx512 && pg.output[1] <= 8 && SimdLevelSupported(SimdLevel::kAvx2)) {
    plan.level = SimdLevel::kAvx2;
  }
  plan.lanes = Lanes(plan.level);
  const int64_t kh_n = pg.kernel[0];
  const int64_t kw_n = pg.kernel[1];
  const int64_t sw = pg.stride[1];
  const int64_t dh = pg.dilation[0];
  const int64_t dw = pg.dilation[1];
  // Whole vectors per row: the vector padding loop stores full vectors and must not cross rows.
  plan.pitch = RoundUp(RoundUp(std::max<int64_t>(pg.output[1], 1), plan.lanes) + (kw_n - 1) * dw / sw, plan.lanes);
  plan.rows = std::max<int64_t>(pg.output[0] - 1, 0) * pg.stride[0] + (kh_n - 1) * dh + 1;
  plan.phase_plane = plan.rows * plan.pitch;
  plan.channel_plane = sw * plan.phase_plane;
  // Tiles read rows [0, rows) and columns [0, pitch) of each phase plane, nothing beyond.
  plan.scratch = cg * plan.channel_plane;
  plan.taps.reserve(static_cast<size_t>(cg * kh_n * kw_n));
  for (int64_t c = 0; c < cg; ++c) {
    for (int64_t kh = 0; kh < kh_n; ++kh) {
      for (int64_t kw = 0; kw < kw_n; ++kw) {
        const int64_t col = kw * dw;
        plan.taps.push_back(c * plan.channel_plane + (col % sw) * plan.phase_plane + kh * dh * plan.pitch +
                            col / sw);
      }
    }
  }
  return plan;
}

void GroupedConvGroup(const GroupedConvPlan& plan, const float* x, const float* w, const float* bias,
                      const ConvEpilogue& epilogue, const float* z, float* scratch, float* y) {
  const bool vector_pad = plan.g.stride[1] <= 2;
  switch (vector_pad ? plan.level : SimdLevel::kScalar) {
#if ONNX_LIGHT_GROUPED_SIMD
    case SimdLevel::kAvx512:
      avx512::PadGroupVec(plan, x, scratch);
      break;
    case SimdLevel::kAvx2:
      avx2::PadGroupVec(plan, x, scratch);
      break;
#endif
    default:
      PadGroup(plan, x, scratch);
  }
  const int64_t out_size = plan.g.output[0] * plan.g.output[1];
  const int64_t w_size = static_cast<int64_t>(plan.taps.size());
  const bool shifted = GroupedPlaneShiftedApplies(plan);
  for (int64_t oc = 0; oc < plan.mg; ++oc) {
    const float b = bias != nullptr ? bias[oc] : 0.0f;
    const float* zc = z != nullptr ? z + oc * out_size : nullptr;
    float* yc = y + oc * out_size;
    const float* wc = w + oc * w_size;
    switch (plan.level) {
#if ONNX_LIGHT_GROUPED_SIMD
      case SimdLevel::kAvx512:
        if (shifted) {
          GroupedPlaneShifted(plan, scratch, wc, b, epilogue, zc, yc);
        } else {
          avx512::ComputePlane(plan, scratch, wc, b, epilogue, zc, yc);
        }
        break;
      case SimdLevel::kAvx2:
        avx2::ComputePlane(plan, scratch, wc, b, epilogue, zc, yc);
        break;
#endif
      default:
        ComputePlaneScalar(plan, scratch, wc, b, epilogue, zc, yc);
    }
  }
}

}  // namespace onnx_light::runtime

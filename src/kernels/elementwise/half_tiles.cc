#include "kernels/elementwise/half_tiles.h"

#include <cstring>

#include "kernels/elementwise/fast_math.h"
#include "kernels/registry/cpu_features.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 conversion intrinsics seed their result with _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports once inlined (as in row_products_avx512.cc).
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#define ONNX_LIGHT_HAVE_F16C_PATHS 1
#endif

namespace onnx_light::runtime {

namespace {

void ToFloatScalar(const Float16* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fast_math::HalfToFloat(src[i].bits);
}
void FromFloatScalar(const float* src, Float16* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i].bits = fast_math::FloatToHalf(src[i]);
}

#if defined(ONNX_LIGHT_HAVE_F16C_PATHS)
// Tails go through the scalar conversions, which give the same bits (NaN payloads aside).
__attribute__((target("avx2,f16c"))) void ToFloatF16c(const Float16* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  ToFloatScalar(src + i, dst + i, n - i);
}
__attribute__((target("avx2,f16c"))) void FromFloatF16c(const float* src, Float16* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  FromFloatScalar(src + i, dst + i, n - i);
}
__attribute__((target("avx512f"))) void ToFloatAvx512(const Float16* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(h));
  }
  if (i < n) {  // masked tail: same instruction, no scalar loop
    const __mmask16 mask = static_cast<__mmask16>((1u << (n - i)) - 1u);
    alignas(32) uint16_t tail[16] = {};
    std::memcpy(tail, src + i, static_cast<size_t>(n - i) * sizeof(uint16_t));
    const __m512 f = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(tail)));
    _mm512_mask_storeu_ps(dst + i, mask, f);
  }
}
__attribute__((target("avx512f"))) void FromFloatAvx512(const float* src, Float16* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), h);
  }
  if (i < n) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (n - i)) - 1u);
    const __m512 f = _mm512_maskz_loadu_ps(mask, src + i);
    alignas(32) uint16_t tail[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(tail), _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT));
    std::memcpy(dst + i, tail, static_cast<size_t>(n - i) * sizeof(uint16_t));
  }
}
#endif

HalfIsa DetectHalfIsa() {
#if defined(ONNX_LIGHT_HAVE_F16C_PATHS)
  if (UseAvx512()) return HalfIsa::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) return HalfIsa::kF16c;
#endif
  return HalfIsa::kScalar;
}

}  // namespace

HalfIsa ActiveHalfIsa() {
  static const HalfIsa isa = DetectHalfIsa();
  return isa;
}

const char* HalfIsaName(HalfIsa isa) {
  switch (isa) {
    case HalfIsa::kAvx512: return "avx512";
    case HalfIsa::kF16c: return "f16c";
    default: return "scalar";
  }
}

void ToFloatWith(HalfIsa isa, const Float16* src, float* dst, int64_t n) {
#if defined(ONNX_LIGHT_HAVE_F16C_PATHS)
  if (isa == HalfIsa::kAvx512) {
    ToFloatAvx512(src, dst, n);
    return;
  }
  if (isa == HalfIsa::kF16c) {
    ToFloatF16c(src, dst, n);
    return;
  }
#endif
  ToFloatScalar(src, dst, n);
}

void FromFloatWith(HalfIsa isa, const float* src, Float16* dst, int64_t n) {
#if defined(ONNX_LIGHT_HAVE_F16C_PATHS)
  if (isa == HalfIsa::kAvx512) {
    FromFloatAvx512(src, dst, n);
    return;
  }
  if (isa == HalfIsa::kF16c) {
    FromFloatF16c(src, dst, n);
    return;
  }
#endif
  FromFloatScalar(src, dst, n);
}

void ToFloat(const Float16* src, float* dst, int64_t n) { ToFloatWith(ActiveHalfIsa(), src, dst, n); }
void FromFloat(const float* src, Float16* dst, int64_t n) { FromFloatWith(ActiveHalfIsa(), src, dst, n); }

ONNX_LIGHT_CPU_CLONES void ToFloat(const BFloat16* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fast_math::BFloat16ToFloat(src[i].bits);
}
ONNX_LIGHT_CPU_CLONES void FromFloat(const float* src, BFloat16* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i].bits = fast_math::FloatToBFloat16(src[i]);
}

}  // namespace onnx_light::runtime

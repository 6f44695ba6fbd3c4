// GCC 12's AVX-512 intrinsics seed results with _mm512_undefined_ps() and, once inlined into a
// target("avx512f") function, warn that it is uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/quantization/linear_rows.h"

#include "kernels/registry/cpu_features.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

namespace onnx_light::runtime {

namespace {

// NaN-safe clamp: NaN compares false and becomes `lo`.
inline float ClampToRange(float q, float lo, float hi) {
  q = q > lo ? q : lo;
  return q < hi ? q : hi;
}

inline float QuantizeOne(float x, float scale, float zero_point, float lo, float hi) {
  return ClampToRange(std::nearbyint(x / scale) + zero_point, lo, hi);
}

template <typename Out>
void QuantizeScalar(const float* x, int64_t n, float scale, float zp, Out* y) {
  constexpr float lo = std::is_signed_v<Out> ? -128.0f : 0.0f;
  constexpr float hi = std::is_signed_v<Out> ? 127.0f : 255.0f;
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<Out>(static_cast<int>(QuantizeOne(x[i], scale, zp, lo, hi)));
}

template <typename Out>
void QuantizeScalarPerElement(const float* x, int64_t n, const float* scale, const float* zp, Out* y) {
  constexpr float lo = std::is_signed_v<Out> ? -128.0f : 0.0f;
  constexpr float hi = std::is_signed_v<Out> ? 127.0f : 255.0f;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<Out>(static_cast<int>(QuantizeOne(x[i], scale[i], zp[i], lo, hi)));
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define ONNX_LIGHT_QUANT_AVX2 1

// 32 float32 values (already clamped to the 8-bit range) to 32 bytes in order.
__attribute__((target("avx2"))) inline __m256i PackFour(__m256 a, __m256 b, __m256 c, __m256 d, bool is_signed) {
  const __m256i ab = _mm256_packs_epi32(_mm256_cvtps_epi32(a), _mm256_cvtps_epi32(b));
  const __m256i cd = _mm256_packs_epi32(_mm256_cvtps_epi32(c), _mm256_cvtps_epi32(d));
  const __m256i bytes = is_signed ? _mm256_packs_epi16(ab, cd) : _mm256_packus_epi16(ab, cd);
  return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// _mm256_max_ps(q, lo) returns lo when q is NaN (the second operand wins), as ClampToRange.
__attribute__((target("avx2"))) inline __m256 QuantizeVec(__m256 x, __m256 scale, __m256 zp, __m256 lo, __m256 hi) {
  const __m256 r = _mm256_round_ps(_mm256_div_ps(x, scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(r, zp), lo), hi);
}

__attribute__((target("avx2"))) void QuantizeAvx2(const float* x, int64_t n, float scale, float zero_point,
                                                  bool is_signed, uint8_t* y) {
  const __m256 s = _mm256_set1_ps(scale), z = _mm256_set1_ps(zero_point);
  const __m256 lo = _mm256_set1_ps(is_signed ? -128.0f : 0.0f), hi = _mm256_set1_ps(is_signed ? 127.0f : 255.0f);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256 a = QuantizeVec(_mm256_loadu_ps(x + i), s, z, lo, hi);
    const __m256 b = QuantizeVec(_mm256_loadu_ps(x + i + 8), s, z, lo, hi);
    const __m256 c = QuantizeVec(_mm256_loadu_ps(x + i + 16), s, z, lo, hi);
    const __m256 d = QuantizeVec(_mm256_loadu_ps(x + i + 24), s, z, lo, hi);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), PackFour(a, b, c, d, is_signed));
  }
  if (is_signed) {
    QuantizeScalar(x + i, n - i, scale, zero_point, reinterpret_cast<int8_t*>(y + i));
  } else {
    QuantizeScalar(x + i, n - i, scale, zero_point, y + i);
  }
}

// Whether QuantizeAvx512 may multiply by 1 / scale: a normal scale with a normal reciprocal
// (otherwise 1 / scale overflows or loses bits).
bool ReciprocalExact(float scale) { return std::isnormal(scale) && std::isnormal(1.0f / scale); }

// x * (1 / scale) rounded to the nearest integer is rint(x / scale), as the spec divides, unless
// the product lies near a half-integer: it is within 1.5 ulp of the quotient, so for |x / scale|
// up to 2048 they differ by less than 2^-11, and beyond that both saturate (zero points are
// 8-bit). A block of 16 with a lane within 2^-10 of a tie is done again with the division. The
// division alone held this loop to ~5 cycles per 8 values.
__attribute__((target("avx512f"))) void QuantizeAvx512(const float* x, int64_t n, float scale, float zero_point,
                                                      bool is_signed, uint8_t* y) {
  const __m512 s = _mm512_set1_ps(scale), inv = _mm512_set1_ps(1.0f / scale), z = _mm512_set1_ps(zero_point);
  const __m512 lo = _mm512_set1_ps(is_signed ? -128.0f : 0.0f), hi = _mm512_set1_ps(is_signed ? 127.0f : 255.0f);
  const __m512 half = _mm512_set1_ps(0.5f), margin = _mm512_set1_ps(0x1p-10f);
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512 p = _mm512_mul_ps(v, inv);
    __m512 r = _mm512_roundscale_ps(p, kNearest);
    const __m512 from_half = _mm512_abs_ps(_mm512_sub_ps(_mm512_abs_ps(_mm512_sub_ps(p, r)), half));
    if (_mm512_cmp_ps_mask(from_half, margin, _CMP_LT_OQ) != 0) {
      r = _mm512_roundscale_ps(_mm512_div_ps(v, s), kNearest);
    }
    // max(q, lo) gives lo for NaN, as ClampToRange; the clamped values convert exactly.
    const __m512 q = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(r, z), lo), hi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(q)));
  }
  if (is_signed) {
    QuantizeScalar(x + i, n - i, scale, zero_point, reinterpret_cast<int8_t*>(y + i));
  } else {
    QuantizeScalar(x + i, n - i, scale, zero_point, y + i);
  }
}

__attribute__((target("avx2"))) void QuantizePerElementAvx2(const float* x, int64_t n, const float* scale,
                                                            const float* zp, bool is_signed, uint8_t* y) {
  const __m256 lo = _mm256_set1_ps(is_signed ? -128.0f : 0.0f), hi = _mm256_set1_ps(is_signed ? 127.0f : 255.0f);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256 q[4];
    for (int j = 0; j < 4; ++j) {
      const int64_t at = i + 8 * j;
      q[j] = QuantizeVec(_mm256_loadu_ps(x + at), _mm256_loadu_ps(scale + at), _mm256_loadu_ps(zp + at), lo, hi);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), PackFour(q[0], q[1], q[2], q[3], is_signed));
  }
  if (is_signed) {
    QuantizeScalarPerElement(x + i, n - i, scale + i, zp + i, reinterpret_cast<int8_t*>(y + i));
  } else {
    QuantizeScalarPerElement(x + i, n - i, scale + i, zp + i, y + i);
  }
}

__attribute__((target("avx2"))) inline __m256 LoadBytesAsFloat(const uint8_t* p, bool is_signed) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_cvtepi32_ps(is_signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b));
}

__attribute__((target("avx2"))) void DequantizeAvx2(const uint8_t* x, bool is_signed, int64_t n, float scale,
                                                    float zero_point, float* y) {
  const __m256 s = _mm256_set1_ps(scale), z = _mm256_set1_ps(zero_point);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_sub_ps(LoadBytesAsFloat(x + i, is_signed), z), s));
  }
  for (; i < n; ++i) {
    const float v = is_signed ? static_cast<float>(static_cast<int8_t>(x[i])) : static_cast<float>(x[i]);
    y[i] = (v - zero_point) * scale;
  }
}

__attribute__((target("avx2"))) void DequantizePerElementAvx2(const uint8_t* x, bool is_signed, int64_t n,
                                                              const float* scale, const float* zp, float* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_sub_ps(LoadBytesAsFloat(x + i, is_signed), _mm256_loadu_ps(zp + i));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(v, _mm256_loadu_ps(scale + i)));
  }
  for (; i < n; ++i) {
    const float v = is_signed ? static_cast<float>(static_cast<int8_t>(x[i])) : static_cast<float>(x[i]);
    y[i] = (v - zp[i]) * scale[i];
  }
}

bool DetectAvx2() {
  const char* off = std::getenv("ONNX_LIGHT_DISABLE_AVX2");
  if (off != nullptr && std::strcmp(off, "1") == 0) return false;
  return __builtin_cpu_supports("avx2");
}
#endif

}  // namespace

bool QuantRowsUseAvx2() {
#ifdef ONNX_LIGHT_QUANT_AVX2
  static const bool use = DetectAvx2();
  return use;
#else
  return false;
#endif
}

void QuantizeRowF32(const float* x, int64_t n, float scale, float zero_point, bool is_signed, void* y) {
#ifdef ONNX_LIGHT_QUANT_AVX2
  if (UseAvx512() && ReciprocalExact(scale)) {
    return QuantizeAvx512(x, n, scale, zero_point, is_signed, static_cast<uint8_t*>(y));
  }
  if (QuantRowsUseAvx2()) return QuantizeAvx2(x, n, scale, zero_point, is_signed, static_cast<uint8_t*>(y));
#endif
  if (is_signed) return QuantizeScalar(x, n, scale, zero_point, static_cast<int8_t*>(y));
  QuantizeScalar(x, n, scale, zero_point, static_cast<uint8_t*>(y));
}

void QuantizeRowF32PerElement(const float* x, int64_t n, const float* scale, const float* zero_point,
                              bool is_signed, void* y) {
#ifdef ONNX_LIGHT_QUANT_AVX2
  if (QuantRowsUseAvx2()) {
    return QuantizePerElementAvx2(x, n, scale, zero_point, is_signed, static_cast<uint8_t*>(y));
  }
#endif
  if (is_signed) return QuantizeScalarPerElement(x, n, scale, zero_point, static_cast<int8_t*>(y));
  QuantizeScalarPerElement(x, n, scale, zero_point, static_cast<uint8_t*>(y));
}

void DequantizeRowToF32(const void* x, bool is_signed, int64_t n, float scale, float zero_point, float* y) {
  const auto* bytes = static_cast<const uint8_t*>(x);
#ifdef ONNX_LIGHT_QUANT_AVX2
  if (QuantRowsUseAvx2()) return DequantizeAvx2(bytes, is_signed, n, scale, zero_point, y);
#endif
  for (int64_t i = 0; i < n; ++i) {
    const float v = is_signed ? static_cast<float>(static_cast<int8_t>(bytes[i])) : static_cast<float>(bytes[i]);
    y[i] = (v - zero_point) * scale;
  }
}

void DequantizeRowToF32PerElement(const void* x, bool is_signed, int64_t n, const float* scale,
                                  const float* zero_point, float* y) {
  const auto* bytes = static_cast<const uint8_t*>(x);
#ifdef ONNX_LIGHT_QUANT_AVX2
  if (QuantRowsUseAvx2()) return DequantizePerElementAvx2(bytes, is_signed, n, scale, zero_point, y);
#endif
  for (int64_t i = 0; i < n; ++i) {
    const float v = is_signed ? static_cast<float>(static_cast<int8_t>(bytes[i])) : static_cast<float>(bytes[i]);
    y[i] = (v - zero_point[i]) * scale[i];
  }
}

// Built per instruction set, with independent minima and maxima: one vector accumulator waits on
// its own previous compare every step.
ONNX_LIGHT_CPU_CLONES void MinMaxF32(const float* x, int64_t n, float* min_value, float* max_value) {
  // Element-wise over 64 lanes (no reduction inside the loop, which GCC would finish in scalar
  // code every block): four AVX-512 or eight AVX2 accumulators per bound.
  constexpr int64_t kLanes = 64;
  float lo[kLanes], hi[kLanes];
  for (int64_t i = 0; i < kLanes; ++i) {
    lo[i] = std::numeric_limits<float>::infinity();
    hi[i] = -std::numeric_limits<float>::infinity();
  }
  // Compare-and-select (minps/maxps), not fmin/fmax, which GCC leaves as a call per element.
  // A NaN element compares false and is skipped.
  const int64_t full = n - n % kLanes;
  for (int64_t b = 0; b < full; b += kLanes) {
    for (int64_t i = 0; i < kLanes; ++i) {
      const float v = x[b + i];
      lo[i] = v < lo[i] ? v : lo[i];
      hi[i] = v > hi[i] ? v : hi[i];
    }
  }
  float l = std::numeric_limits<float>::infinity(), h = -l;
  for (int64_t i = 0; i < kLanes; ++i) {
    l = lo[i] < l ? lo[i] : l;
    h = hi[i] > h ? hi[i] : h;
  }
  for (int64_t i = full; i < n; ++i) {
    l = x[i] < l ? x[i] : l;
    h = x[i] > h ? x[i] : h;
  }
  if (l > h) l = h = std::numeric_limits<float>::quiet_NaN();  // every element is NaN
  *min_value = l;
  *max_value = h;
}

}  // namespace onnx_light::runtime

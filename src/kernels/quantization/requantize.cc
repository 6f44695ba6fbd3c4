// GCC 12's AVX-512 intrinsics seed results with _mm512_undefined_*() and, once inlined into a
// target("avx512f") function, warn that it is uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/quantization/requantize.h"

#include <type_traits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "kernels/registry/cpu_features.h"

namespace onnx_light::runtime {

namespace {

// `Multiplier` is double (one for the row) or const double* (one per element).
template <typename T, typename Multiplier>
ONNX_LIGHT_CPU_CLONES void RequantizeTo(const int32_t* acc, int64_t n, Multiplier multiplier, double zero_point,
                                        double lo, double hi, T* y, int32_t bias) {
  constexpr double kRound = 0x1.8p52;
  for (int64_t i = 0; i < n; ++i) {
    const auto a = static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(acc[i]) + static_cast<uint32_t>(bias)));
    double v;
    if constexpr (std::is_pointer_v<Multiplier>) {
      v = a * multiplier[i];
    } else {
      v = a * multiplier;
    }
    v += zero_point;
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    v = (v + kRound) - kRound;
    y[i] = static_cast<T>(static_cast<int32_t>(v));
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define ONNX_LIGHT_REQUANTIZE_AVX512 1

// The same arithmetic 16 lanes at a time (the compiler's clone uses 256-bit vectors and packs
// the results in several steps): product, sum, the clip (max returns its second operand, the
// bound, for NaN, as the comparison above does), then a conversion rounding half to even, which
// equals the 1.5 * 2^52 trick for clipped values; the int32 lanes are in range for the byte store.
__attribute__((target("avx512f"))) inline __m256i RequantizeLanes(__m512d v, __m512d m, __m512d z, __m512d low,
                                                                  __m512d high) {
  v = _mm512_add_pd(_mm512_mul_pd(v, m), z);
  v = _mm512_min_pd(_mm512_max_pd(v, low), high);
  return _mm512_cvt_roundpd_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

template <typename Multiplier>
__attribute__((target("avx512f"))) void RequantizeAvx512(const int32_t* acc, int64_t n, Multiplier multiplier,
                                                         double zero_point, double lo, double hi, void* y,
                                                         int32_t bias) {
  auto* out = static_cast<int8_t*>(y);
  const __m512i add = _mm512_set1_epi32(bias);
  const __m512d z = _mm512_set1_pd(zero_point), low = _mm512_set1_pd(lo), high = _mm512_set1_pd(hi);
  for (int64_t i = 0; i < n; i += 16) {
    const int64_t left = n - i;
    const __mmask16 mask = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    const __m512i a = _mm512_add_epi32(_mm512_maskz_loadu_epi32(mask, acc + i), add);
    __m512d m0, m1;
    if constexpr (std::is_pointer_v<Multiplier>) {
      m0 = _mm512_maskz_loadu_pd(static_cast<__mmask8>(mask), multiplier + i);
      m1 = _mm512_maskz_loadu_pd(static_cast<__mmask8>(mask >> 8), multiplier + i + 8);
    } else {
      m0 = m1 = _mm512_set1_pd(multiplier);
    }
    const __m256i r0 = RequantizeLanes(_mm512_cvtepi32_pd(_mm512_castsi512_si256(a)), m0, z, low, high);
    const __m256i r1 = RequantizeLanes(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(a, 1)), m1, z, low, high);
    _mm512_mask_cvtepi32_storeu_epi8(out + i, mask, _mm512_inserti64x4(_mm512_castsi256_si512(r0), r1, 1));
  }
}
#endif

template <typename Multiplier>
void Requantize(const int32_t* acc, int64_t n, Multiplier multiplier, double zero_point, bool is_signed, void* y,
                int32_t bias) {
  const double lo = is_signed ? -128.0 : 0.0, hi = is_signed ? 127.0 : 255.0;
#ifdef ONNX_LIGHT_REQUANTIZE_AVX512
  if (UseAvx512()) return RequantizeAvx512(acc, n, multiplier, zero_point, lo, hi, y, bias);
#endif
  if (is_signed) {
    RequantizeTo(acc, n, multiplier, zero_point, lo, hi, static_cast<int8_t*>(y), bias);
  } else {
    RequantizeTo(acc, n, multiplier, zero_point, lo, hi, static_cast<uint8_t*>(y), bias);
  }
}

}  // namespace

void RequantizeRow(const int32_t* acc, int64_t n, double multiplier, double zero_point, bool is_signed, void* y,
                   int32_t bias) {
  Requantize(acc, n, multiplier, zero_point, is_signed, y, bias);
}

void RequantizeColumns(const int32_t* acc, int64_t n, const double* multipliers, double zero_point, bool is_signed,
                       void* y) {
  Requantize(acc, n, multipliers, zero_point, is_signed, y, 0);
}

}  // namespace onnx_light::runtime

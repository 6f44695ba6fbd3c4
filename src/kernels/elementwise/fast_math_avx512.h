#pragma once
// fast_math::ExpNonPositive's approximation on 16 lanes with AVX-512 intrinsics and FMAs, for
// loops that are bound by the exponential (attention's softmax over 750-key rows). The same
// range reduction, polynomial and limits as the scalar function, with every multiply-add fused
// and the scaling by 2^n done by vscalefps: ~19 vector operations instead of ~31. Fusing rounds
// differently, so a lane may differ from the scalar function by an ulp; the scalar kernels, whose
// clones must agree bit for bit, keep the unfused form (tests/cpp/attention_kernel_test.cc).

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define ONNX_LIGHT_FAST_MATH_AVX512 1

namespace onnx_light::runtime::fast_math {

/// e^x for each lane with x <= 0 (within 1 ulp of ExpNonPositive), 0 below -87.5, NaN for NaN.
__attribute__((target("avx512f,fma"), always_inline)) inline __m512 ExpNonPositiveFmaAvx512(__m512 x) {
  const __m512 lowest = _mm512_set1_ps(-87.5f);
  const __m512 round = _mm512_set1_ps(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  // x < -87.5 is false for NaN, which passes through.
  const __mmask16 below = _mm512_cmp_ps_mask(x, lowest, _CMP_LT_OQ);
  const __m512 xc = _mm512_mask_blend_ps(below, x, lowest);
  const __m512 fn = _mm512_sub_ps(_mm512_fmadd_ps(xc, _mm512_set1_ps(1.44269504088896341f), round), round);
  __m512 r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(0.693359375f), xc);
  r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
  // y * 2^fn, fn an integer >= -126: exact scaling, rounded once like the scalar multiply.
  return _mm512_maskz_scalef_ps(static_cast<__mmask16>(~below), y, fn);
}

}  // namespace onnx_light::runtime::fast_math

#else
#define ONNX_LIGHT_FAST_MATH_AVX512 0
#endif

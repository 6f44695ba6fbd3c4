#pragma once
// fast_math::Sigmoid on sixteen floats with AVX-512 instructions, the same bits for every finite
// and infinite input (a NaN input gives a NaN). The operations are fast_math's, in its order;
// the differences are only in how they are issued: the clamp is one max, and the scaling by 2^n
// is one vscalefps, which rounds y * 2^n once as fast_math's two-step multiplication does (its
// first step is exact). About 30 vector operations and one division, where the compiler's
// vectorisation of the portable code issues about 45.
//
// Include only from code built for x86-64 with GCC or Clang; call only where UseAvx512().

#include <immintrin.h>

namespace onnx_light::runtime::fast_math {

__attribute__((target("avx512f"), always_inline)) inline __m512 SigmoidAvx512(__m512 x) {
  const __m512 minus_abs = _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32(static_cast<int>(0x80000000u))));
  // ExpNonPositiveWithSubnormals(-|x|): max(kExpMin, v) is `v < kExpMin ? kExpMin : v`, NaN kept.
  const __m512 xc = _mm512_max_ps(_mm512_set1_ps(-103.97208404541015625f), minus_abs);
  const __m512 round = _mm512_set1_ps(12582912.0f);
  const __m512 t = _mm512_add_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)), round);
  const __m512 fn = _mm512_sub_ps(t, round);
  __m512 r = _mm512_sub_ps(xc, _mm512_mul_ps(fn, _mm512_set1_ps(0.693359375f)));
  r = _mm512_sub_ps(r, _mm512_mul_ps(fn, _mm512_set1_ps(-2.12194440e-4f)));
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(5.0000001201e-1f));
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 y = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(p, r), r), r), one);
  const __m512 e = _mm512_scalef_ps(y, fn);  // fn is a whole number in [-150, 0]
  const __m512 q = _mm512_div_ps(one, _mm512_add_ps(one, e));
  const __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  return _mm512_mask_mul_ps(q, negative, e, q);  // x < 0 ? e * q : q
}

}  // namespace onnx_light::runtime::fast_math

#include "kernels/quantization/contrib/qlinear_rows.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>

#include "kernels/quantization/linear_rows.h"
#include "kernels/registry/cpu_features.h"

namespace onnx_light::runtime {

namespace {

inline int32_t LoadByte(const void* x, bool is_signed, int64_t i) {
  return is_signed ? static_cast<const int8_t*>(x)[i] : static_cast<const uint8_t*>(x)[i];
}

inline void StoreSaturated(void* y, bool is_signed, int64_t i, int32_t v) {
  const int32_t lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
  v = v < lo ? lo : (v > hi ? hi : v);
  if (is_signed) {
    static_cast<int8_t*>(y)[i] = static_cast<int8_t>(v);
  } else {
    static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(v);
  }
}

void QLinearAddScalar(const void* p, const void* s, bool s_scalar, int64_t begin, int64_t n,
                      const QLinearAddTerms& t, bool is_signed, void* y) {
  for (int64_t i = begin; i < n; ++i) {
    const float pv = static_cast<float>(LoadByte(p, is_signed, i));
    const float sv = static_cast<float>(LoadByte(s, is_signed, s_scalar ? 0 : i));
    const float v = std::fma(pv, t.rp, std::fma(sv, t.rs, t.fixed));
    StoreSaturated(y, is_signed, i, RoundToInt32LikeCvtps(v));
  }
}

void QLinearMulScalar(const void* a, const void* b, bool b_scalar, int64_t begin, int64_t n, int32_t za, int32_t zb,
                      float ratio, float zc, bool is_signed, void* y) {
  for (int64_t i = begin; i < n; ++i) {
    const int32_t prod = (LoadByte(a, is_signed, i) - za) * (LoadByte(b, is_signed, b_scalar ? 0 : i) - zb);
    const float scaled = static_cast<float>(prod) * ratio;
    StoreSaturated(y, is_signed, i, RoundToInt32LikeCvtps(scaled + zc));
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define ONNX_LIGHT_QCONTRIB_AVX2 1

__attribute__((target("avx2"))) inline __m256i LoadEight(const uint8_t* p, bool is_signed) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return is_signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
}

// Four vectors of 8 int32 to 32 saturated bytes in order.
__attribute__((target("avx2"))) inline __m256i PackInt32x4(__m256i a, __m256i b, __m256i c, __m256i d,
                                                           bool is_signed) {
  const __m256i ab = _mm256_packs_epi32(a, b);
  const __m256i cd = _mm256_packs_epi32(c, d);
  const __m256i bytes = is_signed ? _mm256_packs_epi16(ab, cd) : _mm256_packus_epi16(ab, cd);
  return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

__attribute__((target("avx2,fma"))) void QLinearAddAvx2(const uint8_t* p, const uint8_t* s, bool s_scalar,
                                                        int64_t n, const QLinearAddTerms& t, bool is_signed,
                                                        uint8_t* y, int64_t* done) {
  const __m256 rp = _mm256_set1_ps(t.rp), rs = _mm256_set1_ps(t.rs);
  __m256 fixed = _mm256_set1_ps(t.fixed);
  if (s_scalar) {
    const float sv = static_cast<float>(LoadByte(s, is_signed, 0));
    fixed = _mm256_set1_ps(std::fma(sv, t.rs, t.fixed));
  }
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i q[4];
    for (int j = 0; j < 4; ++j) {
      __m256 acc = fixed;
      if (!s_scalar) acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(LoadEight(s + i + 8 * j, is_signed)), rs, acc);
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(LoadEight(p + i + 8 * j, is_signed)), rp, acc);
      q[j] = _mm256_cvtps_epi32(acc);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), PackInt32x4(q[0], q[1], q[2], q[3], is_signed));
  }
  *done = i;
}

__attribute__((target("avx2"))) void QLinearMulAvx2(const uint8_t* a, const uint8_t* b, bool b_scalar, int64_t n,
                                                    int32_t za, int32_t zb, float ratio, float zc, bool is_signed,
                                                    uint8_t* y, int64_t* done) {
  const __m256i vza = _mm256_set1_epi32(za), vzb = _mm256_set1_epi32(zb);
  const __m256 vr = _mm256_set1_ps(ratio), vzc = _mm256_set1_ps(zc);
  const __m256i bs = _mm256_set1_epi32(LoadByte(b, is_signed, 0) - zb);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i q[4];
    for (int j = 0; j < 4; ++j) {
      const __m256i av = _mm256_sub_epi32(LoadEight(a + i + 8 * j, is_signed), vza);
      const __m256i bv = b_scalar ? bs : _mm256_sub_epi32(LoadEight(b + i + 8 * j, is_signed), vzb);
      // Separate multiply and add (ONNX Runtime's loop has no fused multiply-add).
      const __m256 scaled = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_mullo_epi32(av, bv)), vr);
      q[j] = _mm256_cvtps_epi32(_mm256_add_ps(scaled, vzc));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), PackInt32x4(q[0], q[1], q[2], q[3], is_signed));
  }
  *done = i;
}

// Sums of 32 bytes at a time with vpsadbw; int8 is biased to uint8 by flipping the sign bit.
__attribute__((target("avx2"))) int64_t SumBytesAvx2(const uint8_t* x, int64_t len, bool is_signed) {
  const __m256i zero = _mm256_setzero_si256(), flip = _mm256_set1_epi8(static_cast<char>(0x80));
  __m256i acc = zero;
  int64_t i = 0;
  for (; i + 32 <= len; i += 32) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    if (is_signed) v = _mm256_xor_si256(v, flip);
    acc = _mm256_add_epi64(acc, _mm256_sad_epu8(v, zero));
  }
  int64_t total = _mm256_extract_epi64(acc, 0) + _mm256_extract_epi64(acc, 1) + _mm256_extract_epi64(acc, 2) +
                  _mm256_extract_epi64(acc, 3);
  if (is_signed) total -= 128 * i;
  for (; i < len; ++i) total += LoadByte(x, is_signed, i);
  return total;
}

__attribute__((target("avx2"))) void RequantizeAvx2(const int32_t* acc, int64_t n, int32_t bias, float scale,
                                                    const float* scales, int32_t zp, bool is_signed, uint8_t* y,
                                                    int64_t* done) {
  const __m256i vbias = _mm256_set1_epi32(bias), vzp = _mm256_set1_epi32(zp);
  const __m256 vscale = _mm256_set1_ps(scale);
  const __m256 lo = _mm256_set1_ps(static_cast<float>((is_signed ? -128 : 0) - zp));
  const __m256 hi = _mm256_set1_ps(static_cast<float>((is_signed ? 127 : 255) - zp));
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i q[4];
    for (int j = 0; j < 4; ++j) {
      const int64_t at = i + 8 * j;
      const __m256i v = _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + at)), vbias);
      __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), scales ? _mm256_loadu_ps(scales + at) : vscale);
      f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
      q[j] = _mm256_add_epi32(_mm256_cvtps_epi32(f), vzp);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), PackInt32x4(q[0], q[1], q[2], q[3], is_signed));
  }
  *done = i;
}
#endif

}  // namespace

QLinearAddTerms MakeQLinearAddTerms(float scale_p, int32_t zp, float scale_s, int32_t zs, float scale_c,
                                    int32_t zc) {
  QLinearAddTerms t;
  t.rp = scale_p / scale_c;
  t.rs = scale_s / scale_c;
  const float zero_terms = std::fma(t.rp, static_cast<float>(zp), t.rs * static_cast<float>(zs));
  t.fixed = static_cast<float>(zc) - zero_terms;
  return t;
}

void QLinearAddRow(const void* p, const void* s, bool s_scalar, int64_t n, const QLinearAddTerms& terms,
                   bool is_signed, void* y) {
  int64_t done = 0;
#ifdef ONNX_LIGHT_QCONTRIB_AVX2
  if (QuantRowsUseAvx2()) {
    QLinearAddAvx2(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(s), s_scalar, n, terms, is_signed,
                   static_cast<uint8_t*>(y), &done);
  }
#endif
  QLinearAddScalar(p, s, s_scalar, done, n, terms, is_signed, y);
}

void QLinearMulRow(const void* a, const void* b, bool b_scalar, int64_t n, int32_t za, int32_t zb, float ratio,
                   int32_t zc, bool is_signed, void* y) {
  int64_t done = 0;
  const float zcf = static_cast<float>(zc);
#ifdef ONNX_LIGHT_QCONTRIB_AVX2
  if (QuantRowsUseAvx2()) {
    QLinearMulAvx2(static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b), b_scalar, n, za, zb, ratio, zcf,
                   is_signed, static_cast<uint8_t*>(y), &done);
  }
#endif
  QLinearMulScalar(a, b, b_scalar, done, n, za, zb, ratio, zcf, is_signed, y);
}

void SumByteRows(const void* x, bool is_signed, int64_t rows, int64_t len, int32_t* sums) {
  const auto* bytes = static_cast<const uint8_t*>(x);
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = bytes + r * len;
#ifdef ONNX_LIGHT_QCONTRIB_AVX2
    if (QuantRowsUseAvx2()) {
      sums[r] = static_cast<int32_t>(SumBytesAvx2(row, len, is_signed));
      continue;
    }
#endif
    int64_t total = 0;
    for (int64_t i = 0; i < len; ++i) total += LoadByte(row, is_signed, i);
    sums[r] = static_cast<int32_t>(total);
  }
}

namespace {

// Up to 128 rows of one block of channels summed in int16 lanes (|sum| <= 128 * 128 fits), then
// widened once: twice the lanes of int32 sums per instruction.
template <typename T>
ONNX_LIGHT_CPU_CLONES void AccumulateColumnsBlock(const T* x, int64_t rows, int64_t channels, int64_t width,
                                                  int32_t* acc) {
  constexpr int64_t kRowsPerPass = 128;
  int16_t partial[256];
  for (int64_t r0 = 0; r0 < rows; r0 += kRowsPerPass) {
    const int64_t r1 = std::min(rows, r0 + kRowsPerPass);
    for (int64_t c = 0; c < width; ++c) partial[c] = 0;
    for (int64_t r = r0; r < r1; ++r) {
      const T* v = x + r * channels;
      for (int64_t c = 0; c < width; ++c) partial[c] = static_cast<int16_t>(partial[c] + v[c]);
    }
    for (int64_t c = 0; c < width; ++c) acc[c] += partial[c];
  }
}

}  // namespace

void AccumulateByteColumns(const void* x, bool is_signed, int64_t rows, int64_t channels, int32_t* acc) {
  for (int64_t c0 = 0; c0 < channels; c0 += 256) {
    const int64_t width = std::min<int64_t>(256, channels - c0);
    if (is_signed) {
      AccumulateColumnsBlock(static_cast<const int8_t*>(x) + c0, rows, channels, width, acc + c0);
    } else {
      AccumulateColumnsBlock(static_cast<const uint8_t*>(x) + c0, rows, channels, width, acc + c0);
    }
  }
}

void RequantizeInt32(const int32_t* acc, int64_t n, int32_t bias, float scale, const float* scales, int32_t zp,
                     bool is_signed, void* y) {
  int64_t done = 0;
#ifdef ONNX_LIGHT_QCONTRIB_AVX2
  if (QuantRowsUseAvx2()) {
    RequantizeAvx2(acc, n, bias, scale, scales, zp, is_signed, static_cast<uint8_t*>(y), &done);
  }
#endif
  const float lo = static_cast<float>((is_signed ? -128 : 0) - zp);
  const float hi = static_cast<float>((is_signed ? 127 : 255) - zp);
  for (int64_t i = done; i < n; ++i) {
    float f = static_cast<float>(static_cast<int32_t>(static_cast<uint32_t>(acc[i]) + static_cast<uint32_t>(bias))) *
              (scales ? scales[i] : scale);
    // maxps/minps: a NaN product becomes `lo`.
    f = f > lo ? f : lo;
    f = f < hi ? f : hi;
    StoreSaturated(y, is_signed, i, RoundToInt32LikeCvtps(f) + zp);
  }
}

}  // namespace onnx_light::runtime

// The AVX-512 Sigmoid (kernels/elementwise/sigmoid_avx512.h) and the conv epilogue's Sigmoid and
// SiLU loops built on it give fast_math::Sigmoid's bits: over a sample of every float bit pattern
// (both signs, subnormal inputs, the range where e^-|x| is subnormal, the clamp), the
// infinities, and tails of every length with a bias and a residual.
// GCC 12's AVX-512 intrinsics seed results with _mm512_undefined_ps() and, once inlined into a
// target("avx512f") function, warn that it is uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/elementwise/fast_math.h"
#include "kernels/nn/conv_epilogue.h"
#include "kernels/registry/cpu_features.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "kernels/elementwise/sigmoid_avx512.h"
#define ONNX_LIGHT_TEST_AVX512 1
#else
#define ONNX_LIGHT_TEST_AVX512 0
#endif

namespace onnx_light::runtime {
namespace {

// Floats from every 65,537th bit pattern (all exponents, both signs), the boundaries of the
// exp clamp and of subnormal e^-|x|, zeros, infinities and NaN.
std::vector<float> SampleInputs() {
  std::vector<float> xs;
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 65537) xs.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  for (const float v : {0.0f, -0.0f, 1e-45f, -1e-45f, 87.3f, -87.3f, 87.5f, -87.5f, 88.0f, -88.0f, 103.9f, -103.9f,
                        103.97208404541015625f, -103.97208404541015625f, 104.0f, -104.0f, 150.0f, -150.0f,
                        std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN()}) {
    xs.push_back(v);
  }
  for (float v = -110.0f; v <= 110.0f; v += 0.013f) xs.push_back(v);
  return xs;
}

void ExpectSameBits(float want, float got, float x) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << "x = " << x;
  } else {
    EXPECT_EQ(std::bit_cast<uint32_t>(want), std::bit_cast<uint32_t>(got)) << "x = " << x << " want " << want << " got " << got;
  }
}

#if ONNX_LIGHT_TEST_AVX512
__attribute__((target("avx512f"))) void SigmoidVector(const float* x, float* y) {
  _mm512_storeu_ps(y, fast_math::SigmoidAvx512(_mm512_loadu_ps(x)));
}
#endif

TEST(SigmoidAvx512, SameBitsAsFastMathSigmoid) {
#if ONNX_LIGHT_TEST_AVX512
  if (!UseAvx512()) GTEST_SKIP() << "no AVX-512 on this CPU (or ONNX_LIGHT_DISABLE_AVX512 set)";
  std::vector<float> xs = SampleInputs();
  xs.resize((xs.size() + 15) / 16 * 16, 0.5f);
  std::vector<float> ys(xs.size());
  for (size_t i = 0; i < xs.size(); i += 16) SigmoidVector(xs.data() + i, ys.data() + i);
  for (size_t i = 0; i < xs.size(); ++i) ExpectSameBits(fast_math::Sigmoid(xs[i]), ys[i], xs[i]);
#else
  GTEST_SKIP() << "the AVX-512 Sigmoid is built for x86-64 only";
#endif
}

// The epilogue (AVX-512 on CPUs that have it, the portable loop elsewhere) against the scalar
// expression of the standalone kernels, with a bias and a residual, on every tail length.
TEST(SigmoidAvx512, ConvEpilogueSigmoidAndSiLUKeepTheStandaloneBits) {
  const std::vector<float> xs = SampleInputs();
  for (const bool silu : {false, true}) {
    const ConvEpilogue e{silu ? ConvActivation::kSiLU : ConvActivation::kSigmoid, 0.0f, 0.0f};
    for (const int64_t n : {int64_t{1}, int64_t{15}, int64_t{16}, int64_t{17}, static_cast<int64_t>(xs.size())}) {
      std::vector<float> y(xs.begin(), xs.begin() + n);
      std::vector<float> z(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) z[i] = static_cast<float>(i % 7) * 0.25f - 0.5f;
      const float bias = 0.125f;
      ApplyConvEpilogue(e, y.data(), z.data(), n, bias);
      for (int64_t i = 0; i < n; ++i) {
        const float v = (xs[i] + bias) + z[i];
        const float want = silu ? v * fast_math::Sigmoid(v) : fast_math::Sigmoid(v);
        ExpectSameBits(want, y[i], v);
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

}  // namespace
}  // namespace onnx_light::runtime

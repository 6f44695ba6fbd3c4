// The AVX-512 Sigmoid (kernels/elementwise/sigmoid_avx512.h) against double precision and
// against fast_math::Sigmoid, over a sample of every float bit pattern (both signs, subnormal
// inputs, the range where e^-|x| is subnormal, the clamp), the infinities and NaN; and the conv
// epilogue's Sigmoid and SiLU loops against the standalone kernels' expressions on the running
// CPU, on tails of every length with a bias and a residual.
// GCC 12's AVX-512 intrinsics seed results with _mm512_undefined_ps() and, once inlined into a
// target("avx512f") function, warn that it is uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <gtest/gtest.h>

#include <algorithm>
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

// |got - want| in units of the last place of want; below FLT_MIN, in subnormal steps.
double UlpDistance(float got, double want) {
  const double magnitude = std::max(std::fabs(want), static_cast<double>(std::numeric_limits<float>::min()));
  return std::fabs(static_cast<double>(got) - want) / std::ldexp(1.0, std::ilogb(magnitude) - 23);
}

#if ONNX_LIGHT_TEST_AVX512
__attribute__((target("avx512f"))) void SigmoidVector(const float* x, float* y) {
  _mm512_storeu_ps(y, fast_math::SigmoidAvx512(_mm512_loadu_ps(x)));
}

// The AVX-512 Sigmoid of every sample input.
std::vector<float> SigmoidAvx512Of(std::vector<float> xs) {
  const size_t n = xs.size();
  xs.resize((n + 15) / 16 * 16, 0.5f);
  std::vector<float> ys(xs.size());
  for (size_t i = 0; i < xs.size(); i += 16) SigmoidVector(xs.data() + i, ys.data() + i);
  ys.resize(n);
  return ys;
}

__attribute__((target("avx512f"))) float SigmoidAvx512Scalar(float x) {
  float y[16];
  _mm512_storeu_ps(y, fast_math::SigmoidAvx512(_mm512_set1_ps(x)));
  return y[0];
}
#endif

// What the standalone Sigmoid kernel computes for one float on this CPU.
float KernelSigmoid(float x) {
#if ONNX_LIGHT_TEST_AVX512
  if (UseAvx512()) return SigmoidAvx512Scalar(x);
#endif
  return fast_math::Sigmoid(x);
}

TEST(SigmoidAvx512, WithinFourUlpOfTheExactSigmoid) {
#if ONNX_LIGHT_TEST_AVX512
  if (!UseAvx512()) GTEST_SKIP() << "no AVX-512 on this CPU (or ONNX_LIGHT_DISABLE_AVX512 set)";
  const std::vector<float> xs = SampleInputs();
  const std::vector<float> ys = SigmoidAvx512Of(xs);
  double worst = 0.0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float x = xs[i];
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(ys[i]));
      continue;
    }
    const double exact = 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
    worst = std::max(worst, UlpDistance(ys[i], exact));
    EXPECT_LE(UlpDistance(ys[i], exact), 4.0) << "x = " << x << " got " << ys[i] << " exact " << exact;
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(worst, 0.5);  // the sample reaches inputs that are not correctly rounded
  EXPECT_EQ(SigmoidAvx512Scalar(0.0f), 0.5f);
  EXPECT_EQ(SigmoidAvx512Scalar(-0.0f), 0.5f);
  EXPECT_EQ(SigmoidAvx512Scalar(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_LE(SigmoidAvx512Scalar(-std::numeric_limits<float>::infinity()), std::numeric_limits<float>::denorm_min());
#else
  GTEST_SKIP() << "the AVX-512 Sigmoid is built for x86-64 only";
#endif
}

TEST(SigmoidAvx512, WithinAFewUlpOfFastMathSigmoid) {
#if ONNX_LIGHT_TEST_AVX512
  if (!UseAvx512()) GTEST_SKIP() << "no AVX-512 on this CPU (or ONNX_LIGHT_DISABLE_AVX512 set)";
  const std::vector<float> xs = SampleInputs();
  const std::vector<float> ys = SigmoidAvx512Of(xs);
  for (size_t i = 0; i < xs.size(); ++i) {
    const float portable = fast_math::Sigmoid(xs[i]);
    if (std::isnan(portable)) {
      EXPECT_TRUE(std::isnan(ys[i])) << "x = " << xs[i];
      continue;
    }
    EXPECT_LE(UlpDistance(ys[i], portable), 6.0) << "x = " << xs[i] << " got " << ys[i] << " portable " << portable;
    if (::testing::Test::HasFailure()) return;
  }
#else
  GTEST_SKIP() << "the AVX-512 Sigmoid is built for x86-64 only";
#endif
}

// The epilogue (AVX-512 on CPUs that have it, the portable loop elsewhere) against the
// standalone kernels' expression on the same CPU (Sigmoid, and Mul of the value by it), with a
// bias and a residual, on every tail length: fusing an activation does not change its bits.
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
        const float want = silu ? v * KernelSigmoid(v) : KernelSigmoid(v);
        ExpectSameBits(want, y[i], v);
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

}  // namespace
}  // namespace onnx_light::runtime

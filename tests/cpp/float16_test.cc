// Float16 and BFloat16: exact bit patterns, round-to-nearest-even, NaN and infinity handling, and
// exhaustive round trips.

#include "onnx_light/runtime/float16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace onnx_light::runtime {
namespace {

float Pow2(int e) { return std::ldexp(1.0f, e); }

bool IsHalfNan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0; }
bool IsBf16Nan(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x007fu) != 0; }

TEST(Float16Test, KnownBitPatterns) {
  EXPECT_EQ(Float16::FromFloat(0.0f), 0x0000);
  EXPECT_EQ(Float16::FromFloat(-0.0f), 0x8000);
  EXPECT_EQ(Float16::FromFloat(1.0f), 0x3c00);
  EXPECT_EQ(Float16::FromFloat(-2.0f), 0xc000);
  EXPECT_EQ(Float16::FromFloat(0.5f), 0x3800);
  EXPECT_EQ(Float16::FromFloat(65504.0f), 0x7bff);         // largest finite half
  EXPECT_EQ(Float16::FromFloat(Pow2(-14)), 0x0400);        // smallest normal
  EXPECT_EQ(Float16::FromFloat(Pow2(-24)), 0x0001);        // smallest subnormal
  EXPECT_EQ(Float16::FromFloat(-Pow2(-24)), 0x8001);
  EXPECT_EQ(Float16::FromFloat(1023 * Pow2(-24)), 0x03ff);  // largest subnormal
}

TEST(Float16Test, OverflowAndInfinity) {
  EXPECT_EQ(Float16::FromFloat(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(Float16::FromFloat(65520.0f), 0x7c00);  // halfway to 2^16 rounds up (even) to inf
  EXPECT_EQ(Float16::FromFloat(-65520.0f), 0xfc00);
  EXPECT_EQ(Float16::FromFloat(1e10f), 0x7c00);
  EXPECT_EQ(Float16::FromFloat(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(Float16::FromFloat(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(Float16::FromFloat(-std::numeric_limits<float>::infinity()), 0xfc00);
}

TEST(Float16Test, RoundsToNearestEven) {
  // Normal range: 1 + 2^-11 is halfway between 0x3c00 and 0x3c01.
  EXPECT_EQ(Float16::FromFloat(1.0f + Pow2(-11)), 0x3c00);
  EXPECT_EQ(Float16::FromFloat(1.0f + 3 * Pow2(-11)), 0x3c02);
  EXPECT_EQ(Float16::FromFloat(1.0f + Pow2(-11) + Pow2(-20)), 0x3c01);
  EXPECT_EQ(Float16::FromFloat(1.0f + Pow2(-11) - Pow2(-20)), 0x3c00);
  // Subnormal range.
  EXPECT_EQ(Float16::FromFloat(Pow2(-25)), 0x0000);
  EXPECT_EQ(Float16::FromFloat(std::nextafter(Pow2(-25), 1.0f)), 0x0001);
  EXPECT_EQ(Float16::FromFloat(3 * Pow2(-25)), 0x0002);
  EXPECT_EQ(Float16::FromFloat(Pow2(-26)), 0x0000);
  EXPECT_EQ(Float16::FromFloat(-Pow2(-26)), 0x8000);
  EXPECT_EQ(Float16::FromFloat(std::numeric_limits<float>::denorm_min()), 0x0000);
  // Largest subnormal + half an ulp rounds up into the normal range.
  EXPECT_EQ(Float16::FromFloat(Pow2(-14) - Pow2(-25)), 0x0400);
}

TEST(Float16Test, NanStaysNan) {
  const float quiet = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(IsHalfNan(Float16::FromFloat(quiet)));
  EXPECT_TRUE(IsHalfNan(Float16::FromFloat(-quiet)));
  EXPECT_EQ(Float16::FromFloat(-quiet) & 0x8000, 0x8000);
  // A NaN whose payload lives only in bits that do not fit in a half must not become infinity.
  EXPECT_TRUE(IsHalfNan(Float16::FromFloat(std::bit_cast<float>(0x7f800001u))));
  EXPECT_TRUE(IsHalfNan(Float16::FromFloat(std::bit_cast<float>(0xff800001u))));
  EXPECT_TRUE(std::isnan(Float16::ToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(Float16::ToFloat(0x7c01)));
  EXPECT_TRUE(std::isnan(Float16::ToFloat(0xfe00)));
}

TEST(Float16Test, ToFloatKnownValues) {
  EXPECT_EQ(Float16::ToFloat(0x3c00), 1.0f);
  EXPECT_EQ(Float16::ToFloat(0xc000), -2.0f);
  EXPECT_EQ(Float16::ToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(Float16::ToFloat(0x0001), Pow2(-24));
  EXPECT_EQ(Float16::ToFloat(0x03ff), 1023 * Pow2(-24));
  EXPECT_EQ(Float16::ToFloat(0x0400), Pow2(-14));
  EXPECT_EQ(Float16::ToFloat(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(Float16::ToFloat(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(Float16::ToFloat(0x8000), 0.0f);
  EXPECT_TRUE(std::signbit(Float16::ToFloat(0x8000)));
}

TEST(Float16Test, WrapperConvertsBothWays) {
  Float16 h(1.5f);
  EXPECT_EQ(h.bits, 0x3e00);
  EXPECT_EQ(static_cast<float>(h), 1.5f);
  EXPECT_EQ(Float16().bits, 0);
}

// Every half value converts to float exactly and back to the same bits (NaN stays NaN).
TEST(Float16Test, ExhaustiveRoundTrip) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f = Float16::ToFloat(h);
    if (IsHalfNan(h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << bits;
      ASSERT_TRUE(IsHalfNan(Float16::FromFloat(f))) << std::hex << bits;
      continue;
    }
    // Reference value from the IEEE definition.
    const int exponent = (bits >> 10) & 0x1f;
    const int mantissa = bits & 0x3ff;
    float magnitude = std::numeric_limits<float>::infinity();
    if (exponent == 0) {
      magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    } else if (exponent != 0x1f) {
      magnitude = std::ldexp(static_cast<float>(1024 + mantissa), exponent - 25);
    }
    ASSERT_EQ(f, (bits & 0x8000) ? -magnitude : magnitude) << std::hex << bits;
    ASSERT_EQ(Float16::FromFloat(f), h) << std::hex << bits;
  }
}

// The compiler's IEEE half type: GCC 12 has _Float16 in C++ on x86-64 but not on aarch64, where
// __fp16 (IEEE format, converted by the FCVT instruction) is the equivalent.
#if defined(__aarch64__)
using CompilerHalf = __fp16;
#else
using CompilerHalf = _Float16;
#endif

// Compares against the compiler's correctly rounded float -> half conversion on a spread of
// float bit patterns (a prime stride touches every exponent and many mantissas).
TEST(Float16Test, MatchesCompilerConversion) {
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 1021) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(bits));
    const uint16_t ours = Float16::FromFloat(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(IsHalfNan(ours)) << std::hex << bits;
      continue;
    }
    const uint16_t reference = std::bit_cast<uint16_t>(static_cast<CompilerHalf>(f));
    ASSERT_EQ(ours, reference) << "float bits 0x" << std::hex << bits;
  }
}

TEST(BFloat16Test, KnownBitPatterns) {
  EXPECT_EQ(BFloat16::FromFloat(1.0f), 0x3f80);
  EXPECT_EQ(BFloat16::FromFloat(-2.0f), 0xc000);
  EXPECT_EQ(BFloat16::FromFloat(0.0f), 0x0000);
  EXPECT_EQ(BFloat16::FromFloat(-0.0f), 0x8000);
  EXPECT_EQ(BFloat16::FromFloat(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(BFloat16::FromFloat(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(BFloat16::ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(BFloat16::ToFloat(0x7f80), std::numeric_limits<float>::infinity());
  BFloat16 b(3.0f);
  EXPECT_EQ(b.bits, 0x4040);
  EXPECT_EQ(static_cast<float>(b), 3.0f);
}

TEST(BFloat16Test, RoundsToNearestEven) {
  // 1 + 2^-8 is halfway between 0x3f80 and 0x3f81.
  EXPECT_EQ(BFloat16::FromFloat(1.0f + Pow2(-8)), 0x3f80);
  EXPECT_EQ(BFloat16::FromFloat(1.0f + 3 * Pow2(-8)), 0x3f82);
  EXPECT_EQ(BFloat16::FromFloat(1.0f + Pow2(-8) + Pow2(-20)), 0x3f81);
  EXPECT_EQ(BFloat16::FromFloat(1.0f + Pow2(-8) - Pow2(-20)), 0x3f80);
  EXPECT_EQ(BFloat16::FromFloat(-(1.0f + 3 * Pow2(-8))), 0xbf82);
  // Rounding up can carry into the exponent, and past the largest finite value into infinity.
  EXPECT_EQ(BFloat16::FromFloat(std::bit_cast<float>(0x3fffffffu)), 0x4000);
  EXPECT_EQ(BFloat16::FromFloat(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(BFloat16::FromFloat(std::bit_cast<float>(0x7f7f7fffu)), 0x7f7f);
}

TEST(BFloat16Test, NanStaysNan) {
  EXPECT_TRUE(IsBf16Nan(BFloat16::FromFloat(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(IsBf16Nan(BFloat16::FromFloat(std::bit_cast<float>(0x7f800001u))));
  EXPECT_TRUE(IsBf16Nan(BFloat16::FromFloat(std::bit_cast<float>(0xffffffffu))));
  EXPECT_EQ(BFloat16::FromFloat(std::bit_cast<float>(0xff800001u)) & 0x8000, 0x8000);
  EXPECT_TRUE(std::isnan(BFloat16::ToFloat(0x7fc0)));
  EXPECT_TRUE(std::isnan(BFloat16::ToFloat(0x7f81)));
}

TEST(BFloat16Test, ExhaustiveRoundTrip) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto b = static_cast<uint16_t>(bits);
    const float f = BFloat16::ToFloat(b);
    ASSERT_EQ(std::bit_cast<uint32_t>(f), bits << 16);
    if (IsBf16Nan(b)) {
      ASSERT_TRUE(IsBf16Nan(BFloat16::FromFloat(f))) << std::hex << bits;
    } else {
      ASSERT_EQ(BFloat16::FromFloat(f), b) << std::hex << bits;
    }
  }
}

// Reference: pick the nearer of the two neighbouring bfloat16 values, ties to the even one.
uint16_t ReferenceBFloat16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const auto lo = static_cast<uint16_t>(bits >> 16);
  const auto hi = static_cast<uint16_t>(lo + 1);  // next value away from zero
  const double x = std::fabs(static_cast<double>(f));
  const double lo_value = std::fabs(static_cast<double>(BFloat16::ToFloat(lo)));
  // Past the largest finite value the next step is 2^128, which IEEE rounding treats as if the
  // exponent range were unbounded before overflowing to infinity.
  const double hi_value = (hi & 0x7fffu) == 0x7f80u
                              ? std::ldexp(1.0, 128)
                              : std::fabs(static_cast<double>(BFloat16::ToFloat(hi)));
  if (x - lo_value < hi_value - x) return lo;
  if (x - lo_value > hi_value - x) return hi;
  return (lo & 1u) == 0 ? lo : hi;
}

TEST(BFloat16Test, MatchesReferenceRounding) {
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 1021) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (std::isnan(f) || std::isinf(f)) continue;
    ASSERT_EQ(BFloat16::FromFloat(f), ReferenceBFloat16(f)) << "float bits 0x" << std::hex << bits;
  }
}

}  // namespace
}  // namespace onnx_light::runtime

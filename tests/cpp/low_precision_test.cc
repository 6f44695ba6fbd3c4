// Low-precision float conversions (core/low_precision.h) against a brute-force reference written
// here from the format definitions: decode every code by formula; encode by searching all codes
// for the nearest value (ties to the even code), then apply the format's NaN/overflow rules.
// tests/python/test_low_precision.py checks the same functions bit for bit against onnx.reference
// / ml_dtypes.

#include "core/low_precision.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace onnx_light::runtime {
namespace {

enum class Special { kFn, kIeee, kFnuz, kFiniteOnly };

struct FormatSpec {
  DataType type;
  int exp_bits;
  int mant_bits;
  int bias;
  Special special;

  int bits() const { return 1 + exp_bits + mant_bits; }
  uint32_t sign() const { return 1u << (exp_bits + mant_bits); }
  // The value the code's bits give by the normal/subnormal formula, ignoring special codes (the
  // exponent may run past its field, for the "next value above max").
  double Formula(uint32_t magnitude) const {
    const int e = static_cast<int>(magnitude >> mant_bits);
    const int m = static_cast<int>(magnitude & ((1u << mant_bits) - 1));
    return e == 0 ? std::ldexp(m, 1 - bias - mant_bits) : std::ldexp(m + (1 << mant_bits), e - bias - mant_bits);
  }
  uint32_t max_code() const {
    switch (special) {
      case Special::kFn: return sign() - 2;
      case Special::kIeee: return (((1u << exp_bits) - 1) << mant_bits) - 1;
      default: return sign() - 1;
    }
  }
  bool IsNaNCode(uint32_t code) const {
    const uint32_t mag = code & (sign() - 1);
    switch (special) {
      case Special::kFn: return mag == sign() - 1;
      case Special::kIeee: return (mag >> mant_bits) == (1u << exp_bits) - 1 && (mag & ((1u << mant_bits) - 1)) != 0;
      case Special::kFnuz: return code == sign();
      case Special::kFiniteOnly: return false;
    }
    return false;
  }
  bool IsInfCode(uint32_t code) const {
    return special == Special::kIeee && (code & (sign() - 1)) == ((1u << exp_bits) - 1) << mant_bits;
  }
  uint8_t NaN(bool negative) const {
    const uint32_t s = negative ? sign() : 0;
    switch (special) {
      case Special::kFn: return static_cast<uint8_t>((sign() - 1) | s);
      case Special::kIeee: return static_cast<uint8_t>((((1u << exp_bits) - 1) << mant_bits) | (1u << (mant_bits - 1)) | s);
      case Special::kFnuz: return static_cast<uint8_t>(sign());
      case Special::kFiniteOnly: return static_cast<uint8_t>(s ^ sign());
    }
    return 0;
  }
  uint8_t Overflow(bool negative, bool saturate) const {
    const uint32_t s = negative ? sign() : 0;
    if (saturate || special == Special::kFiniteOnly) return static_cast<uint8_t>(max_code() | s);
    if (special == Special::kIeee) return static_cast<uint8_t>((((1u << exp_bits) - 1) << mant_bits) | s);
    return NaN(negative);
  }

  // The expected code of `x`, by search.
  uint8_t Expected(double x, bool saturate) const {
    const bool negative = std::signbit(x);
    if (std::isnan(x)) return NaN(negative);
    const double a = std::fabs(x);
    const uint32_t virtual_code = max_code() + 1;  // the value after max, if the format went on
    if (a > Formula(virtual_code)) return Overflow(negative, saturate);
    uint32_t best = 0;
    double best_error = std::numeric_limits<double>::infinity();
    for (uint32_t c = 0; c <= virtual_code; ++c) {
      const double error = std::fabs(Formula(c) - a);
      if (error < best_error || (error == best_error && (c & 1) == 0)) {
        best = c;
        best_error = error;
      }
    }
    if (best == virtual_code) return Overflow(negative, saturate);
    if (best == 0 && (special == Special::kFnuz || !negative)) return 0;
    return static_cast<uint8_t>(best | (negative ? sign() : 0));
  }
};

const FormatSpec kFormats[] = {
    {DataType::kFloat8E4M3FN, 4, 3, 7, Special::kFn},
    {DataType::kFloat8E4M3FNUZ, 4, 3, 8, Special::kFnuz},
    {DataType::kFloat8E5M2, 5, 2, 15, Special::kIeee},
    {DataType::kFloat8E5M2FNUZ, 5, 2, 16, Special::kFnuz},
    {DataType::kFloat4E2M1, 2, 1, 1, Special::kFiniteOnly},
    {DataType::kFloat6E2M3, 2, 3, 1, Special::kFiniteOnly},
    {DataType::kFloat6E3M2, 3, 2, 3, Special::kFiniteOnly},
};

bool SameFloat(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

TEST(LowPrecision, DecodesEveryCodeExactly) {
  for (const FormatSpec& f : kFormats) {
    SCOPED_TRACE(DataTypeName(f.type));
    for (uint32_t code = 0; code < (1u << f.bits()); ++code) {
      const bool negative = (code & f.sign()) != 0;
      float expected;
      if (f.IsNaNCode(code)) {
        expected = std::numeric_limits<float>::quiet_NaN();
      } else if (f.IsInfCode(code)) {
        expected = negative ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
      } else {
        const double v = f.Formula(code & (f.sign() - 1));
        expected = static_cast<float>(negative ? -v : v);
      }
      EXPECT_TRUE(SameFloat(LowPrecisionToFloat(f.type, static_cast<uint8_t>(code)), expected))
          << "code " << code << ": " << LowPrecisionToFloat(f.type, static_cast<uint8_t>(code)) << " vs " << expected;
    }
  }
  // Spot values from the format definitions.
  EXPECT_EQ(LowPrecisionToFloat(DataType::kFloat8E4M3FN, 0x7E), 448.0f);
  EXPECT_EQ(LowPrecisionToFloat(DataType::kFloat8E4M3FN, 0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(LowPrecisionToFloat(DataType::kFloat8E4M3FNUZ, 0x7F), 240.0f);
  EXPECT_EQ(LowPrecisionToFloat(DataType::kFloat8E5M2, 0x7B), 57344.0f);
  EXPECT_EQ(LowPrecisionToFloat(DataType::kFloat8E5M2FNUZ, 0x01), std::ldexp(1.0f, -17));
  EXPECT_EQ(LowPrecisionToFloat(DataType::kFloat4E2M1, 0x7), 6.0f);
  EXPECT_EQ(LowPrecisionToFloat(DataType::kFloat4E2M1, 0xF), -6.0f);
  EXPECT_EQ(LowPrecisionToFloat(DataType::kFloat6E2M3, 0x1F), 7.5f);
  EXPECT_EQ(LowPrecisionToFloat(DataType::kFloat6E3M2, 0x1F), 28.0f);
  EXPECT_EQ(LowPrecisionToFloat(DataType::kFloat8E8M0, 127), 1.0f);
  EXPECT_EQ(LowPrecisionToFloat(DataType::kFloat8E8M0, 0), std::ldexp(1.0f, -127));
  EXPECT_EQ(LowPrecisionToFloat(DataType::kFloat8E8M0, 254), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(LowPrecisionToFloat(DataType::kFloat8E8M0, 255)));
}

// Inputs that exercise every rounding decision: each value, each midpoint between neighbours
// and the floats just either side of it, plus random magnitudes and the specials.
std::vector<float> InterestingFloats(const FormatSpec& f) {
  std::vector<float> xs;
  const uint32_t top = f.max_code() + 1;
  for (uint32_t c = 0; c <= top; ++c) {
    const double v = f.Formula(c);
    const double mid = c < top ? (v + f.Formula(c + 1)) / 2 : v * 1.5;
    for (double base : {v, mid}) {
      const auto b = static_cast<float>(base);
      for (float x : {b, std::nextafter(b, 0.0f), std::nextafter(b, 1e30f)}) {
        xs.push_back(x);
        xs.push_back(-x);
      }
    }
  }
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-40, 40);
  for (int i = 0; i < 20000; ++i) xs.push_back(std::ldexp(mantissa(gen), exponent(gen)) * (i % 2 ? 1.0f : -1.0f));
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 1e-30f, -1e30f}) {
    xs.push_back(x);
  }
  return xs;
}

TEST(LowPrecision, EncodesFloatsToTheNearestEvenCode) {
  for (const FormatSpec& f : kFormats) {
    SCOPED_TRACE(DataTypeName(f.type));
    const std::vector<float> xs = InterestingFloats(f);
    for (bool saturate : {true, false}) {
      std::vector<uint8_t> block(xs.size());
      EncodeLowPrecision(f.type, xs.data(), static_cast<int64_t>(xs.size()), block.data(), saturate);
      for (size_t i = 0; i < xs.size(); ++i) {
        const uint8_t expected = f.Expected(xs[i], saturate);
        ASSERT_EQ(block[i], expected) << "x = " << xs[i] << " saturate " << saturate;
        ASSERT_EQ(FloatToLowPrecision(f.type, xs[i], saturate), expected) << "x = " << xs[i];
      }
    }
  }
}

TEST(LowPrecision, EncodesDoublesWithOneRounding) {
  // A double just above a midpoint rounds up, although the nearest float32 is the midpoint
  // itself (which would round to even): converting through float32 would round twice.
  const double mid = (448.0 + 416.0) / 2;  // e4m3fn between 0x7D (416) and 0x7E (448), a tie
  EXPECT_EQ(DoubleToLowPrecision(DataType::kFloat8E4M3FN, mid, true), 0x7E);  // even mantissa
  EXPECT_EQ(DoubleToLowPrecision(DataType::kFloat8E4M3FN, mid - 1e-9, true), 0x7D);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat8E4M3FN, static_cast<float>(mid - 1e-9), true), 0x7E);
  for (const FormatSpec& f : kFormats) {
    SCOPED_TRACE(DataTypeName(f.type));
    std::vector<double> xs;
    for (uint32_t c = 0; c + 1 <= f.max_code(); ++c) {
      const double mid_c = (f.Formula(c) + f.Formula(c + 1)) / 2;
      for (double x : {mid_c, mid_c * (1 + 1e-12), mid_c * (1 - 1e-12), f.Formula(c)}) {
        xs.push_back(x);
        xs.push_back(-x);
      }
    }
    xs.push_back(1e300);
    xs.push_back(-std::numeric_limits<double>::infinity());
    xs.push_back(std::numeric_limits<double>::denorm_min());
    for (bool saturate : {true, false}) {
      std::vector<uint8_t> block(xs.size());
      EncodeLowPrecision(f.type, xs.data(), static_cast<int64_t>(xs.size()), block.data(), saturate);
      for (size_t i = 0; i < xs.size(); ++i) {
        ASSERT_EQ(block[i], f.Expected(xs[i], saturate)) << "x = " << xs[i] << " saturate " << saturate;
      }
    }
  }
}

TEST(LowPrecision, SaturationAndSpecialsFollowTheCastTables) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Cast-19/24 tables: saturate maps Inf and overflow to +-max; without it E4M3FN gives NaN,
  // E5M2 Inf, the fnuz types their one NaN.
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat8E4M3FN, inf, true), 0x7E);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat8E4M3FN, -inf, true), 0xFE);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat8E4M3FN, 1e6f, false), 0x7F);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat8E4M3FN, -inf, false), 0xFF);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat8E5M2, inf, false), 0x7C);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat8E5M2, -1e6f, false), 0xFC);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat8E5M2, 1e6f, true), 0x7B);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat8E4M3FNUZ, inf, true), 0x7F);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat8E4M3FNUZ, -inf, false), 0x80);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat8E5M2FNUZ, -1e6f, true), 0xFF);
  // NaN keeps its sign where the format has signed NaNs.
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat8E4M3FN, -nan, true), 0xFF);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat8E5M2, nan, true), 0x7E);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat8E5M2FNUZ, -nan, true), 0x80);
  // No negative zero in fnuz: -0 and tiny negatives are +0.
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat8E4M3FNUZ, -0.0f, true), 0x00);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat8E5M2FNUZ, -1e-9f, true), 0x00);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat8E4M3FN, -0.0f, true), 0x80);
  // The 4- and 6-bit formats always saturate; NaN becomes a zero with the inverted sign bit.
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat4E2M1, inf, false), 0x7);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat4E2M1, -7.0f, false), 0xF);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat4E2M1, nan, true), 0x8);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat6E3M2, -nan, true), 0x00);
  EXPECT_EQ(FloatToLowPrecision(DataType::kFloat6E2M3, 100.0f, false), 0x1F);
}

TEST(LowPrecision, E8M0RoundingModes) {
  using R = E8M0Rounding;
  const float inf = std::numeric_limits<float>::infinity();
  // 1.5 * 2^k: up -> 2^(k+1), down -> 2^k, nearest (half up) -> 2^(k+1); exact powers stay.
  EXPECT_EQ(FloatToE8M0(3.0f, true, R::kUp), 128 + 1);
  EXPECT_EQ(FloatToE8M0(3.0f, true, R::kDown), 128);
  EXPECT_EQ(FloatToE8M0(3.0f, true, R::kNearest), 129);
  EXPECT_EQ(FloatToE8M0(3.1f, true, R::kNearest), 129);
  EXPECT_EQ(FloatToE8M0(2.9f, true, R::kNearest), 128);
  EXPECT_EQ(FloatToE8M0(2.5f, true, R::kNearest), 128);
  EXPECT_EQ(FloatToE8M0(2.5f, true, R::kUp), 129);
  EXPECT_EQ(FloatToE8M0(4.0f, true, R::kUp), 129);
  EXPECT_EQ(FloatToE8M0(0.125f, false, R::kDown), 124);
  // The sign is ignored (the spec leaves negative inputs unspecified; this is the reference's rule).
  EXPECT_EQ(FloatToE8M0(-4.0f, true, R::kUp), 129);
  // Largest exponent: saturate stays at 2^127, otherwise a round-up overflows to NaN.
  const float big = std::ldexp(1.5f, 127);
  EXPECT_EQ(FloatToE8M0(big, true, R::kUp), 254);
  EXPECT_EQ(FloatToE8M0(big, false, R::kUp), 255);
  EXPECT_EQ(FloatToE8M0(big, false, R::kDown), 254);
  // Inf: E8M0_MAX when saturating, NaN otherwise; NaN stays NaN; zero: 2^-127 or NaN.
  EXPECT_EQ(FloatToE8M0(inf, true, R::kUp), 254);
  EXPECT_EQ(FloatToE8M0(-inf, true, R::kNearest), 254);
  EXPECT_EQ(FloatToE8M0(inf, false, R::kNearest), 255);
  EXPECT_EQ(FloatToE8M0(std::numeric_limits<float>::quiet_NaN(), true, R::kUp), 255);
  EXPECT_EQ(FloatToE8M0(0.0f, true, R::kUp), 0);
  EXPECT_EQ(FloatToE8M0(0.0f, false, R::kNearest), 255);
  std::vector<float> xs = {1.0f, 1.1f, 0.124f, 8.0f};
  std::vector<uint8_t> codes(xs.size());
  EncodeE8M0(xs.data(), 4, codes.data(), true, R::kUp);
  EXPECT_EQ(codes, (std::vector<uint8_t>{127, 128, 124, 130}));
}

}  // namespace
}  // namespace onnx_light::runtime

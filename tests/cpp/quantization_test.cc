// The quantization family's loops against plain formulas: the integer GEMM (packing, tiles of
// every row count, int8 panels, odd depths, per-column zero points) and the float32 <-> 8-bit
// rows (ties, NaN, infinities, every length around the vector width), and the requantization.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/quantization/int_gemm.h"
#include "kernels/quantization/linear_rows.h"
#include "kernels/quantization/requantize.h"

namespace onnx_light::runtime {
namespace {

template <typename A, typename B>
void CheckGemm(int64_t m, int64_t k, int64_t n, int32_t a_zp, const std::vector<int32_t>& b_zp, std::mt19937& rng) {
  std::uniform_int_distribution<int> a_dist(std::numeric_limits<A>::min(), std::numeric_limits<A>::max());
  std::uniform_int_distribution<int> b_dist(std::numeric_limits<B>::min(), std::numeric_limits<B>::max());
  std::vector<A> a(static_cast<size_t>(m * k));
  std::vector<B> b(static_cast<size_t>(k * n));
  for (auto& v : a) v = static_cast<A>(a_dist(rng));
  for (auto& v : b) v = static_cast<B>(b_dist(rng));
  const bool per_column = b_zp.size() > 1;
  PackedIntB packed;
  PackInt8B(b.data(), std::is_signed_v<B>, k, n, n, b_zp.data(), per_column, &packed);
  std::vector<int16_t> wide(static_cast<size_t>(m * PaddedDepth(k)));
  WidenInt8A(a.data(), std::is_signed_v<A>, m, k, k, &a_zp, false, wide.data());
  std::vector<int32_t> c(static_cast<size_t>(m * n), -1);
  IntGemm(m, wide.data(), packed, c.data(), n, nullptr);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        sum += (int64_t{a[i * k + p]} - a_zp) * (int64_t{b[p * n + j]} - b_zp[per_column ? j : 0]);
      }
      ASSERT_EQ(c[i * n + j], sum) << "m " << m << " k " << k << " n " << n << " at " << i << "," << j;
    }
  }
}

TEST(QuantizationIntGemm, MatchesTheFormulaForEveryTileShape) {
  std::mt19937 rng(7);
  for (int64_t m : {1, 2, 3, 4, 5, 9}) {
    for (int64_t k : {1, 2, 3, 17, 64}) {
      for (int64_t n : {1, 15, 16, 17, 40}) {
        CheckGemm<uint8_t, int8_t>(m, k, n, 131, {0}, rng);  // int8 panels (B fits int8)
        CheckGemm<uint8_t, int8_t>(m, k, n, 0, {-100}, rng);
        CheckGemm<int8_t, uint8_t>(m, k, n, -128, {255}, rng);
        std::vector<int32_t> per_column(static_cast<size_t>(n));
        for (int64_t j = 0; j < n; ++j) per_column[j] = static_cast<int32_t>(j * 7 % 256);
        CheckGemm<uint8_t, uint8_t>(m, k, n, 255, per_column, rng);
      }
    }
  }
}

TEST(QuantizationIntGemm, KeepsInt8PanelsOnlyWhenEveryValueFits) {
  const std::vector<int8_t> b = {-128, 127, 0, 5};
  PackedIntB packed;
  const int32_t zero = 0, one = 1;
  PackInt8B(b.data(), true, 2, 2, 2, &zero, false, &packed);
  EXPECT_FALSE(packed.narrow.empty());
  PackInt8B(b.data(), true, 2, 2, 2, &one, false, &packed);  // -128 - 1 needs int16
  EXPECT_TRUE(packed.narrow.empty());
}

float QuantizeReference(float x, float scale, float zp, float lo, float hi) {
  const float q = std::nearbyint(x / scale) + zp;
  if (std::isnan(q)) return lo;
  return std::fmin(std::fmax(q, lo), hi);
}

TEST(QuantizationRows, QuantizeMatchesTheFormulaAtEveryLength) {
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t n = 0; n < 80; ++n) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i - n / 2) * 0.5f;
    if (n > 5) {
      x[1] = std::numeric_limits<float>::quiet_NaN();
      x[2] = inf;
      x[3] = -inf;
      x[4] = 1e30f;
    }
    std::vector<float> scales(x.size()), zps(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      scales[i] = 0.25f + 0.125f * static_cast<float>(i % 5);
      zps[i] = static_cast<float>(i % 7);
    }
    std::vector<int8_t> s(x.size()), s_axis(x.size());
    std::vector<uint8_t> u(x.size());
    QuantizeRowF32(x.data(), n, 0.5f, -3.0f, true, s.data());
    QuantizeRowF32(x.data(), n, 0.5f, 200.0f, false, u.data());
    QuantizeRowF32PerElement(x.data(), n, scales.data(), zps.data(), true, s_axis.data());
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(s[i], QuantizeReference(x[i], 0.5f, -3.0f, -128.0f, 127.0f)) << i;
      EXPECT_EQ(u[i], QuantizeReference(x[i], 0.5f, 200.0f, 0.0f, 255.0f)) << i;
      EXPECT_EQ(s_axis[i], QuantizeReference(x[i], scales[i], zps[i], -128.0f, 127.0f)) << i;
    }
  }
}

TEST(QuantizationRows, DequantizeAndRange) {
  std::vector<int8_t> q(37);
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<int8_t>(static_cast<int>(i) * 7 - 128);
  std::vector<float> y(q.size());
  DequantizeRowToF32(q.data(), true, static_cast<int64_t>(q.size()), 0.1f, 3.0f, y.data());
  for (size_t i = 0; i < q.size(); ++i) EXPECT_EQ(y[i], (static_cast<float>(q[i]) - 3.0f) * 0.1f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {nan, 2.0f, -5.0f, nan, 7.5f};
  float lo = 0, hi = 0;
  MinMaxF32(x.data(), static_cast<int64_t>(x.size()), &lo, &hi);
  EXPECT_EQ(lo, -5.0f);
  EXPECT_EQ(hi, 7.5f);
  const std::vector<float> all_nan = {nan, nan};
  MinMaxF32(all_nan.data(), 2, &lo, &hi);
  EXPECT_TRUE(std::isnan(lo) && std::isnan(hi));
}

// The per-tensor row multiplies by 1 / scale and goes back to the division only for blocks with
// a value near a tie: values on exact ties (k + 0.5) * scale and one float either side, random
// values, and scales whose reciprocal is inexact, subnormal or overflows must all give the
// division's result.
TEST(QuantizationRows, QuantizeByReciprocalEqualsTheDivisionNearTies) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-300.0f, 300.0f);
  for (const float scale : {0.1f, 1.0f / 3.0f, 0.0078431377f, 2.7e-3f, 17.0f, 1e-39f, 3e38f, 1e-30f}) {
    std::vector<float> x;
    for (int k = -260; k <= 260; ++k) {
      const float tie = (static_cast<float>(k) + 0.5f) * scale;
      x.insert(x.end(), {tie, std::nextafter(tie, -INFINITY), std::nextafter(tie, INFINITY)});
      for (int r = 0; r < 3; ++r) x.push_back(uniform(rng) * scale);
    }
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<int8_t> s(x.size());
    std::vector<uint8_t> u(x.size());
    QuantizeRowF32(x.data(), n, scale, 5.0f, true, s.data());
    QuantizeRowF32(x.data(), n, scale, 128.0f, false, u.data());
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(s[i], QuantizeReference(x[i], scale, 5.0f, -128.0f, 127.0f)) << scale << " " << x[i];
      ASSERT_EQ(u[i], QuantizeReference(x[i], scale, 128.0f, 0.0f, 255.0f)) << scale << " " << x[i];
    }
  }
}

// Long rows go through the blocked loop (64 lanes at a time) and then the tail: every position of
// the minimum and the maximum, with NaN in the blocks and the tail, must give the same range.
TEST(QuantizationRows, RangeOfLongRowsAtEveryPosition) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const int64_t n : {64, 200, 1000}) {
    for (int64_t at = 0; at < n; at += 7) {
      std::vector<float> x(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>((i * 37) % 101) - 50.0f;
      x[static_cast<size_t>((at + 1) % n)] = nan;
      x[static_cast<size_t>(n - 1 - (at % 3))] = nan;
      x[static_cast<size_t>(at)] = -1000.0f;
      x[static_cast<size_t>((at + n / 2) % n)] = 999.0f;
      float lo = 0, hi = 0;
      MinMaxF32(x.data(), n, &lo, &hi);
      EXPECT_EQ(lo, -1000.0f) << n << " " << at;
      EXPECT_EQ(hi, 999.0f) << n << " " << at;
    }
    const std::vector<float> all_nan(static_cast<size_t>(n), nan);
    float lo = 0, hi = 0;
    MinMaxF32(all_nan.data(), n, &lo, &hi);
    EXPECT_TRUE(std::isnan(lo) && std::isnan(hi)) << n;
  }
}

// What onnx.reference computes: the float64 product, plus the zero point, clipped (NaN to the
// lower bound, our definition), then rounded half to even.
int32_t RequantizeFormula(int32_t acc, double multiplier, double zero_point, bool is_signed, int32_t bias = 0) {
  const double lo = is_signed ? -128.0 : 0.0, hi = is_signed ? 127.0 : 255.0;
  const auto sum = static_cast<int32_t>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(bias));  // wraps
  const double v = static_cast<double>(sum) * multiplier + zero_point;
  if (std::isnan(v)) return static_cast<int32_t>(lo);
  return static_cast<int32_t>(std::nearbyint(std::clamp(v, lo, hi)));
}

TEST(QuantizationRequantize, MatchesTheFormulaAtEveryLengthAndEdge) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> dist(-40000, 40000);
  const double inf = std::numeric_limits<double>::infinity();
  // Ties: 0.5 * odd and even accumulators land on .5 exactly; then huge, NaN and infinite products.
  const std::vector<double> multipliers = {0.5, 0.25, 0.0037, -0.011, 1e-9, 3e9, inf, -inf,
                                           std::numeric_limits<double>::quiet_NaN()};
  for (const bool is_signed : {false, true}) {
    for (const double multiplier : multipliers) {
      for (int64_t n = 0; n <= 40; ++n) {
        std::vector<int32_t> acc(static_cast<size_t>(n));
        for (auto& v : acc) v = dist(rng);
        if (n > 2) acc[1] = std::numeric_limits<int32_t>::min(), acc[2] = std::numeric_limits<int32_t>::max();
        if (n > 3) acc[3] = 0;
        const double zero_point = is_signed ? -3.0 : 128.0;
        std::vector<double> per_column(static_cast<size_t>(n), multiplier);
        for (size_t i = 0; i < per_column.size(); i += 3) per_column[i] = 0.5;
        // One byte past the row: a store must not reach it.
        std::vector<int8_t> row(static_cast<size_t>(n) + 1, 77), columns(static_cast<size_t>(n) + 1, 77);
        const int32_t bias = n % 2 == 0 ? 0 : (n % 4 == 1 ? 1234567 : std::numeric_limits<int32_t>::max());
        RequantizeRow(acc.data(), n, multiplier, zero_point, is_signed, row.data(), bias);
        RequantizeColumns(acc.data(), n, per_column.data(), zero_point, is_signed, columns.data());
        for (int64_t i = 0; i < n; ++i) {
          const auto read = [&](const std::vector<int8_t>& y) {
            return is_signed ? int32_t{y[i]} : int32_t{static_cast<uint8_t>(y[i])};
          };
          ASSERT_EQ(read(row), RequantizeFormula(acc[i], multiplier, zero_point, is_signed, bias))
              << "n " << n << " at " << i << " acc " << acc[i] << " bias " << bias << " multiplier " << multiplier;
          ASSERT_EQ(read(columns), RequantizeFormula(acc[i], per_column[i], zero_point, is_signed))
              << "n " << n << " at " << i << " acc " << acc[i] << " multiplier " << per_column[i];
        }
        ASSERT_EQ(row[n], 77);
        ASSERT_EQ(columns[n], 77);
      }
    }
  }
}

}  // namespace
}  // namespace onnx_light::runtime

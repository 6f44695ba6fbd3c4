// The float16 conversion paths of half_tiles.h (scalar, F16C, AVX-512: each the CPU has) against
// the bit-exact fast_math conversions, the bfloat16 loops, the tile walk, and
// BroadcastPlan::ForEachRunIn, which splits a plan over threads.
#include "kernels/elementwise/half_tiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "kernels/elementwise/elementwise_loops.h"
#include "kernels/elementwise/fast_math.h"

namespace onnx_light::runtime {
namespace {

std::vector<HalfIsa> SupportedIsas() {
  std::vector<HalfIsa> isas = {HalfIsa::kScalar};
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) isas.push_back(HalfIsa::kF16c);
  if (__builtin_cpu_supports("avx512f")) isas.push_back(HalfIsa::kAvx512);
#endif
  return isas;
}

bool IsHalfNan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// Same bits, or both NaN with the same sign (F16C keeps payload bits the fallback drops).
void ExpectSameHalf(uint16_t actual, uint16_t expected, float from) {
  if (IsHalfNan(expected)) {
    ASSERT_TRUE(IsHalfNan(actual)) << from;
    ASSERT_EQ(actual & 0x8000u, expected & 0x8000u) << from;
  } else {
    ASSERT_EQ(actual, expected) << std::hexfloat << from;
  }
}

TEST(HalfTiles, ActiveIsaIsSupported) {
  const std::vector<HalfIsa> isas = SupportedIsas();
  EXPECT_NE(std::find(isas.begin(), isas.end(), ActiveHalfIsa()), isas.end());
  if (!UseAvx512()) {
    EXPECT_NE(ActiveHalfIsa(), HalfIsa::kAvx512);
  }
}

TEST(HalfTiles, EveryFloat16ConvertsLikeFastMath) {
  std::vector<Float16> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h].bits = static_cast<uint16_t>(h);
  for (HalfIsa isa : SupportedIsas()) {
    SCOPED_TRACE(HalfIsaName(isa));
    std::vector<float> out(all.size());
    ToFloatWith(isa, all.data(), out.data(), static_cast<int64_t>(all.size()));
    for (uint32_t h = 0; h < 65536; ++h) {
      const float expected = fast_math::HalfToFloat(static_cast<uint16_t>(h));
      if (std::isnan(expected)) {
        ASSERT_TRUE(std::isnan(out[h])) << h;
        ASSERT_EQ(std::signbit(out[h]), std::signbit(expected)) << h;
      } else {
        ASSERT_EQ(std::bit_cast<uint32_t>(out[h]), std::bit_cast<uint32_t>(expected)) << h;
      }
    }
    // Back again: every half value (NaN aside) survives the round trip.
    std::vector<Float16> back(all.size());
    FromFloatWith(isa, out.data(), back.data(), static_cast<int64_t>(all.size()));
    for (uint32_t h = 0; h < 65536; ++h) ExpectSameHalf(back[h].bits, all[h].bits, out[h]);
  }
}

TEST(HalfTiles, RoundingPointsAndTailsMatchFastMath) {
  // Floats whose low bits sit on and around float16's rounding points, over all exponents, then
  // every length up to 40 so that each vector path runs its tail.
  std::vector<float> values;
  for (uint32_t high = 0; high < (1u << 12); ++high) {
    for (uint32_t low : {0x0000u, 0x0fffu, 0x1000u, 0x1001u, 0x2fffu, 0x3000u, 0x7fffu, 0x8000u, 0xfffffu}) {
      values.push_back(std::bit_cast<float>((high << 20) | low));
    }
  }
  for (HalfIsa isa : SupportedIsas()) {
    SCOPED_TRACE(HalfIsaName(isa));
    std::vector<Float16> out(values.size());
    FromFloatWith(isa, values.data(), out.data(), static_cast<int64_t>(values.size()));
    for (size_t i = 0; i < values.size(); ++i) ExpectSameHalf(out[i].bits, fast_math::FloatToHalf(values[i]), values[i]);
    for (int64_t n = 0; n <= 40; ++n) {
      std::vector<Float16> dst(41, Float16{});
      for (auto& d : dst) d.bits = 0x1234;  // a sentinel past the end
      FromFloatWith(isa, values.data() + 1000, dst.data(), n);
      for (int64_t i = 0; i < n; ++i) ExpectSameHalf(dst[i].bits, fast_math::FloatToHalf(values[1000 + i]), values[1000 + i]);
      EXPECT_EQ(dst[n].bits, 0x1234) << "wrote past " << n;
      std::vector<float> f(41, 7.0f);
      ToFloatWith(isa, dst.data(), f.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        if (!IsHalfNan(dst[i].bits)) {
          EXPECT_EQ(f[i], fast_math::HalfToFloat(dst[i].bits));
        }
      }
      EXPECT_EQ(f[n], 7.0f) << "wrote past " << n;
    }
  }
}

TEST(HalfTiles, BFloat16MatchesFastMath) {
  std::vector<BFloat16> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h].bits = static_cast<uint16_t>(h);
  std::vector<float> out(all.size());
  ToFloat(all.data(), out.data(), static_cast<int64_t>(all.size()));
  for (uint32_t h = 0; h < 65536; ++h) {
    ASSERT_EQ(std::bit_cast<uint32_t>(out[h]), std::bit_cast<uint32_t>(fast_math::BFloat16ToFloat(static_cast<uint16_t>(h))));
  }
  std::vector<float> values;
  for (uint32_t high = 0; high < (1u << 12); ++high) {
    for (uint32_t low : {0x00000u, 0x07fffu, 0x08000u, 0x08001u, 0x18000u, 0xfffffu}) {
      values.push_back(std::bit_cast<float>((high << 20) | low));
    }
  }
  std::vector<BFloat16> back(values.size());
  FromFloat(values.data(), back.data(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(back[i].bits, fast_math::FloatToBFloat16(values[i])) << i;
}

TEST(HalfTiles, TileWalkCoversEveryElementInPlace) {
  for (int64_t n : {int64_t{0}, int64_t{1}, kHalfTile - 1, kHalfTile, kHalfTile + 1, 3 * kHalfTile + 17}) {
    std::vector<Float16> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[i] = Float16(static_cast<float>(i % 1000) - 500.0f);
    std::vector<Float16> expected = x;
    for (auto& e : expected) e = Float16(static_cast<float>(e) * 2.0f + 1.0f);
    int64_t seen = 0;
    ForEachHalfTile(x.data(), x.data(), n, [&](float* buf, int64_t m) {
      EXPECT_LE(m, kHalfTile);
      for (int64_t i = 0; i < m; ++i) buf[i] = buf[i] * 2.0f + 1.0f;
      seen += m;
    });
    EXPECT_EQ(seen, n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(x[i].bits, expected[i].bits) << i;
  }
}

Tensor View(std::vector<float>& data, Shape shape) {
  return Tensor(DataType::kFloat, std::move(shape), nullptr, data.data());
}

// (output, offsets...) for every element ForEachRunIn visits.
std::vector<std::vector<int64_t>> VisitRange(const BroadcastPlan& plan, int64_t begin, int64_t end) {
  std::vector<std::vector<int64_t>> out;
  plan.ForEachRunIn(begin, end, [&](int64_t o, const int64_t* off, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> row{o + i};
      for (int k = 0; k < plan.num_inputs(); ++k) row.push_back(off[k] + i * plan.inner_stride(k));
      out.push_back(row);
    }
  });
  return out;
}

TEST(BroadcastPlan, ForEachRunInMatchesTheFullWalk) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3, 4}, {3, 1}}, {{2, 3, 4}, {4}}, {{2, 3, 5}, {2, 3, 5}}, {{2, 4, 3, 3}, {4, 1, 1}},
      {{3, 1, 5}, {1, 4, 1}}, {{7}, {}}, {{}, {}}};
  for (const auto& [sa, sb] : cases) {
    std::vector<float> a(static_cast<size_t>(ShapeSize(sa))), b(static_cast<size_t>(ShapeSize(sb)));
    const Tensor ta = View(a, sa);
    const Tensor tb = View(b, sb);
    const Tensor* in[] = {&ta, &tb};
    RuntimeContext rt(KernelContext(DefaultOpset(23)));
    const BroadcastPlan plan = BroadcastPlan::Make(rt, in);
    const auto full = VisitRange(plan, 0, plan.output_size());
    std::vector<std::vector<int64_t>> walked;
    plan.ForEachRun([&](int64_t o, const int64_t* off, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        std::vector<int64_t> row{o + i};
        for (int k = 0; k < plan.num_inputs(); ++k) row.push_back(off[k] + i * plan.inner_stride(k));
        walked.push_back(row);
      }
    });
    ASSERT_EQ(full, walked);
    for (int64_t begin = 0; begin <= plan.output_size(); ++begin) {
      for (int64_t end = begin; end <= plan.output_size(); ++end) {
        const auto part = VisitRange(plan, begin, end);
        ASSERT_EQ(part, std::vector<std::vector<int64_t>>(full.begin() + begin, full.begin() + end))
            << ShapeToString(sa) << " with " << ShapeToString(sb) << " [" << begin << ", " << end << ")";
      }
    }
  }
}

}  // namespace
}  // namespace onnx_light::runtime

// The depthwise / grouped direct convolution (kernels/nn/conv_grouped) against a plain loop in
// double, on every instruction-set build this CPU can run: strides, dilations, asymmetric pads,
// channel multipliers, several channels per group, 1-D, narrow and wide rows, the residual and an
// activation in the epilogue, and infinite weights meeting the padding.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/nn/conv_grouped.h"
#include "kernels/nn/conv_grouped_shifted.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

struct Case {
  int64_t cg, mg, h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
};

WindowGeometry Geometry(const Case& k) {
  WindowGeometry g;
  g.input = {k.h, k.w};
  g.kernel = {k.kh, k.kw};
  g.stride = {k.sh, k.sw};
  g.dilation = {k.dh, k.dw};
  g.pad_begin = {k.pt, k.pl};
  g.pad_end = {k.pb, k.pr};
  g.output = {(k.h + k.pt + k.pb - ((k.kh - 1) * k.dh + 1)) / k.sh + 1,
              (k.w + k.pl + k.pr - ((k.kw - 1) * k.dw + 1)) / k.sw + 1};
  return g;
}

// One group: y[m] = bias[m] + sum over c, kh, kw of w[m, c, kh, kw] * x[c, ...] (+ z[m]).
std::vector<double> Reference(const Case& k, const WindowGeometry& g, const std::vector<float>& x,
                              const std::vector<float>& w, const std::vector<float>& bias, const float* z) {
  const int64_t oh_n = g.output[0];
  const int64_t ow_n = g.output[1];
  std::vector<double> y(static_cast<size_t>(k.mg * oh_n * ow_n));
  for (int64_t m = 0; m < k.mg; ++m) {
    for (int64_t oh = 0; oh < oh_n; ++oh) {
      for (int64_t ow = 0; ow < ow_n; ++ow) {
        double acc = bias[m];
        for (int64_t c = 0; c < k.cg; ++c) {
          for (int64_t i = 0; i < k.kh; ++i) {
            for (int64_t j = 0; j < k.kw; ++j) {
              const int64_t ih = oh * k.sh + i * k.dh - k.pt;
              const int64_t iw = ow * k.sw + j * k.dw - k.pl;
              if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
              acc += static_cast<double>(x[(c * k.h + ih) * k.w + iw]) * w[((m * k.cg + c) * k.kh + i) * k.kw + j];
            }
          }
        }
        const size_t at = static_cast<size_t>((m * oh_n + oh) * ow_n + ow);
        y[at] = acc + (z != nullptr ? z[at] : 0.0);
      }
    }
  }
  return y;
}

std::vector<SimdLevel> Levels() {
  std::vector<SimdLevel> levels;
  for (SimdLevel l : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (SimdLevelSupported(l)) levels.push_back(l);
  }
  return levels;
}

class GroupedConvTest : public ::testing::TestWithParam<Case> {};

TEST_P(GroupedConvTest, MatchesPlainLoopOnEveryLevel) {
  const Case k = GetParam();
  const WindowGeometry g = Geometry(k);
  ASSERT_GT(g.output[0], 0);
  ASSERT_GT(g.output[1], 0);
  const std::vector<float> x = testing::RandomFloats(static_cast<size_t>(k.cg * k.h * k.w), 1);
  const std::vector<float> w = testing::RandomFloats(static_cast<size_t>(k.mg * k.cg * k.kh * k.kw), 2);
  const std::vector<float> bias = testing::RandomFloats(static_cast<size_t>(k.mg), 3);
  const int64_t out = k.mg * g.output[0] * g.output[1];
  const std::vector<float> z = testing::RandomFloats(static_cast<size_t>(out), 4);
  for (const bool with_z : {false, true}) {
    const std::vector<double> expected = Reference(k, g, x, w, bias, with_z ? z.data() : nullptr);
    for (const SimdLevel level : Levels()) {
      const GroupedConvPlan plan = MakeGroupedConvPlan(g, k.cg, k.mg, level);
      std::vector<float> scratch(static_cast<size_t>(plan.scratch), NAN);
      std::vector<float> y(static_cast<size_t>(out), NAN);
      GroupedConvGroup(plan, x.data(), w.data(), bias.data(), ConvEpilogue{}, with_z ? z.data() : nullptr,
                       scratch.data(), y.data());
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_NEAR(y[i], expected[i], 1e-4) << "element " << i << " level " << SimdLevelName(plan.level)
                                             << (with_z ? " with Z" : "");
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GroupedConvTest,
    ::testing::Values(
        // cg, mg, h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr
        Case{1, 1, 14, 14, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},      // MobileNetV3's 5x5 depthwise
        Case{1, 1, 15, 17, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},      // stride 2, odd sizes
        Case{1, 1, 28, 28, 5, 5, 2, 2, 1, 1, 1, 2, 2, 1},      // asymmetric pads, stride 2
        Case{1, 2, 9, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},       // multiplier 2, 37 columns: vector tails
        Case{1, 3, 11, 70, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3},      // 7x7, several column strips
        Case{1, 1, 20, 150, 3, 3, 1, 2, 1, 1, 1, 1, 1, 1},     // wide rows, stride along W only
        Case{1, 1, 12, 13, 3, 3, 1, 1, 2, 3, 2, 3, 2, 3},      // dilations
        Case{1, 1, 10, 19, 3, 5, 2, 3, 2, 1, 0, 4, 3, 0},      // stride 3 along W with dilation 1
        Case{1, 1, 7, 7, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},        // narrow: AVX-512 drops to AVX2
        Case{1, 1, 3, 4, 3, 3, 1, 1, 1, 1, 3, 3, 3, 3},        // padding wider than the input
        Case{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},        // one element
        Case{4, 4, 13, 21, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      // four channels per group
        Case{3, 5, 9, 11, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0},       // three in, five out per group
        Case{8, 2, 6, 33, 3, 1, 1, 1, 1, 1, 1, 0, 1, 0},       // eight channels per group, 3x1
        Case{1, 1, 1, 40, 1, 5, 1, 2, 1, 2, 0, 3, 0, 3}));     // a 1-D case in 2-D form

// The shifted AVX-512 tiles (conv_grouped_shifted.h) sum the same taps in the same order as the
// general tile: bias, then (channel, kh, kw), one fused multiply-add each. A float loop doing
// exactly that gives the same bits.
TEST(GroupedConvTest, ShiftedTilesSumInTheGeneralTilesOrder) {
  if (!SimdLevelSupported(SimdLevel::kAvx512)) GTEST_SKIP() << "no AVX-512 on this CPU (or ONNX_LIGHT_DISABLE_AVX512 set)";
  const Case cases[] = {
      {1, 1, 112, 112, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  // 112 columns: strips of 4 and 3 vectors
      {1, 1, 56, 56, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2},    // 5x5 stride 2
      {1, 1, 37, 75, 5, 5, 2, 2, 1, 1, 2, 1, 2, 3},    // 5x5 stride 2, odd sizes, uneven pads
      {1, 1, 20, 100, 5, 5, 1, 1, 2, 1, 2, 2, 2, 2},   // row dilation
      {2, 3, 9, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},     // two in, three out per group
      {1, 1, 11, 21, 3, 5, 3, 2, 1, 1, 1, 2, 1, 2},    // 3x5, row stride 3
      {1, 1, 40, 40, 5, 3, 1, 1, 1, 1, 2, 1, 2, 1},    // 5x3
      {1, 1, 5, 80, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},     // a strip of one vector after one of four
      {1, 1, 9, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},     // bands of 4 rows and a last row
      {1, 1, 13, 10, 3, 3, 1, 1, 1, 1, 0, 1, 0, 1},    // bands of 8 rows and 5 single rows
  };
  const Case three_wide_stride_two{1, 1, 56, 56, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
  EXPECT_FALSE(GroupedPlaneShiftedApplies(MakeGroupedConvPlan(Geometry(three_wide_stride_two), 1, 1, SimdLevel::kAvx512)));
  const Case dilated{1, 1, 56, 56, 3, 3, 1, 1, 1, 2, 2, 2, 2, 2};
  EXPECT_FALSE(GroupedPlaneShiftedApplies(MakeGroupedConvPlan(Geometry(dilated), 1, 1, SimdLevel::kAvx512)));
  for (const Case& k : cases) {
    const WindowGeometry g = Geometry(k);
    const GroupedConvPlan plan = MakeGroupedConvPlan(g, k.cg, k.mg, SimdLevel::kAvx512);
    ASSERT_TRUE(GroupedPlaneShiftedApplies(plan)) << k.h << "x" << k.w;
    const std::vector<float> x = testing::RandomFloats(static_cast<size_t>(k.cg * k.h * k.w), 5);
    const std::vector<float> w = testing::RandomFloats(static_cast<size_t>(k.mg * k.cg * k.kh * k.kw), 6);
    const std::vector<float> bias = testing::RandomFloats(static_cast<size_t>(k.mg), 7);
    const int64_t oh_n = g.output[0];
    const int64_t ow_n = g.output[1];
    std::vector<float> scratch(static_cast<size_t>(plan.scratch), NAN);
    std::vector<float> y(static_cast<size_t>(k.mg * oh_n * ow_n), NAN);
    GroupedConvGroup(plan, x.data(), w.data(), bias.data(), ConvEpilogue{}, nullptr, scratch.data(), y.data());
    for (int64_t m = 0; m < k.mg; ++m) {
      for (int64_t oh = 0; oh < oh_n; ++oh) {
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          float acc = bias[static_cast<size_t>(m)];
          for (int64_t c = 0; c < k.cg; ++c) {
            for (int64_t i = 0; i < k.kh; ++i) {
              for (int64_t j = 0; j < k.kw; ++j) {
                const int64_t ih = oh * k.sh + i * k.dh - k.pt;
                const int64_t iw = ow * k.sw + j * k.dw - k.pl;
                const bool inside = ih >= 0 && ih < k.h && iw >= 0 && iw < k.w;
                const float xv = inside ? x[static_cast<size_t>((c * k.h + ih) * k.w + iw)] : 0.0f;
                acc = std::fma(w[static_cast<size_t>(((m * k.cg + c) * k.kh + i) * k.kw + j)], xv, acc);
              }
            }
          }
          const float got = y[static_cast<size_t>((m * oh_n + oh) * ow_n + ow)];
          ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(acc))
              << k.h << "x" << k.w << " kernel " << k.kh << "x" << k.kw << " stride " << k.sh << "," << k.sw
              << " at " << m << "," << oh << "," << ow << ": " << got << " vs " << acc;
        }
      }
    }
  }
}

TEST(GroupedConvTest, OneDimensionalGeometryIsOneRowHigh) {
  WindowGeometry g;
  g.input = {30};
  g.kernel = {5};
  g.stride = {2};
  g.dilation = {2};
  g.pad_begin = {3};
  g.pad_end = {4};
  g.output = {(30 + 7 - 9) / 2 + 1};
  const Case k{1, 2, 1, 30, 1, 5, 1, 2, 1, 2, 0, 3, 0, 4};
  const std::vector<float> x = testing::RandomFloats(30, 5);
  const std::vector<float> w = testing::RandomFloats(10, 6);
  const std::vector<float> bias = {0.5f, -0.25f};
  const std::vector<double> expected = Reference(k, Geometry(k), x, w, bias, nullptr);
  for (const SimdLevel level : Levels()) {
    const GroupedConvPlan plan = MakeGroupedConvPlan(g, 1, 2, level);
    std::vector<float> scratch(static_cast<size_t>(plan.scratch));
    std::vector<float> y(expected.size(), NAN);
    GroupedConvGroup(plan, x.data(), w.data(), bias.data(), ConvEpilogue{}, nullptr, scratch.data(), y.data());
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], expected[i], 1e-5) << i;
  }
}

TEST(GroupedConvTest, EpilogueActivationRunsOnTheOutput) {
  const Case k{1, 1, 9, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  const WindowGeometry g = Geometry(k);
  const std::vector<float> x = testing::RandomFloats(static_cast<size_t>(k.h * k.w), 7, -3.0f, 3.0f);
  const std::vector<float> w = testing::RandomFloats(9, 8);
  const std::vector<float> bias = {0.1f};
  const std::vector<double> conv = Reference(k, g, x, w, bias, nullptr);
  const ConvEpilogue hard_swish{ConvActivation::kHardSwish, 0.0f, 0.0f};
  for (const SimdLevel level : Levels()) {
    const GroupedConvPlan plan = MakeGroupedConvPlan(g, 1, 1, level);
    std::vector<float> scratch(static_cast<size_t>(plan.scratch));
    std::vector<float> y(conv.size());
    GroupedConvGroup(plan, x.data(), w.data(), bias.data(), hard_swish, nullptr, scratch.data(), y.data());
    for (size_t i = 0; i < y.size(); ++i) {
      const double v = conv[i];
      ASSERT_NEAR(y[i], v * std::clamp(v / 6 + 0.5, 0.0, 1.0), 1e-5) << i;
    }
  }
}

TEST(GroupedConvTest, InfiniteWeightTimesPaddingIsNaN) {
  // Zero padding times an infinite weight is NaN in the spec's zero-padded convolution; the
  // kernel's padding is real zeros, so border outputs become NaN and interior ones infinite.
  const Case k{1, 1, 4, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  const WindowGeometry g = Geometry(k);
  const std::vector<float> x(static_cast<size_t>(k.h * k.w), 1.0f);
  std::vector<float> w(9, 0.0f);
  w[0] = std::numeric_limits<float>::infinity();  // top-left tap
  const std::vector<float> bias = {0.0f};
  for (const SimdLevel level : Levels()) {
    const GroupedConvPlan plan = MakeGroupedConvPlan(g, 1, 1, level);
    std::vector<float> scratch(static_cast<size_t>(plan.scratch));
    std::vector<float> y(static_cast<size_t>(g.output[0] * g.output[1]));
    GroupedConvGroup(plan, x.data(), w.data(), bias.data(), ConvEpilogue{}, nullptr, scratch.data(), y.data());
    EXPECT_TRUE(std::isnan(y[0])) << SimdLevelName(level);
    EXPECT_TRUE(std::isnan(y[5])) << SimdLevelName(level);  // first row reads the top padding
    EXPECT_TRUE(std::isinf(y[static_cast<size_t>(g.output[1] + 3)])) << SimdLevelName(level);
  }
}

TEST(GroupedConvTest, Applicability) {
  const WindowGeometry g = Geometry(Case{1, 1, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1});
  EXPECT_TRUE(GroupedDirectApplies(g, 4, 1));
  EXPECT_TRUE(GroupedDirectApplies(g, 4, 8));
  EXPECT_FALSE(GroupedDirectApplies(g, 4, 9));  // many channels per group: im2col + GEMM
  EXPECT_FALSE(GroupedDirectApplies(g, 1, 1));  // not grouped
  WindowGeometry g3 = g;
  g3.input.push_back(8);
  EXPECT_FALSE(GroupedDirectApplies(g3, 4, 1));  // 3-D
}

}  // namespace
}  // namespace onnx_light::runtime

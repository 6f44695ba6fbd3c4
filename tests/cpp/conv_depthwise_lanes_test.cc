// The AVX-512 channels-in-lanes depthwise convolution (kernels/nn/conv_depthwise_lanes) against a
// plain loop: partial channel blocks, kernel sizes, strides, dilations, asymmetric and cut-short
// padding, row widths 1-32 (planes that are and are not multiples of 16 pixels), bias, activations with and without a residual, and an infinite weight
// meeting the zero padding.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/nn/conv_depthwise_lanes.h"
#include "kernels/nn/conv_direct.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

struct Case {
  int64_t channels, h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
};

WindowGeometry Geometry(const Case& k) {
  WindowGeometry g;
  g.input = {k.h, k.w};
  g.kernel = {k.kh, k.kw};
  g.stride = {k.sh, k.sw};
  g.dilation = {k.dh, k.dw};
  g.pad_begin = {k.pt, k.pl};
  g.pad_end = {k.pb, k.pr};
  g.output = {(k.h + k.pt + k.pb - (k.kh - 1) * k.dh - 1) / k.sh + 1,
              (k.w + k.pl + k.pr - (k.kw - 1) * k.dw - 1) / k.sw + 1};
  return g;
}

std::vector<float> Reference(const Case& k, const WindowGeometry& g, const std::vector<float>& x,
                             const std::vector<float>& w, const float* bias, const float* z, ConvActivation a) {
  const int64_t oh_n = g.output[0];
  const int64_t ow_n = g.output[1];
  std::vector<float> y(static_cast<size_t>(k.channels * oh_n * ow_n));
  for (int64_t c = 0; c < k.channels; ++c) {
    for (int64_t oh = 0; oh < oh_n; ++oh) {
      for (int64_t ow = 0; ow < ow_n; ++ow) {
        double acc = bias != nullptr ? bias[c] : 0.0;
        for (int64_t i = 0; i < k.kh; ++i) {
          for (int64_t j = 0; j < k.kw; ++j) {
            const int64_t ih = oh * k.sh + i * k.dh - k.pt;
            const int64_t iw = ow * k.sw + j * k.dw - k.pl;
            if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
            acc += static_cast<double>(x[(c * k.h + ih) * k.w + iw]) * w[(c * k.kh + i) * k.kw + j];
          }
        }
        const int64_t at = (c * oh_n + oh) * ow_n + ow;
        if (z != nullptr) acc += z[at];
        if (a == ConvActivation::kRelu) acc = acc < 0 ? 0.0 : acc;
        if (a == ConvActivation::kSiLU) acc = acc / (1.0 + std::exp(-acc));
        y[at] = static_cast<float>(acc);
      }
    }
  }
  return y;
}

class DepthwiseLanesTest : public ::testing::TestWithParam<Case> {};

TEST_P(DepthwiseLanesTest, MatchesPlainLoop) {
  // The kernel faults without AVX-512; on such CPUs depthwise Conv takes the plane kernel, which
  // the Python Conv tests cover (they also rerun with ONNX_LIGHT_DISABLE_AVX512=1).
  if (!DirectConvAvailable()) GTEST_SKIP() << "no AVX-512 on this CPU (or ONNX_LIGHT_DISABLE_AVX512 set)";
  const Case k = GetParam();
  const WindowGeometry g = Geometry(k);
  ASSERT_TRUE(DepthwiseLanesApplies(g)) << g.output[1];
  const std::vector<float> x = testing::RandomFloats(static_cast<size_t>(k.channels * k.h * k.w), 1);
  const std::vector<float> w = testing::RandomFloats(static_cast<size_t>(k.channels * k.kh * k.kw), 2);
  const std::vector<float> bias = testing::RandomFloats(static_cast<size_t>(k.channels), 3);
  const int64_t out_plane = g.output[0] * g.output[1];
  const std::vector<float> z = testing::RandomFloats(static_cast<size_t>(k.channels * out_plane), 4);
  std::vector<float> scratch(static_cast<size_t>(DepthwiseLanesScratchSize(g)));
  for (const ConvActivation a : {ConvActivation::kNone, ConvActivation::kRelu, ConvActivation::kSiLU}) {
    for (const bool with_bias : {false, true}) {
      for (const bool with_z : {false, true}) {
        const float* b = with_bias ? bias.data() : nullptr;
        const float* zp = with_z ? z.data() : nullptr;
        const std::vector<float> expected = Reference(k, g, x, w, b, zp, a);
        std::vector<float> y(expected.size(), NAN);
        for (int64_t c0 = 0; c0 < k.channels; c0 += kDepthwiseLanes) {
          const int64_t live = std::min(kDepthwiseLanes, k.channels - c0);
          DepthwiseLanesBlock(x.data() + c0 * k.h * k.w, live, g, w.data() + c0 * k.kh * k.kw,
                              b != nullptr ? b + c0 : nullptr, ConvEpilogue{a, 0.0f, 0.0f},
                              zp != nullptr ? zp + c0 * out_plane : nullptr, scratch.data(), y.data() + c0 * out_plane);
        }
        for (size_t i = 0; i < y.size(); ++i) {
          ASSERT_NEAR(y[i], expected[i], 1e-4f * (1.0f + std::fabs(expected[i])))
              << "element " << i << " activation " << static_cast<int>(a) << (with_bias ? " bias" : "")
              << (with_z ? " z" : "");
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, DepthwiseLanesTest,
                         ::testing::Values(Case{32, 7, 7, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},     // efficientnet's 7x7
                                           Case{19, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},     // a 3-channel block
                                           Case{5, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},    // stride 2 to 7x7
                                           Case{16, 13, 11, 5, 3, 2, 2, 1, 1, 2, 1, 2, 1},   // odd sizes
                                           Case{17, 6, 6, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},     // dilation 2
                                           Case{3, 4, 5, 2, 3, 1, 1, 1, 1, 0, 2, 1, 0},      // asymmetric pads
                                           Case{8, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0},      // pad cut short
                                           Case{1, 3, 1, 3, 1, 1, 1, 1, 1, 1, 0, 1, 0},      // one column
                                           Case{33, 8, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},     // 1x1 kernel
                                           Case{20, 28, 28, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},   // 28x28
                                           Case{7, 31, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    // 32 columns
                                           Case{24, 14, 14, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2},   // 5x5 stride 2 to 7x7
                                           Case{9, 15, 17, 5, 5, 2, 2, 1, 1, 2, 2, 1, 1},    // 5x5 stride 2, cut short
                                           Case{16, 10, 12, 3, 5, 1, 2, 1, 1, 1, 2, 1, 2},   // 3x5, column stride 2
                                           Case{4, 5, 5, 3, 3, 1, 1, 1, 1, 3, 3, 3, 3}));    // rows of padding only

TEST(DepthwiseLanesTest, InfiniteWeightMeetsPaddingAsNaN) {
  if (!DirectConvAvailable()) GTEST_SKIP() << "no AVX-512 on this CPU (or ONNX_LIGHT_DISABLE_AVX512 set)";
  const Case k{2, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  const WindowGeometry g = Geometry(k);
  const std::vector<float> x(18, 1.0f);
  std::vector<float> w(18, 1.0f);
  w[0] = INFINITY;  // channel 0, tap (0, 0): reads padding for output (0, 0), the input for (1, 1)
  std::vector<float> scratch(static_cast<size_t>(DepthwiseLanesScratchSize(g)));
  std::vector<float> y(18);
  DepthwiseLanesBlock(x.data(), 2, g, w.data(), nullptr, ConvEpilogue{}, nullptr, scratch.data(), y.data());
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[4], INFINITY);
  EXPECT_EQ(y[9], 4.0f);   // channel 1, output (0, 0): four input pixels
  EXPECT_EQ(y[13], 9.0f);  // channel 1, the centre
}

TEST(DepthwiseLanesTest, Applicability) {
  if (!DirectConvAvailable()) GTEST_SKIP() << "no AVX-512 on this CPU (or ONNX_LIGHT_DISABLE_AVX512 set)";
  EXPECT_TRUE(DepthwiseLanesApplies(Geometry(Case{1, 7, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1})));
  EXPECT_FALSE(DepthwiseLanesApplies(Geometry(Case{1, 7, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1})));  // 33 columns
}

}  // namespace
}  // namespace onnx_light::runtime

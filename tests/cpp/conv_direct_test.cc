// The AVX-512 direct convolution (kernels/nn/conv_direct) against a plain loop: padding, column and
// channel tails, row tails, kernel shapes, bias and Relu.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "conv_reference.h"
#include "kernels/nn/conv_direct.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

struct Case {
  int64_t c, h, w, m, kh, kw, pt, pl, pb, pr;
};

WindowGeometry Geometry(const Case& k) {
  WindowGeometry g;
  g.input = {k.h, k.w};
  g.kernel = {k.kh, k.kw};
  g.stride = {1, 1};
  g.dilation = {1, 1};
  g.pad_begin = {k.pt, k.pl};
  g.pad_end = {k.pb, k.pr};
  g.output = {k.h + k.pt + k.pb - k.kh + 1, k.w + k.pl + k.pr - k.kw + 1};
  return g;
}

std::vector<float> Random(size_t n, uint32_t seed) { return testing::RandomFloats(n, seed); }

// The plain loop's result, through a Relu when `relu`.
std::vector<float> Reference(const Case& k, const WindowGeometry& g, const std::vector<float>& x,
                             const std::vector<float>& w, const float* bias, bool relu) {
  std::vector<float> y = testing::ReferenceConv2d(x, k.c, w, k.m, g, bias);
  if (relu) {
    for (float& v : y) v = v < 0 ? 0.0f : v;
  }
  return y;
}

class DirectConvTest : public ::testing::TestWithParam<Case> {};

TEST_P(DirectConvTest, MatchesPlainLoop) {
  // The kernel faults without AVX-512; on such CPUs Conv takes im2col + BLAS, which the Python
  // Conv tests cover (they also rerun with ONNX_LIGHT_DISABLE_AVX512=1 on AVX-512 machines).
  if (!DirectConvAvailable()) GTEST_SKIP() << "no AVX-512 on this CPU (or ONNX_LIGHT_DISABLE_AVX512 set)";
  const Case k = GetParam();
  const WindowGeometry g = Geometry(k);
  ASSERT_TRUE(DirectConvApplies(g));
  const int64_t taps = k.c * k.kh * k.kw;
  const std::vector<float> x = Random(static_cast<size_t>(k.c * k.h * k.w), 1);
  const std::vector<float> w = Random(static_cast<size_t>(k.m * taps), 2);
  const std::vector<float> bias = Random(static_cast<size_t>(k.m), 3);
  std::vector<float> packed(static_cast<size_t>(DirectConvPackedSize(k.m, taps)));
  PackDirectConvWeights(w.data(), k.m, taps, packed.data());
  std::vector<float> scratch(static_cast<size_t>(DirectConvScratchSize(k.c, g)));
  for (const bool relu : {false, true}) {
    for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
      const std::vector<float> expected = Reference(k, g, x, w, b, relu);
      std::vector<float> y(expected.size(), NAN);
      DirectConv2d(x.data(), k.c, g, packed.data(), k.m, b, relu ? ConvEpilogue::Relu() : ConvEpilogue{}, nullptr,
                   scratch.data(), y.data());
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_NEAR(y[i], expected[i], 1e-4f) << "element " << i << (relu ? " relu" : "") << (b ? " bias" : "");
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, DirectConvTest,
                         ::testing::Values(Case{3, 32, 32, 16, 3, 3, 1, 1, 1, 1},   // the CNN's first layer
                                           Case{16, 16, 16, 32, 3, 3, 1, 1, 1, 1},  // and its second
                                           Case{2, 7, 8, 5, 3, 3, 1, 1, 1, 1},      // 8 columns, 5 channels
                                           Case{3, 5, 35, 17, 3, 3, 1, 1, 1, 1},    // column and channel tails
                                           Case{2, 7, 12, 9, 5, 3, 2, 0, 1, 2},     // asymmetric pads
                                           Case{1, 4, 20, 3, 1, 4, 0, 3, 0, 0},
                                           Case{4, 9, 10, 33, 2, 2, 0, 0, 0, 0}));  // no padding, 3 blocks

TEST(DirectConvTest, Applicability) {
  Case k{1, 8, 8, 1, 3, 3, 1, 1, 1, 1};
  WindowGeometry g = Geometry(k);
  EXPECT_TRUE(DirectConvApplies(g));
  g.stride = {1, 2};
  EXPECT_FALSE(DirectConvApplies(g));
  g = Geometry(k);
  g.dilation = {2, 1};
  EXPECT_FALSE(DirectConvApplies(g));
  g = Geometry(Case{1, 8, 7, 1, 3, 3, 1, 1, 1, 1});  // 7 output columns
  EXPECT_FALSE(DirectConvApplies(g));
}

}  // namespace
}  // namespace onnx_light::runtime

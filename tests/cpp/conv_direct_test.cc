// The AVX-512 direct convolution (kernels/nn/conv_direct) against a plain loop: padding, column and
// channel tails, row tails, kernel shapes, strides, bias, Relu, another activation with a residual,
// and bands of output rows on the calling thread and over a pool of two.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "conv_reference.h"
#include "core/thread_pool.h"
#include "kernels/nn/conv_direct.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

struct Case {
  int64_t c, h, w, m, kh, kw, pt, pl, pb, pr, sh = 1, sw = 1;
};

WindowGeometry Geometry(const Case& k) {
  WindowGeometry g;
  g.input = {k.h, k.w};
  g.kernel = {k.kh, k.kw};
  g.stride = {k.sh, k.sw};
  g.dilation = {1, 1};
  g.pad_begin = {k.pt, k.pl};
  g.pad_end = {k.pb, k.pr};
  g.output = {(k.h + k.pt + k.pb - k.kh) / k.sh + 1, (k.w + k.pl + k.pr - k.kw) / k.sw + 1};
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
  ASSERT_TRUE(k.sh == 1 && k.sw == 1 ? DirectConvApplies(g) : DirectConvStridedApplies(g));
  const int64_t taps = k.c * k.kh * k.kw;
  const std::vector<float> x = Random(static_cast<size_t>(k.c * k.h * k.w), 1);
  const std::vector<float> w = Random(static_cast<size_t>(k.m * taps), 2);
  const std::vector<float> bias = Random(static_cast<size_t>(k.m), 3);
  std::vector<float> packed(static_cast<size_t>(DirectConvPackedSize(k.m, taps)));
  PackDirectConvWeights(w.data(), k.m, taps, packed.data());
  ThreadPool two(2);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two}) {
    std::vector<float> scratch(static_cast<size_t>(DirectConvScratchSize(k.c, g, pool)));
    for (const bool relu : {false, true}) {
      for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
        const std::vector<float> expected = Reference(k, g, x, w, b, relu);
        std::vector<float> y(expected.size(), NAN);
        DirectConv2d(x.data(), k.c, g, packed.data(), k.m, b, relu ? ConvEpilogue::Relu() : ConvEpilogue{}, nullptr,
                     scratch.data(), y.data(), pool);
        for (size_t i = 0; i < y.size(); ++i) {
          ASSERT_NEAR(y[i], expected[i], 1e-4f)
              << "element " << i << (relu ? " relu" : "") << (b ? " bias" : "") << (pool ? " 2 threads" : "");
        }
      }
    }
    // Clip(x + z, -0.5, 0.5): an activation applied after each block is written, with a residual
    // laid out like the output, both read at the band's rows of every plane.
    const std::vector<float> conv = Reference(k, g, x, w, bias.data(), false);
    const std::vector<float> z = Random(conv.size(), 4);
    std::vector<float> y(conv.size(), NAN);
    DirectConv2d(x.data(), k.c, g, packed.data(), k.m, bias.data(), ConvEpilogue{ConvActivation::kClip, -0.5f, 0.5f},
                 z.data(), scratch.data(), y.data(), pool);
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_NEAR(y[i], std::clamp(conv[i] + z[i], -0.5f, 0.5f), 1e-4f)
          << "element " << i << " clip + z" << (pool ? " 2 threads" : "");
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
                                           Case{4, 9, 10, 33, 2, 2, 0, 0, 0, 0},    // no padding, 3 blocks
                                           // Strided stems (column phases), in several bands of
                                           // rows with a short last one.
                                           Case{3, 64, 40, 16, 3, 3, 0, 0, 0, 0, 2, 2},
                                           Case{3, 61, 37, 20, 7, 7, 3, 3, 3, 3, 2, 2},
                                           Case{1, 50, 50, 8, 5, 4, 2, 1, 2, 1, 3, 4},
                                           // Unit stride over many rows and channels.
                                           Case{8, 90, 20, 24, 3, 3, 1, 1, 1, 1}));

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

// The AVX-512 channels-in-lanes direct convolution (kernels/nn/conv_direct_lanes) against a plain
// loop: strides 1 and 2, padding, pixel and channel tails, several passes of input channels, bias,
// Relu in registers, other activations and a residual after the block, rows narrow enough to be
// taken two at a time, and a thread pool splitting output channels or output rows.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "conv_reference.h"
#include "core/thread_pool.h"
#include "kernels/nn/conv_direct.h"
#include "kernels/nn/conv_direct_lanes.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

struct Case {
  int64_t c, h, w, m, kh, kw, sh, sw, pt, pl, pb, pr;
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

// Random X, W (also packed), bias and residual Z for a case.
struct Operands {
  Operands(const Case& k, const WindowGeometry& g)
      : x(testing::RandomFloats(static_cast<size_t>(k.c * k.h * k.w), 1)),
        w(testing::RandomFloats(static_cast<size_t>(k.m * k.c * k.kh * k.kw), 2)),
        bias(testing::RandomFloats(static_cast<size_t>(k.m), 3)),
        z(testing::RandomFloats(static_cast<size_t>(k.m * g.output_size()), 4)),
        packed(static_cast<size_t>(DirectConvPackedSize(k.m, k.c * k.kh * k.kw))) {
    PackDirectConvWeights(w.data(), k.m, k.c * k.kh * k.kw, packed.data());
  }
  std::vector<float> x, w, bias, z, packed;
};

class DirectLanesTest : public ::testing::TestWithParam<Case> {};

TEST_P(DirectLanesTest, MatchesPlainLoop) {
  // The kernel faults without AVX-512; on such CPUs Conv takes im2col + BLAS, which the Python
  // Conv tests cover (they also rerun with ONNX_LIGHT_DISABLE_AVX512=1 on AVX-512 machines).
  if (!DirectConvAvailable()) GTEST_SKIP() << "no AVX-512 on this CPU (or ONNX_LIGHT_DISABLE_AVX512 set)";
  const Case k = GetParam();
  const WindowGeometry g = Geometry(k);
  ASSERT_TRUE(DirectLanesApplies(g));
  const int64_t out_size = g.output_size();
  const Operands ops(k, g);
  const auto& [x, w, bias, z, packed] = ops;
  std::vector<float> scratch(static_cast<size_t>(DirectLanesScratchSize(k.c, g, k.m, nullptr)));
  const ConvEpilogue hard_swish{ConvActivation::kHardSwish, 0.0f, 0.0f};
  for (const ConvEpilogue& epilogue : {ConvEpilogue{}, ConvEpilogue::Relu(), hard_swish}) {
    for (const bool residual : {false, true}) {
      for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
        std::vector<float> expected = testing::ReferenceConv2d(x, k.c, w, k.m, g, b);
        ApplyConvEpilogue(epilogue, expected.data(), residual ? z.data() : nullptr, k.m, out_size, nullptr);
        std::vector<float> y(expected.size(), NAN);
        DirectLanesConv2d(x.data(), k.c, g, packed.data(), k.m, b, epilogue, residual ? z.data() : nullptr,
                          scratch.data(), y.data());
        for (size_t i = 0; i < y.size(); ++i) {
          ASSERT_NEAR(y[i], expected[i], 1e-4f) << "element " << i << " activation "
                                                << static_cast<int>(epilogue.activation)
                                                << (residual ? " residual" : "") << (b ? " bias" : "");
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, DirectLanesTest,
    ::testing::Values(Case{64, 12, 30, 19, 3, 3, 1, 1, 1, 1, 1, 1},  // 4 passes; rows of 14 + 14 + 2; 19 channels
                      Case{8, 17, 23, 37, 3, 3, 2, 2, 1, 0, 2, 1},   // stride 2, asymmetric pads; 32 + 5 channels
                      Case{16, 9, 31, 33, 3, 3, 1, 2, 1, 1, 1, 1},   // strides (1, 2); 32 + 1 channels
                      Case{3, 40, 44, 16, 7, 7, 2, 2, 3, 3, 3, 3},   // a stem: 147 taps, one block of 16
                      Case{48, 7, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1},    // 7-pixel rows in pairs + one, two tiles of 32
                      Case{40, 13, 12, 16, 3, 3, 2, 2, 1, 1, 1, 1},  // stride 2: 6-pixel rows, pairs + one, 16 chans
                      Case{72, 8, 4, 20, 3, 3, 1, 1, 1, 1, 1, 1},    // 4-pixel rows in pairs, 4 passes; 16 + 4 channels
                      Case{8, 3, 3, 5, 3, 3, 1, 1, 1, 1, 1, 1},      // 3-pixel rows, too narrow to pair
                      Case{24, 5, 1, 20, 3, 3, 1, 1, 1, 1, 1, 1},    // one output column
                      Case{40, 7, 9, 32, 2, 3, 2, 1, 0, 0, 0, 0},    // no padding, the last input row unread
                      Case{30, 3, 15, 17, 1, 5, 1, 1, 0, 2, 0, 2},   // a 1x5 kernel, 15-pixel rows
                      Case{24, 80, 60, 19, 3, 3, 1, 1, 1, 1, 1, 1}));  // 2 passes in bands of 34, 34, 12 rows

TEST(DirectLanesTest, ThreadPoolGivesTheSameBits) {
  if (!DirectConvAvailable()) GTEST_SKIP() << "no AVX-512 on this CPU (or ONNX_LIGHT_DISABLE_AVX512 set)";
  const Case k{40, 20, 20, 100, 3, 3, 1, 1, 1, 1, 1, 1};  // 4 tasks of 32, 32, 32 and 4 channels
  const WindowGeometry g = Geometry(k);
  const int64_t taps = k.c * k.kh * k.kw;
  const std::vector<float> x = testing::RandomFloats(static_cast<size_t>(k.c * k.h * k.w), 1);
  const std::vector<float> w = testing::RandomFloats(static_cast<size_t>(k.m * taps), 2);
  std::vector<float> packed(static_cast<size_t>(DirectConvPackedSize(k.m, taps)));
  PackDirectConvWeights(w.data(), k.m, taps, packed.data());
  ThreadPool pool(3);
  std::vector<float> one(static_cast<size_t>(k.m * g.output_size()));
  std::vector<float> three(one.size());
  std::vector<float> scratch(static_cast<size_t>(DirectLanesScratchSize(k.c, g, k.m, nullptr)));
  DirectLanesConv2d(x.data(), k.c, g, packed.data(), k.m, nullptr, ConvEpilogue::Relu(), nullptr, scratch.data(),
                    one.data());
  scratch.assign(static_cast<size_t>(DirectLanesScratchSize(k.c, g, k.m, &pool)), 0.0f);
  DirectLanesConv2d(x.data(), k.c, g, packed.data(), k.m, nullptr, ConvEpilogue::Relu(), nullptr, scratch.data(),
                    three.data(), &pool);
  EXPECT_EQ(one, three);
}

// An image larger than its weights is split over the threads by output rows (each thread pads its
// own rows): with 29 rows of 2 units over 3 threads a thread's share ends within a row of units,
// and the epilogue runs on row ranges of the planes.
TEST(DirectLanesTest, RowSplitGivesTheSameBits) {
  // The kernel faults without AVX-512; such CPUs never take it (MatchesPlainLoop says where
  // their convolutions are tested).
  if (!DirectConvAvailable()) GTEST_SKIP() << "no AVX-512 on this CPU (or ONNX_LIGHT_DISABLE_AVX512 set)";
  ThreadPool pool(3);
  for (const Case& k : {Case{8, 29, 30, 40, 3, 3, 1, 1, 1, 1, 1, 1}, Case{8, 58, 61, 40, 3, 3, 2, 2, 1, 1, 0, 1}}) {
    const WindowGeometry g = Geometry(k);
    const int64_t taps = k.c * k.kh * k.kw;
    const int64_t out_size = g.output_size();
    ASSERT_GT(k.c * (g.output[0] * k.sh + 2) * (g.output[1] * k.sw + 2), DirectConvPackedSize(k.m, taps));
    const Operands ops(k, g);
    const auto& [x, w, bias, z, packed] = ops;
    const ConvEpilogue hard_swish{ConvActivation::kHardSwish, 0.0f, 0.0f};
    for (const ConvEpilogue& epilogue : {ConvEpilogue::Relu(), hard_swish}) {
      for (const float* zp : {static_cast<const float*>(nullptr), z.data()}) {
        std::vector<float> expected = testing::ReferenceConv2d(x, k.c, w, k.m, g, bias.data());
        ApplyConvEpilogue(epilogue, expected.data(), zp, k.m, out_size, nullptr);
        std::vector<float> one(expected.size(), NAN);
        std::vector<float> three(expected.size(), NAN);
        std::vector<float> scratch(static_cast<size_t>(DirectLanesScratchSize(k.c, g, k.m, nullptr)));
        DirectLanesConv2d(x.data(), k.c, g, packed.data(), k.m, bias.data(), epilogue, zp, scratch.data(),
                          one.data());
        scratch.assign(static_cast<size_t>(DirectLanesScratchSize(k.c, g, k.m, &pool)), NAN);
        DirectLanesConv2d(x.data(), k.c, g, packed.data(), k.m, bias.data(), epilogue, zp, scratch.data(),
                          three.data(), &pool);
        EXPECT_EQ(one, three) << "stride " << k.sh << (zp ? " residual" : "");
        for (size_t i = 0; i < one.size(); ++i) ASSERT_NEAR(one[i], expected[i], 1e-4f) << "element " << i;
      }
    }
  }
}

TEST(DirectLanesTest, Applicability) {
  const Case k{1, 8, 8, 1, 3, 3, 1, 1, 1, 1, 1, 1};
  WindowGeometry g = Geometry(k);
  EXPECT_EQ(DirectLanesApplies(g), DirectConvAvailable());
  g.stride = {2, 1};
  EXPECT_EQ(DirectLanesApplies(g), DirectConvAvailable());
  g.stride = {1, 3};
  EXPECT_FALSE(DirectLanesApplies(g));
  g = Geometry(k);
  g.dilation = {1, 2};
  EXPECT_FALSE(DirectLanesApplies(g));
  g = Geometry(k);
  g.input = {8, 8, 8};
  EXPECT_FALSE(DirectLanesApplies(g));
}

}  // namespace
}  // namespace onnx_light::runtime

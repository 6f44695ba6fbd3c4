// The AVX-512 1x1 convolution (kernels/nn/conv_pointwise) against a plain loop: pixel tiles and
// their masked last vector, the channels-in-lanes tail of up to 8 pixels, channel tails, bias,
// Relu in registers, other activations and the residual on each block, and pixel chunks split
// over a thread pool.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/nn/conv_direct.h"
#include "kernels/nn/conv_pointwise.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

struct Case {
  int64_t k, pixels, m;
};

double Activate(ConvActivation a, double v) {
  switch (a) {
    case ConvActivation::kRelu:
      return v < 0 ? 0.0 : v;
    case ConvActivation::kSigmoid:
      return 1.0 / (1.0 + std::exp(-v));
    case ConvActivation::kSiLU:
      return v / (1.0 + std::exp(-v));
    default:
      return v;
  }
}

std::vector<float> Reference(const Case& c, const std::vector<float>& x, const std::vector<float>& w,
                             const float* bias, const float* z, ConvActivation a) {
  std::vector<float> y(static_cast<size_t>(c.m * c.pixels));
  for (int64_t m = 0; m < c.m; ++m) {
    for (int64_t p = 0; p < c.pixels; ++p) {
      double acc = bias != nullptr ? bias[m] : 0.0;
      for (int64_t t = 0; t < c.k; ++t) acc += static_cast<double>(w[m * c.k + t]) * x[t * c.pixels + p];
      if (z != nullptr) acc += z[m * c.pixels + p];
      y[m * c.pixels + p] = static_cast<float>(Activate(a, acc));
    }
  }
  return y;
}

class PointwiseConvTest : public ::testing::TestWithParam<Case> {};

TEST_P(PointwiseConvTest, MatchesPlainLoop) {
  // The kernel faults without AVX-512; on such CPUs a 1x1 Conv takes BLAS, which the Python Conv
  // tests cover (they also rerun with ONNX_LIGHT_DISABLE_AVX512=1 on AVX-512 machines).
  if (!DirectConvAvailable()) GTEST_SKIP() << "no AVX-512 on this CPU (or ONNX_LIGHT_DISABLE_AVX512 set)";
  const Case c = GetParam();
  const std::vector<float> x = testing::RandomFloats(static_cast<size_t>(c.k * c.pixels), 1);
  const std::vector<float> w = testing::RandomFloats(static_cast<size_t>(c.m * c.k), 2);
  const std::vector<float> bias = testing::RandomFloats(static_cast<size_t>(c.m), 3);
  const std::vector<float> z = testing::RandomFloats(static_cast<size_t>(c.m * c.pixels), 4);
  std::vector<float> packed(static_cast<size_t>(DirectConvPackedSize(c.m, c.k)));
  PackDirectConvWeights(w.data(), c.m, c.k, packed.data());
  ThreadPool pool(2);
  for (const ConvActivation a :
       {ConvActivation::kNone, ConvActivation::kRelu, ConvActivation::kSigmoid, ConvActivation::kSiLU}) {
    for (const bool with_bias : {false, true}) {
      for (const bool with_z : {false, true}) {
        for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
          const float* b = with_bias ? bias.data() : nullptr;
          const float* zp = with_z ? z.data() : nullptr;
          const std::vector<float> expected = Reference(c, x, w, b, zp, a);
          std::vector<float> y(expected.size(), NAN);
          PointwiseConv(x.data(), c.k, c.pixels, packed.data(), c.m, b, ConvEpilogue{a, 0.0f, 0.0f}, zp, y.data(), p);
          for (size_t i = 0; i < y.size(); ++i) {
            ASSERT_NEAR(y[i], expected[i], 1e-4f * (1.0f + std::fabs(expected[i])))
                << "element " << i << " activation " << static_cast<int>(a) << (with_bias ? " bias" : "")
                << (with_z ? " z" : "") << (p != nullptr ? " pool" : "");
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PointwiseConvTest,
                         ::testing::Values(Case{1, 1, 1},        // one pixel: the tail path alone
                                           Case{3, 7, 5},        // a 7-pixel tail, channel tail
                                           Case{16, 49, 13},     // 7x7: 48 in tiles, 1 in the tail
                                           Case{5, 17, 16},      // 16 + a 1-pixel tail
                                           Case{8, 25, 33},      // a 9-pixel masked vector, 3 blocks
                                           Case{2, 48, 8},       // one whole tile
                                           Case{7, 64, 17},      // a tile and a vector
                                           Case{20, 200, 9},     // several tiles, an 8-pixel tail
                                           Case{300, 1000, 24},  // chunks of fewer tiles (wide k)
                                           // 17 chunks of pixels (a short last one): with the pool,
                                           // each thread's contiguous run of them.
                                           Case{24, 3136, 144},
                                           Case{4, 3, 40},       // 3 pixels, 3 channel blocks
                                           // Depth in passes of 128 rows: a packed panel (more than 16
                                           // channels), the tail's blocks taken 8, 4 or 2 at once plus
                                           // single blocks, Relu only after the last pass.
                                           Case{300, 49, 130},   // 3 passes, 1-pixel tail, 9 blocks
                                           Case{129, 98, 70},    // a 1-row last pass, 2-pixel tail
                                           Case{257, 51, 40},    // 3-pixel tail, 3 blocks
                                           Case{200, 60, 260}));  // 2 passes through the panel, channel tail

TEST(PointwiseConvTest, ActivationInTheTilesEqualsTheEpilogueOnStoredRows) {
  // Sigmoid and SiLU are applied as the tiles store (no residual): the values ApplyConvEpilogue
  // gives on the stored sums, for a one-pass and a three-pass product, a pixel tail included.
  if (!DirectConvAvailable()) GTEST_SKIP() << "no AVX-512 on this CPU (or ONNX_LIGHT_DISABLE_AVX512 set)";
  for (const Case c : {Case{24, 100, 37}, Case{300, 49, 20}}) {
    const std::vector<float> x = testing::RandomFloats(static_cast<size_t>(c.k * c.pixels), 1, -3.0f, 3.0f);
    const std::vector<float> w = testing::RandomFloats(static_cast<size_t>(c.m * c.k), 2);
    const std::vector<float> bias = testing::RandomFloats(static_cast<size_t>(c.m), 3);
    std::vector<float> packed(static_cast<size_t>(DirectConvPackedSize(c.m, c.k)));
    PackDirectConvWeights(w.data(), c.m, c.k, packed.data());
    std::vector<float> sums(static_cast<size_t>(c.m * c.pixels));
    PointwiseConv(x.data(), c.k, c.pixels, packed.data(), c.m, bias.data(), ConvEpilogue{}, nullptr, sums.data(),
                  nullptr);
    for (const ConvActivation a : {ConvActivation::kSigmoid, ConvActivation::kSiLU}) {
      const ConvEpilogue epilogue{a, 0.0f, 0.0f};
      std::vector<float> expected = sums;
      ApplyConvEpilogue(epilogue, expected.data(), nullptr, static_cast<int64_t>(expected.size()), 0.0f);
      std::vector<float> y(sums.size(), NAN);
      PointwiseConv(x.data(), c.k, c.pixels, packed.data(), c.m, bias.data(), epilogue, nullptr, y.data(), nullptr);
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_EQ(y[i], expected[i]) << "element " << i << " activation " << static_cast<int>(a) << " k " << c.k;
      }
    }
  }
}

TEST(PointwiseConvTest, NaNAndInfinityPropagate) {
  if (!DirectConvAvailable()) GTEST_SKIP() << "no AVX-512 on this CPU (or ONNX_LIGHT_DISABLE_AVX512 set)";
  // Relu in registers keeps NaN (it compares false) in the tile and in the tail.
  const Case c{2, 50, 3};
  std::vector<float> x(static_cast<size_t>(c.k * c.pixels), 1.0f);
  x[0] = NAN;                   // pixel 0: a tile
  x[49] = INFINITY;             // pixel 49: the tail
  const std::vector<float> w(static_cast<size_t>(c.m * c.k), 1.0f);
  std::vector<float> packed(static_cast<size_t>(DirectConvPackedSize(c.m, c.k)));
  PackDirectConvWeights(w.data(), c.m, c.k, packed.data());
  std::vector<float> y(static_cast<size_t>(c.m * c.pixels));
  PointwiseConv(x.data(), c.k, c.pixels, packed.data(), c.m, nullptr, ConvEpilogue::Relu(), nullptr, y.data(),
                nullptr);
  for (int64_t m = 0; m < c.m; ++m) {
    EXPECT_TRUE(std::isnan(y[m * c.pixels])) << m;
    EXPECT_EQ(y[m * c.pixels + 49], INFINITY) << m;
    EXPECT_EQ(y[m * c.pixels + 1], 2.0f) << m;
  }
}

struct GemmCase {
  int64_t m, n, k, lda_pad, ldb_pad, ldc_pad;
};

class TiledGemmTest : public ::testing::TestWithParam<GemmCase> {};

TEST_P(TiledGemmTest, MatchesPlainLoopWithStridesAndAccumulation) {
  if (!DirectConvAvailable()) GTEST_SKIP() << "no AVX-512 on this CPU (or ONNX_LIGHT_DISABLE_AVX512 set)";
  const GemmCase g = GetParam();
  ASSERT_TRUE(TiledGemmApplies(g.m, g.n, g.k));
  const int64_t lda = g.k + g.lda_pad;
  const int64_t ldb = g.n + g.ldb_pad;
  const int64_t ldc = g.n + g.ldc_pad;
  const std::vector<float> a = testing::RandomFloats(static_cast<size_t>(g.m * lda), 1);
  const std::vector<float> b = testing::RandomFloats(static_cast<size_t>(g.k * ldb), 2);
  const std::vector<float> c0 = testing::RandomFloats(static_cast<size_t>(g.m * ldc), 3);
  const std::vector<float> bias = testing::RandomFloats(static_cast<size_t>(g.n), 4);
  ThreadPool pool(2);
  // B packed as a constant MatMul weight is (the padding past column n must never show).
  std::vector<float> packed_b(static_cast<size_t>(TiledGemmPackedBSize(g.k, g.n)), -1.0f);
  PackTiledGemmB(g.k, g.n, b.data(), ldb, packed_b.data());
  // The third pass adds a per-column bias (ignored when accumulating, and not asked for then);
  // the fourth reads the packed B, with the bias.
  for (const int mode : {0, 1, 2, 3}) {
    const bool accumulate = mode == 1;
    const bool with_bias = mode >= 2;
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      std::vector<float> c = c0;
      if (mode == 3) {
        TiledGemmPackedB(g.m, g.n, g.k, a.data(), lda, packed_b.data(), c.data(), ldc, p, bias.data());
      } else {
        TiledGemm(g.m, g.n, g.k, a.data(), lda, b.data(), ldb, accumulate, c.data(), ldc, p,
                  with_bias ? bias.data() : nullptr);
      }
      for (int64_t i = 0; i < g.m; ++i) {
        for (int64_t j = 0; j < ldc; ++j) {
          const size_t at = static_cast<size_t>(i * ldc + j);
          if (j >= g.n) {  // the padding between rows is left alone
            ASSERT_EQ(c[at], c0[at]) << i << ", " << j;
            continue;
          }
          double expected = accumulate ? c0[at] : with_bias ? bias[static_cast<size_t>(j)] : 0.0;
          for (int64_t t = 0; t < g.k; ++t) expected += static_cast<double>(a[i * lda + t]) * b[t * ldb + j];
          ASSERT_NEAR(c[at], expected, 1e-4 * (1.0 + std::fabs(expected)))
              << i << ", " << j << (accumulate ? " accumulate" : "") << (with_bias ? " bias" : "")
              << (mode == 3 ? " packed B" : "")
              << (p != nullptr ? " pool" : "");
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, TiledGemmTest,
                         ::testing::Values(GemmCase{8, 16, 1, 0, 0, 0},        // the smallest product taken
                                           GemmCase{37, 29, 53, 3, 5, 7},      // row, column (13-wide) tails
                                           GemmCase{128, 200, 64, 0, 0, 0},    // an 8-column lanes tail
                                           GemmCase{21, 50, 300, 1, 2, 3},     // chunks of fewer tiles (wide k)
                                           GemmCase{9, 1000, 7, 0, 24, 0},     // many chunks
                                           GemmCase{40, 49, 400, 1, 2, 3},     // passes over k, accumulating
                                           GemmCase{16, 48, 130, 0, 0, 0},     // whole 8-row blocks of A in place
                                           GemmCase{27, 96, 512, 0, 0, 0},     // a 2 KiB row stride: A copied apart
                                           GemmCase{13, 40, 1000, 24, 0, 0},   // a 4 KiB stride from padding
                                           GemmCase{87, 64, 750, 0, 0, 0},     // attention's P·V, head size 64
                                           GemmCase{11, 60, 20, 0, 4, 0},      // one pass, a 12-column tail
                                           GemmCase{197, 150, 64, 0, 0, 0},    // 13 row blocks in 4 parts
                                           GemmCase{400, 300, 200, 1, 2, 3},   // wide chunks: all columns in one
                                           GemmCase{384, 1160, 129, 0, 0, 0},  // two wide chunks, the last 8 columns
                                           GemmCase{20, 520, 512, 0, 0, 0}));  // packed B wide enough to copy A apart

TEST(TiledGemmPacking, FromTheTransposeGivesTheSamePanels) {
  // B [k, n] packed from its rows and from the rows of Bᵀ (with a row stride past k): the same
  // floats, the unused columns of the last panel zero in both.
  for (const auto& [k, n] : {std::pair<int64_t, int64_t>{5, 3}, {64, 48}, {33, 130}}) {
    const int64_t ldbt = k + 7;
    const std::vector<float> bt = testing::RandomFloats(static_cast<size_t>(n * ldbt), 5);
    std::vector<float> b(static_cast<size_t>(k * n));
    for (int64_t t = 0; t < k; ++t) {
      for (int64_t j = 0; j < n; ++j) b[static_cast<size_t>(t * n + j)] = bt[static_cast<size_t>(j * ldbt + t)];
    }
    const auto size = static_cast<size_t>(TiledGemmPackedBSize(k, n));
    std::vector<float> from_rows(size, -1.0f), from_transpose(size, -2.0f);
    PackTiledGemmB(k, n, b.data(), n, from_rows.data());
    PackTiledGemmBTransposed(k, n, bt.data(), ldbt, from_transpose.data());
    EXPECT_EQ(from_transpose, from_rows) << k << " x " << n;
  }
}

}  // namespace
}  // namespace onnx_light::runtime

// The Swish / SwiGLU loops (built per instruction set) against a plain scalar evaluation of the
// same formula compiled for the baseline ISA: bit-identical, so every CPU gives the same result;
// against double precision for accuracy; and through the kernels for strided inputs and the
// thread pool.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/elementwise/fast_math.h"
#include "kernels/elementwise/swish.h"
#include "one_node_model.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Inputs covering the tails: zeros, subnormals, large magnitudes, infinities and NaN.
std::vector<float> Inputs(size_t n, uint32_t seed) {
  std::vector<float> x = testing::RandomFloats(n, seed, -12.0f, 12.0f);
  const float special[] = {0.0f, -0.0f, 1e-40f, -1e-40f, 88.0f, -88.0f, 105.0f, -105.0f,
                           3e38f, -3e38f, kInf, -kInf, std::numeric_limits<float>::quiet_NaN()};
  for (size_t i = 0; i < std::size(special) && i < n; ++i) x[i * 7 % n] = special[i];
  return x;
}

// NaN results are the default quiet NaN, whichever NaN the arithmetic produced.
float Canonical(float y) { return std::isnan(y) ? std::numeric_limits<float>::quiet_NaN() : y; }
float ScalarSwish(float x, float alpha) { return Canonical(x * fast_math::Sigmoid(alpha * x)); }
float ScalarSwiGlu(float a, float b, float alpha) { return Canonical(a * fast_math::Sigmoid(alpha * a) * b); }

// alpha * x rounded to float as the kernel computes it (exp amplifies that rounding by |alpha x|).
double FloatSwishInDouble(double x, float alpha) {
  const double ax = static_cast<float>(alpha * static_cast<float>(x));
  return x / (1.0 + std::exp(-ax));
}
double DoubleSwish(double x, double alpha) { return x / (1.0 + std::exp(-alpha * x)); }

bool SameBits(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }

class SwishLoopTest : public ::testing::TestWithParam<float> {};

TEST_P(SwishLoopTest, FloatMatchesScalarFormulaBitForBit) {
  const float alpha = GetParam();
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{16}, size_t{1000}}) {
    const std::vector<float> x = Inputs(std::max<size_t>(n, 1), 1);
    const std::vector<float> b = testing::RandomFloats(x.size(), 2, -3.0f, 3.0f);
    std::vector<float> y(x.size()), g(x.size());
    SwishLoop(x.data(), y.data(), static_cast<int64_t>(n), alpha);
    SwiGluLoop(x.data(), b.data(), g.data(), static_cast<int64_t>(n), alpha);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(SameBits(y[i], ScalarSwish(x[i], alpha))) << "x=" << x[i] << " alpha=" << alpha;
      ASSERT_TRUE(SameBits(g[i], ScalarSwiGlu(x[i], b[i], alpha))) << "a=" << x[i] << " b=" << b[i];
    }
  }
}

TEST_P(SwishLoopTest, FloatIsAccurate) {
  const float alpha = GetParam();
  const std::vector<float> x = testing::RandomFloats(4096, 3, -30.0f, 30.0f);
  std::vector<float> y(x.size());
  SwishLoop(x.data(), y.data(), static_cast<int64_t>(x.size()), alpha);
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = FloatSwishInDouble(x[i], alpha);
    ASSERT_NEAR(y[i], want, 1e-6 * std::abs(want) + 1e-37) << "x=" << x[i];
  }
}

TEST_P(SwishLoopTest, InPlaceGivesTheSameResult) {
  const float alpha = GetParam();
  const std::vector<float> x = Inputs(333, 4);
  std::vector<float> y(x.size());
  SwishLoop(x.data(), y.data(), static_cast<int64_t>(x.size()), alpha);
  std::vector<float> inplace = x;
  SwishLoop(inplace.data(), inplace.data(), static_cast<int64_t>(x.size()), alpha);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_TRUE(SameBits(inplace[i], y[i]));
}

TEST_P(SwishLoopTest, HalfTypesRoundTheFloatResultOnce) {
  const float alpha = GetParam();
  const std::vector<float> xf = Inputs(512, 5);
  std::vector<Float16> xh(xf.size()), yh(xf.size()), bh(xf.size()), gh(xf.size());
  std::vector<BFloat16> xb(xf.size()), yb(xf.size()), bb(xf.size()), gb(xf.size());
  const std::vector<float> bf = testing::RandomFloats(xf.size(), 6, -3.0f, 3.0f);
  for (size_t i = 0; i < xf.size(); ++i) {
    xh[i] = Float16(xf[i]), xb[i] = BFloat16(xf[i]);
    bh[i] = Float16(bf[i]), bb[i] = BFloat16(bf[i]);
  }
  const auto n = static_cast<int64_t>(xf.size());
  SwishLoop(xh.data(), yh.data(), n, alpha);
  SwishLoop(xb.data(), yb.data(), n, alpha);
  SwiGluLoop(xh.data(), bh.data(), gh.data(), n, alpha);
  SwiGluLoop(xb.data(), bb.data(), gb.data(), n, alpha);
  for (size_t i = 0; i < xf.size(); ++i) {
    const float h = static_cast<float>(xh[i]), b = static_cast<float>(xb[i]);
    ASSERT_EQ(yh[i].bits, Float16(ScalarSwish(h, alpha)).bits) << "x=" << h;
    ASSERT_EQ(yb[i].bits, BFloat16(ScalarSwish(b, alpha)).bits) << "x=" << b;
    ASSERT_EQ(gh[i].bits, Float16(ScalarSwiGlu(h, static_cast<float>(bh[i]), alpha)).bits);
    ASSERT_EQ(gb[i].bits, BFloat16(ScalarSwiGlu(b, static_cast<float>(bb[i]), alpha)).bits);
  }
}

TEST_P(SwishLoopTest, DoubleIsStableOnBothTails) {
  const float alpha = GetParam();
  const double x[] = {0.0, 1.0, -1.0, 30.0, -30.0, 800.0, -800.0, 1e-300, -1e-300};
  double y[std::size(x)], g[std::size(x)];
  const double b[std::size(x)] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  SwishLoop(x, y, std::size(x), alpha);
  SwiGluLoop(x, b, g, std::size(x), alpha);
  for (size_t i = 0; i < std::size(x); ++i) {
    const double want = DoubleSwish(x[i], static_cast<double>(alpha));
    EXPECT_FALSE(std::isnan(y[i])) << "x=" << x[i];
    EXPECT_NEAR(y[i], want, 1e-15 * std::abs(want) + 1e-300) << "x=" << x[i];
    EXPECT_EQ(g[i], y[i]);
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double out;
  SwishLoop(&nan, &out, 1, alpha);
  EXPECT_TRUE(std::isnan(out));
}

INSTANTIATE_TEST_SUITE_P(Alphas, SwishLoopTest, ::testing::Values(1.0f, 0.5f, -1.25f, 0.0f, 1.702f));

// ---- through the kernels --------------------------------------------------------------------

// A [rows, cols] float view into storage with `pitch` columns per row.
Tensor StridedMatrix(int64_t rows, int64_t cols, int64_t pitch, uint32_t seed) {
  auto data = std::make_shared<std::vector<float>>(testing::RandomFloats(static_cast<size_t>(rows * pitch), seed, -4, 4));
  return Tensor(DataType::kFloat, {rows, cols}, data, data->data(), {pitch, 1});
}

TEST(SwishKernel, StridedInputsAreRead) {
  const Tensor a = StridedMatrix(5, 7, 11, 1);
  const Tensor b = StridedMatrix(5, 7, 9, 2);
  const testing::OneNodeRun swish = testing::RunOneNode(
      {.op_type = "Swish", .opset = 24, .inputs = {{"a", a}}, .output_types = {DataType::kFloat},
       .attributes = {testing::FloatAttribute("alpha", 0.75f)}});
  const testing::OneNodeRun glu = testing::RunOneNode(
      {.op_type = "SwiGLU", .opset = 28, .inputs = {{"a", a}, {"b", b}}, .output_types = {DataType::kFloat}});
  const std::vector<float> as = testing::FloatValues(a), bs = testing::FloatValues(b);
  const std::vector<float> y = testing::FloatValues(swish.outputs[0]), g = testing::FloatValues(glu.outputs[0]);
  for (size_t i = 0; i < as.size(); ++i) {
    EXPECT_TRUE(SameBits(y[i], ScalarSwish(as[i], 0.75f)));
    EXPECT_TRUE(SameBits(g[i], ScalarSwiGlu(as[i], bs[i], 1.0f)));
  }
  EXPECT_EQ(swish.usage, std::vector<std::string>{"Swish/float32/strided"});
  EXPECT_EQ(glu.usage, std::vector<std::string>{"SwiGLU/float32/strided"});
}

TEST(SwishKernel, ThreadCountDoesNotChangeResults) {
  const int64_t n = (int64_t{1} << 17) + 5;  // several pool tasks
  const Tensor a = testing::FloatTensor({n}, testing::RandomFloats(static_cast<size_t>(n), 3, -6, 6));
  const Tensor b = testing::FloatTensor({n}, testing::RandomFloats(static_cast<size_t>(n), 4, -6, 6));
  std::vector<float> first;
  for (int threads : {1, 2, 3}) {
    const testing::OneNodeRun run = testing::RunOneNode({.op_type = "SwiGLU", .opset = 28, .inputs = {{"a", a}, {"b", b}},
                                                         .output_types = {DataType::kFloat}, .num_threads = threads});
    const std::vector<float> y = testing::FloatValues(run.outputs[0]);
    if (first.empty()) first = y;
    ASSERT_EQ(std::memcmp(first.data(), y.data(), y.size() * sizeof(float)), 0) << threads << " threads";
    EXPECT_EQ(run.usage, std::vector<std::string>{"SwiGLU/float32/loop"});
  }
}

}  // namespace
}  // namespace onnx_light::runtime

// BroadcastPlan (dimension merging, strided views, paths), the fast float32 math and
// half-precision conversions used by the elementwise kernels, and the float to integer
// conversion of Cast and Pow.
#include "kernels/elementwise/elementwise_loops.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/elementwise/fast_math.h"

namespace onnx_light::runtime {
namespace {

Tensor View(std::vector<float>& data, Shape shape, Shape strides = {}) {
  return Tensor(DataType::kFloat, std::move(shape), nullptr, data.data(), std::move(strides));
}

// Every (output offset, input offsets) the plan visits, element by element.
std::vector<std::vector<int64_t>> Visit(const BroadcastPlan& plan) {
  std::vector<std::vector<int64_t>> out;
  plan.ForEachRun([&](int64_t o, const int64_t* off, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> row{o + i};
      for (int k = 0; k < plan.num_inputs(); ++k) row.push_back(off[k] + i * plan.inner_stride(k));
      out.push_back(row);
    }
  });
  return out;
}

// The same walk done naively with full index arithmetic.
std::vector<std::vector<int64_t>> Naive(const std::vector<const Tensor*>& inputs,
                                        const Shape& out_shape) {
  std::vector<std::vector<int64_t>> out;
  const int64_t total = ShapeSize(out_shape);
  std::vector<Shape> strides;
  for (const Tensor* t : inputs) {
    Shape s(out_shape.size(), 0);
    const Shape ts = t->strides();
    for (size_t k = 0; k < t->shape().size(); ++k) {
      const size_t d = k + out_shape.size() - t->shape().size();
      s[d] = t->shape()[k] == 1 ? 0 : ts[k];
    }
    strides.push_back(s);
  }
  for (int64_t flat = 0; flat < total; ++flat) {
    std::vector<int64_t> row{flat};
    for (const Shape& s : strides) {
      int64_t rem = flat;
      int64_t offset = 0;
      for (size_t d = out_shape.size(); d-- > 0;) {
        offset += (rem % out_shape[d]) * s[d];
        rem /= out_shape[d];
      }
      row.push_back(offset);
    }
    out.push_back(row);
  }
  return out;
}

TEST(BroadcastPlan, SameShapeIsOneRun) {
  std::vector<float> a(24), b(24);
  const Tensor ta = View(a, {2, 3, 4});
  const Tensor tb = View(b, {2, 3, 4});
  const Tensor* in[] = {&ta, &tb};
  const BroadcastPlan plan(in, {2, 3, 4});
  EXPECT_TRUE(plan.single_run());
  EXPECT_EQ(plan.PathName(), "same-shape");
  EXPECT_EQ(plan.inner_stride(0), 1);
  EXPECT_EQ(plan.inner_stride(1), 1);
}

TEST(BroadcastPlan, ScalarOperandIsOneRunWithStrideZero) {
  std::vector<float> a(24), b(1);
  const Tensor ta = View(a, {2, 3, 4});
  const Tensor tb = View(b, {1, 1});
  const Tensor* in[] = {&ta, &tb};
  const BroadcastPlan plan(in, {2, 3, 4});
  EXPECT_TRUE(plan.single_run());
  EXPECT_EQ(plan.PathName(), "scalar");
  EXPECT_EQ(plan.inner_stride(1), 0);
}

TEST(BroadcastPlan, MatchesNaiveIndexing) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3, 4}, {3, 1}}, {{2, 3, 4}, {4}}, {{1, 3, 1}, {2, 1, 4}}, {{2, 1, 4, 1}, {3, 1, 5}},
      {{5}, {}},           {{}, {}},         {{3, 1}, {1, 3}},       {{2, 3, 1, 5}, {2, 1, 4, 5}}};
  for (const auto& [sa, sb] : cases) {
    std::vector<float> a(static_cast<size_t>(ShapeSize(sa))), b(static_cast<size_t>(ShapeSize(sb)));
    const Tensor ta = View(a, sa);
    const Tensor tb = View(b, sb);
    const Tensor* in[] = {&ta, &tb};
    RuntimeContext rt(KernelContext(DefaultOpset(23)));
    const BroadcastPlan plan = BroadcastPlan::Make(rt, in);
    EXPECT_EQ(Visit(plan), Naive({&ta, &tb}, Shape(plan.output_shape().begin(), plan.output_shape().end())))
        << ShapeToString(sa) << " with " << ShapeToString(sb);
  }
}

TEST(BroadcastPlan, StridedViewsAreReadInPlace) {
  // A [2, 3] view with row stride 5 (spare capacity) and a transposed [3, 2] -> [2, 3] view.
  std::vector<float> a(10), b(6);
  const Tensor ta = View(a, {2, 3}, {5, 1});
  const Tensor tb = View(b, {2, 3}, {1, 2});
  const Tensor* in[] = {&ta, &tb};
  const BroadcastPlan plan(in, {2, 3});
  EXPECT_EQ(plan.PathName(), "strided");
  EXPECT_EQ(Visit(plan), Naive({&ta, &tb}, {2, 3}));

  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(10 * i);
  std::vector<float> out(6);
  RunBinary(plan, a.data(), b.data(), out.data(), [](float x, float y) { return x + y; });
  EXPECT_EQ(out, (std::vector<float>{0, 21, 42, 15, 36, 57}));
}

TEST(BroadcastPlan, EmptyOutputVisitsNothing) {
  std::vector<float> a(1), b(3);
  const Tensor ta = View(a, {0, 3});
  const Tensor tb = View(b, {3});
  const Tensor* in[] = {&ta, &tb};
  const BroadcastPlan plan(in, {0, 3});
  EXPECT_TRUE(Visit(plan).empty());
}

// ---- fast math
// -----------------------------------------------------------------------------------

double UlpError(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : 1e30;
  const float wf = static_cast<float>(want);
  if (std::isinf(wf)) return got == wf ? 0 : 1e30;
  const float a = std::fabs(wf);
  float ulp = std::nextafter(a, std::numeric_limits<float>::infinity()) - a;
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

template <typename Fast, typename Exact>
double MaxUlp(Fast fast, Exact exact, float lo, float hi) {
  double worst = 0;
  for (int i = 0; i <= 200000; ++i) {
    const float x = lo + (hi - lo) * static_cast<float>(i) / 200000.0f;
    worst = std::max(worst, UlpError(fast(x), exact(static_cast<double>(x))));
  }
  return worst;
}

// The fast_math functions are always_inline: they are called directly inside lambdas, never
// through a function pointer (which GCC below -O2 cannot inline, and then refuses to compile).
const auto kFastExp = [](float x) { return fast_math::Exp(x); };
const auto kFastTanh = [](float x) { return fast_math::Tanh(x); };
const auto kFastSigmoid = [](float x) { return fast_math::Sigmoid(x); };
const auto kFastErf = [](float x) { return fast_math::Erf(x); };

TEST(FastMath, AccuracyAgainstDoubleLibm) {
  EXPECT_LT(MaxUlp(kFastExp, [](double x) { return std::exp(x); }, -103.0f, 88.7f), 2.0);
  EXPECT_LT(MaxUlp(kFastTanh, [](double x) { return std::tanh(x); }, -10.0f, 10.0f), 8.0);
  EXPECT_LT(MaxUlp(kFastSigmoid, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -100.0f, 40.0f), 4.0);
  EXPECT_LT(MaxUlp(kFastErf, [](double x) { return std::erf(x); }, -6.0f, 6.0f), 8.0);
}

TEST(FastMath, ExpNonPositiveIsExpDownToItsCutoff) {
  for (int i = 0; i <= 400000; ++i) {
    const float x = -87.5f * static_cast<float>(i) / 400000.0f;
    ASSERT_EQ(std::bit_cast<uint32_t>(fast_math::ExpNonPositive(x)), std::bit_cast<uint32_t>(fast_math::Exp(x))) << x;
  }
  EXPECT_EQ(fast_math::ExpNonPositive(-87.6f), 0.0f);
  EXPECT_EQ(fast_math::ExpNonPositive(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isnan(fast_math::ExpNonPositive(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(fast_math::ExpNonPositive(-0.0f), 1.0f);
}

TEST(FastMath, ExpNonPositiveWithSubnormalsIsExpOnEveryNonPositiveFloat) {
  // Every 97th bit pattern of the negative floats, from -0 to -inf, subnormal results included.
  const uint32_t negative_infinity = std::bit_cast<uint32_t>(-std::numeric_limits<float>::infinity());
  for (uint32_t bits = 0x80000000u; bits <= negative_infinity; bits += 97) {
    const float x = std::bit_cast<float>(bits);
    ASSERT_EQ(std::bit_cast<uint32_t>(fast_math::ExpNonPositiveWithSubnormals(x)),
              std::bit_cast<uint32_t>(fast_math::Exp(x)))
        << x;
  }
  EXPECT_EQ(fast_math::ExpNonPositiveWithSubnormals(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(fast_math::ExpNonPositiveWithSubnormals(0.0f), 1.0f);
  EXPECT_GT(fast_math::ExpNonPositiveWithSubnormals(-100.0f), 0.0f);
  EXPECT_TRUE(std::isnan(fast_math::ExpNonPositiveWithSubnormals(std::numeric_limits<float>::quiet_NaN())));
}

TEST(FastMath, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(fast_math::Exp(inf), inf);
  EXPECT_EQ(fast_math::Exp(-inf), 0.0f);
  EXPECT_EQ(fast_math::Exp(100.0f), inf);
  EXPECT_EQ(fast_math::Exp(0.0f), 1.0f);
  EXPECT_GT(fast_math::Exp(-100.0f), 0.0f);  // subnormal, not flushed
  EXPECT_EQ(fast_math::Tanh(inf), 1.0f);
  EXPECT_EQ(fast_math::Tanh(-inf), -1.0f);
  EXPECT_EQ(fast_math::Tanh(1e-6f), 1e-6f);
  EXPECT_EQ(fast_math::Sigmoid(inf), 1.0f);
  EXPECT_EQ(fast_math::Sigmoid(-inf), 0.0f);
  EXPECT_GT(fast_math::Sigmoid(-100.0f), 0.0f);
  EXPECT_EQ(fast_math::Erf(inf), 1.0f);
  EXPECT_EQ(fast_math::Erf(-inf), -1.0f);
  EXPECT_TRUE(std::isnan(kFastExp(nan)));
  EXPECT_TRUE(std::isnan(kFastTanh(nan)));
  EXPECT_TRUE(std::isnan(kFastSigmoid(nan)));
  EXPECT_TRUE(std::isnan(kFastErf(nan)));
}

TEST(FastMath, HalfConversionsMatchFloat16) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const float a = Float16::ToFloat(bits);
    const float b = fast_math::HalfToFloat(bits);
    ASSERT_EQ(std::bit_cast<uint32_t>(a), std::bit_cast<uint32_t>(b)) << h;
    ASSERT_EQ(std::bit_cast<uint32_t>(BFloat16::ToFloat(bits)),
              std::bit_cast<uint32_t>(fast_math::BFloat16ToFloat(bits)));
  }
  // Every float whose low bits vary around the rounding points, across all exponents and signs.
  for (uint32_t high = 0; high < (1u << 12); ++high) {
    for (uint32_t low : {0x0000u, 0x0fffu, 0x1000u, 0x1001u, 0x2fffu, 0x3000u, 0x7fffu, 0x8000u,
                         0x8001u, 0xffffu, 0x17fffu, 0x18000u, 0xfffffu}) {
      const uint32_t bits = (high << 20) | low;
      const float f = std::bit_cast<float>(bits);
      ASSERT_EQ(Float16::FromFloat(f), fast_math::FloatToHalf(f)) << std::hex << bits;
      ASSERT_EQ(BFloat16::FromFloat(f), fast_math::FloatToBFloat16(f)) << std::hex << bits;
    }
  }
}

// FloatToInt against the documented rule computed in long double (exact for every 64-bit
// integer): NaN -> 0, beyond the range -> the nearest bound, otherwise truncation.
template <typename I, typename C>
I SaturatedReference(C v) {
  if (std::isnan(v)) return 0;
  const long double t = std::trunc(static_cast<long double>(v));
  if (t < static_cast<long double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (t > static_cast<long double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(t);
}

template <typename I, typename C>
void CheckFloatToInt() {
  std::vector<C> values = {C(0), -C(0), C(0.5), C(-0.5), C(0.99), C(-0.99), C(1.5), C(-1.5),
                           std::numeric_limits<C>::infinity(), -std::numeric_limits<C>::infinity(),
                           std::numeric_limits<C>::quiet_NaN(), -std::numeric_limits<C>::quiet_NaN(),
                           std::numeric_limits<C>::max(), std::numeric_limits<C>::lowest(),
                           std::numeric_limits<C>::denorm_min()};
  // A few representable values on each side of both bounds (the bound itself rounds up to 2^k
  // when C cannot hold it).
  for (const C bound : {static_cast<C>(std::numeric_limits<I>::min()), static_cast<C>(std::numeric_limits<I>::max())}) {
    C up = bound, down = bound;
    for (int i = 0; i < 4; ++i) {
      values.push_back(up);
      values.push_back(down);
      values.push_back(up + C(0.5));
      values.push_back(down - C(0.5));
      up = std::nextafter(up, std::numeric_limits<C>::infinity());
      down = std::nextafter(down, -std::numeric_limits<C>::infinity());
    }
  }
  for (const C v : values) {
    EXPECT_EQ(FloatToInt<I>(v), SaturatedReference<I>(v)) << "value " << static_cast<long double>(v);
  }
}

template <typename I>
class FloatToIntTest : public ::testing::Test {};
using IntegerTypes = ::testing::Types<int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t, uint64_t>;
TYPED_TEST_SUITE(FloatToIntTest, IntegerTypes);

TYPED_TEST(FloatToIntTest, SaturatesAndMapsNaNToZero) {
  CheckFloatToInt<TypeParam, float>();
  CheckFloatToInt<TypeParam, double>();
}

TEST(FloatToInt, BoolIsNonZero) {
  EXPECT_FALSE(FloatToInt<bool>(0.0f));
  EXPECT_FALSE(FloatToInt<bool>(-0.0));
  EXPECT_TRUE(FloatToInt<bool>(std::numeric_limits<float>::quiet_NaN()));
  EXPECT_TRUE(FloatToInt<bool>(-0.25));
}

}  // namespace
}  // namespace onnx_light::runtime

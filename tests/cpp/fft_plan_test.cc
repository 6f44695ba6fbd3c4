// FftPlan (kernels/signal/fft_plan.h) against a direct O(n^2) DFT in double (long double
// accumulation): kissfft's own stages, Bluestein's chirp-z for large prime factors, both
// directions, and plans shared by several threads.
#include "kernels/signal/fft_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <random>
#include <thread>
#include <vector>

namespace onnx_light::runtime {
namespace {

std::vector<std::complex<double>> DirectDft(const std::vector<std::complex<double>>& x, bool inverse) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<std::complex<double>> y(x.size());
  const long double sign = inverse ? 1.0L : -1.0L;
  std::vector<long double> cosines(x.size()), sines(x.size());  // of 2 pi t / n, t < n
  for (int64_t t = 0; t < n; ++t) {
    const long double angle = sign * 2.0L * std::numbers::pi_v<long double> * static_cast<long double>(t) / n;
    cosines[t] = std::cos(angle);
    sines[t] = std::sin(angle);
  }
  for (int64_t k = 0; k < n; ++k) {
    long double re = 0, im = 0;
    for (int64_t j = 0; j < n; ++j) {
      const long double c = cosines[(j * k) % n], s = sines[(j * k) % n];
      re += x[j].real() * c - x[j].imag() * s;
      im += x[j].real() * s + x[j].imag() * c;
    }
    y[k] = {static_cast<double>(re), static_cast<double>(im)};
  }
  return y;
}

std::vector<std::complex<double>> RandomSignal(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<std::complex<double>> x(static_cast<size_t>(n));
  for (auto& v : x) v = {dist(gen), dist(gen)};
  return x;
}

// The largest error relative to the largest output magnitude.
template <typename T>
double RelativeError(const std::vector<std::complex<T>>& got, const std::vector<std::complex<double>>& want) {
  double err = 0, scale = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    const std::complex<double> g(got[k].real(), got[k].imag());
    err = std::max(err, std::abs(g - want[k]));
    scale = std::max(scale, std::abs(want[k]));
  }
  return err / scale;
}

template <typename T>
std::vector<std::complex<T>> RunPlan(const FftPlan<T>& plan, const std::vector<std::complex<double>>& x) {
  std::vector<std::complex<T>> in(x.size()), out(x.size()), scratch(static_cast<size_t>(plan.scratch_size()));
  for (size_t i = 0; i < x.size(); ++i) in[i] = {static_cast<T>(x[i].real()), static_cast<T>(x[i].imag())};
  plan.Transform(in.data(), out.data(), scratch.data());
  return out;
}

TEST(FftPlanTest, ChoosesBluesteinForLargePrimeFactors) {
  EXPECT_FALSE(FftPlan<float>::NeedsBluestein(1024));
  EXPECT_FALSE(FftPlan<float>::NeedsBluestein(400));
  EXPECT_FALSE(FftPlan<float>::NeedsBluestein(31 * 8));
  EXPECT_TRUE(FftPlan<float>::NeedsBluestein(37));
  EXPECT_TRUE(FftPlan<float>::NeedsBluestein(1009));
  EXPECT_TRUE(FftPlan<float>::NeedsBluestein(2 * 1009));
  // double keeps kissfft's generic butterfly out entirely (it is not thread-safe).
  EXPECT_FALSE(FftPlan<double>::NeedsBluestein(2 * 3 * 4 * 5 * 25));
  EXPECT_TRUE(FftPlan<double>::NeedsBluestein(7));
  EXPECT_TRUE(FftPlan<double>::NeedsBluestein(1009));
}

TEST(FftPlanTest, DoubleMatchesDirectDft) {
  for (int64_t n : {1, 2, 3, 5, 7, 8, 12, 37, 97, 100, 127, 400, 1009, 1024, 2 * 1009}) {
    for (bool inverse : {false, true}) {
      const auto x = RandomSignal(n, static_cast<unsigned>(n));
      const FftPlan<double> plan(n, inverse);
      EXPECT_LT(RelativeError(RunPlan(plan, x), DirectDft(x, inverse)), 1e-12) << "n=" << n << " inverse=" << inverse;
    }
  }
}

TEST(FftPlanTest, FloatMatchesDirectDft) {
  for (int64_t n : {1, 2, 3, 7, 11, 31, 37, 97, 400, 1009, 1024, 3 * 1009}) {
    for (bool inverse : {false, true}) {
      const auto x = RandomSignal(n, static_cast<unsigned>(n) + 1);
      const FftPlan<float> plan(n, inverse);
      EXPECT_EQ(plan.uses_bluestein(), FftPlan<float>::NeedsBluestein(n));
      EXPECT_LT(RelativeError(RunPlan(plan, x), DirectDft(x, inverse)), 2e-6) << "n=" << n << " inverse=" << inverse;
    }
  }
}

TEST(FftPlanTest, SplitRealPairSeparatesTwoRealTransforms) {
  const int64_t n = 45;
  auto a = RandomSignal(n, 3), b = RandomSignal(n, 4);
  std::vector<std::complex<double>> ra(a.size()), rb(b.size()), packed(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ra[i] = {a[i].real(), 0};
    rb[i] = {b[i].real(), 0};
    packed[i] = {a[i].real(), b[i].real()};
  }
  const FftPlan<double> plan(n, false);
  const auto z = RunPlan(plan, packed);
  std::vector<std::complex<double>> xa(n), xb(n);
  SplitRealPair(z.data(), n, n, xa.data(), xb.data());
  EXPECT_LT(RelativeError(xa, DirectDft(ra, false)), 1e-12);
  EXPECT_LT(RelativeError(xb, DirectDft(rb, false)), 1e-12);
}

template <typename T>
void ExpectSharedPlanIsThreadSafe(int64_t n, double tolerance) {
  FftPlanCache<T> cache;
  const auto x = RandomSignal(n, 9);
  const auto want = DirectDft(x, false);
  std::vector<double> errors(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < errors.size(); ++t) {
    threads.emplace_back([&, t] {
      double worst = 0;
      for (int rep = 0; rep < 20; ++rep) worst = std::max(worst, RelativeError(RunPlan(*cache.Get(n, false), x), want));
      errors[t] = worst;
    });
  }
  for (auto& th : threads) th.join();
  for (double e : errors) EXPECT_LT(e, tolerance) << "n=" << n;
  EXPECT_EQ(cache.Get(n, false).get(), cache.Get(n, false).get());
  EXPECT_NE(cache.Get(n, false).get(), cache.Get(n, true).get());
}

TEST(FftPlanTest, PlanIsSharedSafelyByThreads) {
  ExpectSharedPlanIsThreadSafe<double>(1009, 1e-12);  // Bluestein
  ExpectSharedPlanIsThreadSafe<double>(2 * 3 * 5 * 16, 1e-12);
  ExpectSharedPlanIsThreadSafe<float>(2 * 7 * 31, 2e-6);  // kissfft's generic radix 7 and 31
  ExpectSharedPlanIsThreadSafe<float>(1009, 2e-6);
}

TEST(FftPlanTest, CacheKeepsAtMostAFewPlans) {
  FftPlanCache<float> cache;
  const auto first = cache.Get(16, false);
  for (int64_t n = 17; n < 40; ++n) cache.Get(n, false);
  // The first plan was dropped from the cache but stays valid for its holder.
  EXPECT_NE(cache.Get(16, false).get(), first.get());
  EXPECT_EQ(first->size(), 16);
}

}  // namespace
}  // namespace onnx_light::runtime

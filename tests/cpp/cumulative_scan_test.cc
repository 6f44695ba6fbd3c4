// The scan behind CumSum and CumProd against a plain loop over (outer, axis, inner), for every
// exclusive/reverse combination, on the last-axis and strided paths, on one thread and spread
// over a pool (block split and column split): results must be identical.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/tensor/cumulative_scan.h"
#include "test_util.h"

namespace onnx_light::runtime {
namespace {

struct Case {
  AxisSplit split;
  bool exclusive;
  bool reverse;
};

template <typename T, typename Combine>
std::vector<T> PlainScan(const std::vector<T>& x, const Case& c, ComputeType<T> identity, Combine combine) {
  const AxisSplit& s = c.split;
  std::vector<T> y(x.size());
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      ComputeType<T> acc = identity;
      for (int64_t step = 0; step < s.axis; ++step) {
        const int64_t k = c.reverse ? s.axis - 1 - step : step;
        const size_t at = static_cast<size_t>((o * s.axis + k) * s.inner + i);
        if (c.exclusive) y[at] = FromCompute<T>(acc);
        acc = combine(acc, ToCompute(x[at]));
        if (!c.exclusive) y[at] = FromCompute<T>(acc);
      }
    }
  }
  return y;
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (AxisSplit s : {AxisSplit{3, 5, 1}, AxisSplit{2, 4, 7}, AxisSplit{1, 6, 9}, AxisSplit{1, 1, 1},
                      AxisSplit{4, 0, 3}, AxisSplit{2000, 20, 1}, AxisSplit{40, 30, 50}, AxisSplit{1, 9, 5000}}) {
    for (bool exclusive : {false, true}) {
      for (bool reverse : {false, true}) cases.push_back({s, exclusive, reverse});
    }
  }
  return cases;
}

template <typename T, typename Combine>
void CheckScan(const std::vector<T>& x, const Case& c, ComputeType<T> identity, Combine combine) {
  const std::vector<T> want = PlainScan(x, c, identity, combine);
  ThreadPool pool(3);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    std::vector<T> y(x.size());
    const char* path = CumulativeScan<T>(x.data(), y.data(), c.split, c.exclusive, c.reverse, identity, combine, p);
    // memcmp takes no null pointers, which empty vectors may hold.
    ASSERT_TRUE(y.empty() || std::memcmp(y.data(), want.data(), y.size() * sizeof(T)) == 0)
        << "outer " << c.split.outer << " axis " << c.split.axis << " inner " << c.split.inner << " exclusive "
        << c.exclusive << " reverse " << c.reverse << (p ? " on the pool" : "");
    const std::string expected_path = x.empty() ? "empty" : (c.split.inner == 1 ? "last-axis" : "strided");
    EXPECT_EQ(path, expected_path);
  }
}

TEST(CumulativeScan, FloatProductsAndSumsMatchPlainLoop) {
  for (const Case& c : Cases()) {
    const size_t n = static_cast<size_t>(c.split.outer * c.split.axis * c.split.inner);
    const std::vector<float> x = testing::RandomFloats(n, 7, 0.9f, 1.1f);
    CheckScan<float>(x, c, 1.0f, [](float a, float b) { return a * b; });
    CheckScan<float>(x, c, 0.0f, [](float a, float b) { return a + b; });
  }
}

TEST(CumulativeScan, HalfAccumulatesInFloat) {
  for (const Case& c : Cases()) {
    const size_t n = static_cast<size_t>(c.split.outer * c.split.axis * c.split.inner);
    const std::vector<float> f = testing::RandomFloats(n, 8, 0.8f, 1.2f);
    std::vector<Float16> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = Float16(f[i]);
    CheckScan<Float16>(x, c, 1.0f, [](float a, float b) { return a * b; });
  }
}

TEST(CumulativeScan, IntegerProductsWrap) {
  for (const Case& c : Cases()) {
    const size_t n = static_cast<size_t>(c.split.outer * c.split.axis * c.split.inner);
    std::vector<int32_t> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<int32_t>(i % 13) - 6;
    CheckScan<int32_t>(x, c, 1, [](int32_t a, int32_t b) { return WrapMul(a, b); });
  }
  // 3^40 overflows int64: the product wraps like numpy's instead of being undefined.
  const std::vector<int64_t> x(40, 3);
  std::vector<int64_t> y(x.size());
  CumulativeScan<int64_t>(x.data(), y.data(), {1, 40, 1}, false, false, 1,
                          [](int64_t a, int64_t b) { return WrapMul(a, b); }, nullptr);
  uint64_t want = 1;
  for (int i = 0; i < 40; ++i) want *= 3;
  EXPECT_EQ(static_cast<uint64_t>(y.back()), want);
}

}  // namespace
}  // namespace onnx_light::runtime

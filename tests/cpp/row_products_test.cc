// RowDots and WeightedRowSum (the dispatched and the portable versions; float32, float16 and
// bfloat16 rows) against plain double-precision loops, over widths that exercise every block,
// panel and tail, and rows with spare capacity between them.
#include "kernels/math/row_products.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace onnx_light::runtime {
namespace {

struct Shape2 {
  int64_t n;
  int64_t width;
  int64_t stride;  // >= width: spare capacity between rows, like a key/value cache
};

class RowProductsTest : public ::testing::TestWithParam<Shape2> {
 protected:
  void SetUp() override {
    const Shape2 s = GetParam();
    std::mt19937 gen(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    rows_.resize(static_cast<size_t>(s.n * s.stride + 1));
    for (float& v : rows_) v = dist(gen);
    x_.resize(static_cast<size_t>(s.width));
    for (float& v : x_) v = dist(gen);
    weights_.resize(static_cast<size_t>(s.n));
    for (float& v : weights_) v = dist(gen);
  }

  double Row(int64_t j, int64_t c) const { return rows_[static_cast<size_t>(j * GetParam().stride + c)]; }

  std::vector<float> rows_, x_, weights_;
};

TEST_P(RowProductsTest, RowDotsMatchReference) {
  const Shape2 s = GetParam();
  using Fn = void (*)(const float*, int64_t, int64_t, int64_t, const float*, float, float*);
  for (Fn fn : {static_cast<Fn>(&RowDots), static_cast<Fn>(&RowDotsPortable)}) {
    std::vector<float> out(static_cast<size_t>(s.n) + 1, -7.0f);
    fn(rows_.data(), s.stride, s.n, s.width, x_.data(), 0.5f, out.data());
    for (int64_t j = 0; j < s.n; ++j) {
      double expected = 0;
      for (int64_t c = 0; c < s.width; ++c) expected += Row(j, c) * x_[static_cast<size_t>(c)];
      EXPECT_NEAR(out[static_cast<size_t>(j)], 0.5 * expected, 1e-4) << "row " << j;
    }
    EXPECT_EQ(out[static_cast<size_t>(s.n)], -7.0f) << "wrote past the last row";
  }
}

TEST_P(RowProductsTest, WeightedRowSumMatchesReference) {
  const Shape2 s = GetParam();
  using Fn = void (*)(const float*, int64_t, int64_t, int64_t, const float*, float*);
  for (Fn fn : {static_cast<Fn>(&WeightedRowSum), static_cast<Fn>(&WeightedRowSumPortable)}) {
    std::vector<float> out(static_cast<size_t>(s.width) + 1, -7.0f);
    fn(rows_.data(), s.stride, s.n, s.width, weights_.data(), out.data());
    for (int64_t c = 0; c < s.width; ++c) {
      double expected = 0;
      for (int64_t j = 0; j < s.n; ++j) expected += weights_[static_cast<size_t>(j)] * Row(j, c);
      EXPECT_NEAR(out[static_cast<size_t>(c)], expected, 1e-4) << "column " << c;
    }
    EXPECT_EQ(out[static_cast<size_t>(s.width)], -7.0f) << "wrote past the last column";
  }
}

// Half-precision rows: the reference uses the rounded values, so only summation order differs.
template <typename E>
void CheckHalfRows(const Shape2& s, const std::vector<float>& rows, const std::vector<float>& x,
                   const std::vector<float>& weights) {
  std::vector<E> half(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) half[i] = E(rows[i]);
  const auto at = [&](int64_t j, int64_t c) { return double(float(half[static_cast<size_t>(j * s.stride + c)])); };
  using Dots = void (*)(const E*, int64_t, int64_t, int64_t, const float*, float, float*);
  using Sums = void (*)(const E*, int64_t, int64_t, int64_t, const float*, float*);
  for (Dots fn : {static_cast<Dots>(&RowDots), static_cast<Dots>(&RowDotsPortable)}) {
    std::vector<float> out(static_cast<size_t>(s.n) + 1, -7.0f);
    fn(half.data(), s.stride, s.n, s.width, x.data(), 2.0f, out.data());
    for (int64_t j = 0; j < s.n; ++j) {
      double expected = 0;
      for (int64_t c = 0; c < s.width; ++c) expected += at(j, c) * x[static_cast<size_t>(c)];
      EXPECT_NEAR(out[static_cast<size_t>(j)], 2.0 * expected, 2e-4) << "row " << j;
    }
    EXPECT_EQ(out[static_cast<size_t>(s.n)], -7.0f);
  }
  for (Sums fn : {static_cast<Sums>(&WeightedRowSum), static_cast<Sums>(&WeightedRowSumPortable)}) {
    std::vector<float> out(static_cast<size_t>(s.width) + 1, -7.0f);
    fn(half.data(), s.stride, s.n, s.width, weights.data(), out.data());
    for (int64_t c = 0; c < s.width; ++c) {
      double expected = 0;
      for (int64_t j = 0; j < s.n; ++j) expected += weights[static_cast<size_t>(j)] * at(j, c);
      EXPECT_NEAR(out[static_cast<size_t>(c)], expected, 2e-4) << "column " << c;
    }
    EXPECT_EQ(out[static_cast<size_t>(s.width)], -7.0f);
  }
}

TEST_P(RowProductsTest, Float16RowsMatchReference) { CheckHalfRows<Float16>(GetParam(), rows_, x_, weights_); }

TEST_P(RowProductsTest, BFloat16RowsMatchReference) { CheckHalfRows<BFloat16>(GetParam(), rows_, x_, weights_); }

INSTANTIATE_TEST_SUITE_P(Shapes, RowProductsTest,
                         ::testing::Values(Shape2{0, 64, 64}, Shape2{1, 64, 64}, Shape2{7, 64, 64},
                                           Shape2{300, 64, 64}, Shape2{33, 128, 160}, Shape2{9, 83, 91},
                                           Shape2{5, 16, 16}, Shape2{6, 15, 17}, Shape2{4, 1, 1},
                                           Shape2{3, 200, 256}, Shape2{6, 4100, 4100},
                                           // attention heads: every narrow width, row counts off the unroll
                                           Shape2{37, 16, 16}, Shape2{301, 32, 40}, Shape2{19, 48, 48},
                                           Shape2{2, 16, 48}));

}  // namespace
}  // namespace onnx_light::runtime

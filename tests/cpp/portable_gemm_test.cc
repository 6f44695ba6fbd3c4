// The loops a build without BLAS uses (ONNX_LIGHT_USE_BLAS=OFF) against the BLAS backend of this
// build, over transposes, alpha/beta, strides and shapes that are not multiples of the blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/math/blas_backend.h"
#include "kernels/math/portable_gemm.h"

namespace onnx_light::runtime {
namespace {

template <typename T>
std::vector<T> Random(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(dist(rng));
  return v;
}

template <typename T>
void CompareGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, T beta, double tolerance) {
  std::mt19937 rng(static_cast<unsigned>(m * 131 + n * 17 + k + ta * 2 + tb));
  const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 2;
  const std::vector<T> a = Random<T>(static_cast<size_t>((ta ? k : m) * lda), rng);
  const std::vector<T> b = Random<T>(static_cast<size_t>((tb ? n : k) * ldb), rng);
  std::vector<T> c = Random<T>(static_cast<size_t>(m * ldc), rng);
  if (beta == T{0}) c[0] = std::numeric_limits<T>::quiet_NaN();  // beta == 0 ignores C
  std::vector<T> expected = c;
  BlasGemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, expected.data(), ldc);
  PortableGemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      ASSERT_NEAR(c[i * ldc + j], expected[i * ldc + j], tolerance)
          << "ta=" << ta << " tb=" << tb << " m=" << m << " n=" << n << " k=" << k << " at " << i << "," << j;
    }
  }
}

TEST(PortableGemm, MatchesBlasBackend) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      CompareGemm<float>(ta, tb, 5, 7, 3, 1.0f, 0.0f, 1e-5);
      CompareGemm<float>(ta, tb, 33, 600, 300, 0.5f, 1.0f, 1e-3);  // several K and N blocks
      CompareGemm<float>(ta, tb, 2, 9, 1, 1.0f, -2.0f, 1e-5);
      CompareGemm<double>(ta, tb, 17, 530, 270, -1.5, 0.25, 1e-10);
    }
  }
}

template <typename T>
void CompareGemv(bool trans, int64_t rows, int64_t cols, T alpha, T beta, int64_t incx, int64_t incy) {
  std::mt19937 rng(static_cast<unsigned>(rows * 7 + cols + trans));
  const int64_t ld = cols + 5;
  const std::vector<T> matrix = Random<T>(static_cast<size_t>(rows * ld), rng);
  const int64_t x_len = trans ? rows : cols, y_len = trans ? cols : rows;
  const std::vector<T> x = Random<T>(static_cast<size_t>(x_len * incx), rng);
  std::vector<T> y = Random<T>(static_cast<size_t>(y_len * incy), rng);
  std::vector<T> expected = y;
  BlasGemv(trans, rows, cols, alpha, matrix.data(), ld, x.data(), incx, beta, expected.data(), incy);
  PortableGemv(trans, rows, cols, alpha, matrix.data(), ld, x.data(), incx, beta, y.data(), incy);
  for (int64_t i = 0; i < y_len; ++i) {
    ASSERT_NEAR(y[i * incy], expected[i * incy], 1e-4) << "trans=" << trans << " at " << i;
  }
}

TEST(PortableGemv, MatchesBlasBackend) {
  for (bool trans : {false, true}) {
    CompareGemv<float>(trans, 40, 70, 1.0f, 0.0f, 1, 1);
    CompareGemv<float>(trans, 13, 5, 2.0f, 0.5f, 3, 2);
    CompareGemv<double>(trans, 64, 9, -1.0, 1.0, 1, 4);
  }
}

}  // namespace
}  // namespace onnx_light::runtime

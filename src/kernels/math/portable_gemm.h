#pragma once
// The BLAS routines of blas_backend.h as plain loops, for builds without a BLAS library
// (ONNX_LIGHT_USE_BLAS=OFF, blas_backend_portable.cc). C is scaled by beta first, then
// alpha * op(A) * op(B) is added in blocks of K and N small enough to stay in cache, with the
// innermost loop running along a contiguous row so the compiler vectorises it. A header so the
// full build's tests can compare them with OpenBLAS. Stateless, thread-safe.

#include <algorithm>
#include <cstdint>
#include <vector>

namespace onnx_light::runtime {

template <typename T>
inline void PortableScaleC(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (beta == T{0}) {
      std::fill(row, row + n, T{0});  // BLAS semantics: beta == 0 ignores NaN in C
    } else if (beta != T{1}) {
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

/// As BlasGemm.
template <typename T>
void PortableGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  PortableScaleC(m, n, beta, c, ldc);
  if (alpha == T{0}) return;
  constexpr int64_t kBlockK = 256;
  constexpr int64_t kBlockN = 512;
  // op(B) rows as contiguous panels: a transposed B is copied once per K block.
  std::vector<T> panel(trans_b ? static_cast<size_t>(std::min(k, kBlockK) * std::min(n, kBlockN)) : 0);
  for (int64_t j0 = 0; j0 < n; j0 += kBlockN) {
    const int64_t nb = std::min(n, j0 + kBlockN) - j0;
    for (int64_t k0 = 0; k0 < k; k0 += kBlockK) {
      const int64_t kb = std::min(k, k0 + kBlockK) - k0;
      const T* bp = b + k0 * ldb + j0;
      int64_t ldp = ldb;
      if (trans_b) {
        for (int64_t kk = 0; kk < kb; ++kk) {
          for (int64_t j = 0; j < nb; ++j) panel[kk * nb + j] = b[(j0 + j) * ldb + k0 + kk];
        }
        bp = panel.data();
        ldp = nb;
      }
      for (int64_t i = 0; i < m; ++i) {
        T* out = c + i * ldc + j0;
        for (int64_t kk = 0; kk < kb; ++kk) {
          const T av = alpha * (trans_a ? a[(k0 + kk) * lda + i] : a[i * lda + k0 + kk]);
          const T* br = bp + kk * ldp;
          for (int64_t j = 0; j < nb; ++j) out[j] += av * br[j];
        }
      }
    }
  }
}

/// As BlasGemv.
template <typename T>
void PortableGemv(bool trans, int64_t rows, int64_t cols, T alpha, const T* matrix, int64_t ld, const T* x, int64_t incx,
          T beta, T* y, int64_t incy) {
  const int64_t out_len = trans ? cols : rows;
  for (int64_t i = 0; i < out_len; ++i) {
    T& yi = y[i * incy];
    yi = beta == T{0} ? T{0} : beta * yi;
  }
  if (!trans) {
    for (int64_t i = 0; i < rows; ++i) {
      const T* row = matrix + i * ld;
      T sum{0};
      for (int64_t j = 0; j < cols; ++j) sum += row[j] * x[j * incx];
      y[i * incy] += alpha * sum;
    }
    return;
  }
  // yᵀ += alpha * xᵀ M: stream M's rows, adding each scaled row into y.
  for (int64_t i = 0; i < rows; ++i) {
    const T xi = alpha * x[i * incx];
    const T* row = matrix + i * ld;
    for (int64_t j = 0; j < cols; ++j) y[j * incy] += xi * row[j];
  }
}


}  // namespace onnx_light::runtime

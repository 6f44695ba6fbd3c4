#pragma once
// The few BLAS routines the runtime calls, row-major. OpenBLAS serves them
// (blas_backend_openblas.cc) unless the build has ONNX_LIGHT_USE_BLAS=OFF, which compiles
// blas_backend_portable.cc instead: plain cache-blocked loops, the same results up to rounding
// order, slower on large products. Thread-safe: no state besides OpenBLAS's own.

#include <cstdint>

namespace onnx_light::runtime {

/// C[m, n] = alpha * op(A) * op(B) + beta * C with op(X) = X or Xᵀ; when beta == 0 C's old
/// contents are ignored (NaN included). m, n, k >= 1.
void BlasGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
              int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void BlasGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
              int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

/// y = alpha * op(M) * x + beta * y for M[rows, cols] with leading dimension ld.
void BlasGemv(bool trans, int64_t rows, int64_t cols, float alpha, const float* matrix, int64_t ld,
              const float* x, int64_t incx, float beta, float* y, int64_t incy);
void BlasGemv(bool trans, int64_t rows, int64_t cols, double alpha, const double* matrix, int64_t ld,
              const double* x, int64_t incx, double beta, double* y, int64_t incy);

/// Keeps the BLAS library from starting threads of its own (the session's pool splits work).
void UseSingleThreadedBlas();

/// "blas" with OpenBLAS, "loop" for the portable routines: the path name kernel usage reports.
const char* BlasPathName();

}  // namespace onnx_light::runtime

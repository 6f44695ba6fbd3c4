// blas_backend.h without a BLAS library (ONNX_LIGHT_USE_BLAS=OFF): the loops of portable_gemm.h.
#include "kernels/math/blas_backend.h"
#include "kernels/math/portable_gemm.h"

namespace onnx_light::runtime {

void BlasGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
              int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  PortableGemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void BlasGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
              int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  PortableGemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void BlasGemv(bool trans, int64_t rows, int64_t cols, float alpha, const float* matrix, int64_t ld,
              const float* x, int64_t incx, float beta, float* y, int64_t incy) {
  PortableGemv(trans, rows, cols, alpha, matrix, ld, x, incx, beta, y, incy);
}

void BlasGemv(bool trans, int64_t rows, int64_t cols, double alpha, const double* matrix, int64_t ld,
              const double* x, int64_t incx, double beta, double* y, int64_t incy) {
  PortableGemv(trans, rows, cols, alpha, matrix, ld, x, incx, beta, y, incy);
}

void UseSingleThreadedBlas() {}

const char* BlasPathName() { return "loop"; }

}  // namespace onnx_light::runtime

#include <cblas.h>

#include <algorithm>

#include "kernels/math/blas_backend.h"

namespace onnx_light::runtime {

namespace {

// BLAS rejects a leading dimension below 1 even when the matrix is empty.
blasint Ld(int64_t ld) { return static_cast<blasint>(std::max<int64_t>(ld, 1)); }
CBLAS_TRANSPOSE Trans(bool trans) { return trans ? CblasTrans : CblasNoTrans; }

}  // namespace

void BlasGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
              int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, Trans(trans_a), Trans(trans_b), static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, a, Ld(lda), b, Ld(ldb), beta, c, Ld(ldc));
}

void BlasGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
              int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, Trans(trans_a), Trans(trans_b), static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, a, Ld(lda), b, Ld(ldb), beta, c, Ld(ldc));
}

void BlasGemv(bool trans, int64_t rows, int64_t cols, float alpha, const float* matrix, int64_t ld,
              const float* x, int64_t incx, float beta, float* y, int64_t incy) {
  cblas_sgemv(CblasRowMajor, Trans(trans), static_cast<blasint>(rows), static_cast<blasint>(cols), alpha, matrix,
              Ld(ld), x, static_cast<blasint>(incx), beta, y, static_cast<blasint>(incy));
}

void BlasGemv(bool trans, int64_t rows, int64_t cols, double alpha, const double* matrix, int64_t ld,
              const double* x, int64_t incx, double beta, double* y, int64_t incy) {
  cblas_dgemv(CblasRowMajor, Trans(trans), static_cast<blasint>(rows), static_cast<blasint>(cols), alpha, matrix,
              Ld(ld), x, static_cast<blasint>(incx), beta, y, static_cast<blasint>(incy));
}

void UseSingleThreadedBlas() { openblas_set_num_threads(1); }

const char* BlasPathName() { return "blas"; }

}  // namespace onnx_light::runtime

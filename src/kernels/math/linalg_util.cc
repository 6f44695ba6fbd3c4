#include "kernels/math/linalg_util.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "core/strided_copy.h"
#include "core/thread_pool.h"
#include "kernels/math/blas_backend.h"
#include "kernels/math/row_products.h"
#include "kernels/nn/conv_pointwise.h"

namespace onnx_light::runtime {

namespace {

template <typename T>
void ScaleRows(int64_t m, int64_t n, double beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (beta == 0.0) {
      std::fill(row, row + n, T{0});
    } else if (beta != 1.0) {
      for (int64_t j = 0; j < n; ++j) row[j] = static_cast<T>(beta * static_cast<double>(row[j]));
    }
  }
}

// acc[M,N] += op(A) * op(B) with wrapping unsigned arithmetic (signed overflow is undefined).
template <typename U>
void AccumulateProduct(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const U* a, int64_t lda,
                       const U* b, int64_t ldb, U* acc, int64_t ldacc) {
  constexpr int64_t kBlockK = 128;
  constexpr int64_t kBlockN = 512;
  if (trans_b) {
    // B(kk, j) = b[j * ldb + kk]: row j of the stored B is contiguous along k, so take dot products.
    std::vector<U> a_row(trans_a ? static_cast<size_t>(k) : 0);
    for (int64_t i = 0; i < m; ++i) {
      const U* ar = a + i * lda;
      if (trans_a) {
        for (int64_t kk = 0; kk < k; ++kk) a_row[kk] = a[kk * lda + i];
        ar = a_row.data();
      }
      U* out = acc + i * ldacc;
      for (int64_t j = 0; j < n; ++j) {
        const U* br = b + j * ldb;
        U sum = 0;
        for (int64_t kk = 0; kk < k; ++kk) sum += ar[kk] * br[kk];
        out[j] += sum;
      }
    }
    return;
  }
  for (int64_t j0 = 0; j0 < n; j0 += kBlockN) {
    const int64_t j1 = std::min(n, j0 + kBlockN);
    for (int64_t k0 = 0; k0 < k; k0 += kBlockK) {
      const int64_t k1 = std::min(k, k0 + kBlockK);
      for (int64_t i = 0; i < m; ++i) {
        U* out = acc + i * ldacc;
        for (int64_t kk = k0; kk < k1; ++kk) {
          const U av = trans_a ? a[kk * lda + i] : a[i * lda + kk];
          if (av == 0) continue;
          const U* br = b + kk * ldb;
          for (int64_t j = j0; j < j1; ++j) out[j] += av * br[j];
        }
      }
    }
  }
}

template <typename T>
void IntegerGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const T* a,
                 int64_t lda, const T* b, int64_t ldb, double beta, T* c, int64_t ldc) {
  using U = std::make_unsigned_t<T>;
  const U* ua = reinterpret_cast<const U*>(a);
  const U* ub = reinterpret_cast<const U*>(b);
  if (alpha == 1.0 && (beta == 0.0 || beta == 1.0)) {
    ScaleRows(m, n, beta, c, ldc);
    AccumulateProduct(trans_a, trans_b, m, n, k, ua, lda, ub, ldb, reinterpret_cast<U*>(c), ldc);
    return;
  }
  // Non-unit scales: the exact integer product, then alpha * P + beta * C in double.
  std::vector<U> product(static_cast<size_t>(m * n), U{0});
  AccumulateProduct(trans_a, trans_b, m, n, k, ua, lda, ub, ldb, product.data(), n);
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    const U* p = product.data() + i * n;
    for (int64_t j = 0; j < n; ++j) {
      double v = alpha * static_cast<double>(static_cast<T>(p[j]));
      if (beta != 0.0) v += beta * static_cast<double>(row[j]);
      row[j] = static_cast<T>(v);
    }
  }
}

// C (m x n, m == 1 or n == 1) = alpha * op(A) * op(B) + beta * C as one row-major GEMV.
template <typename T>
void Gemv(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    // One contiguous row times a weight matrix (a decode step): the row products stream the
    // matrix once with register or L1 accumulators, a little faster than sgemv here.
    if (m == 1 && !trans_a && alpha == 1.0f && beta == 0.0f) {
      if (trans_b) {
        RowDots(b, ldb, n, k, a, 1.0f, c);
      } else {
        WeightedRowSum(b, ldb, k, n, a, c);
      }
      return;
    }
  }
  if (m == 1) {
    // c^T = op(B)^T * a^T: the row of op(A) is the vector.
    const int64_t inc_a = trans_a ? lda : 1;
    if (trans_b) {  // B is n x k
      BlasGemv(false, n, k, alpha, b, ldb, a, inc_a, beta, c, 1);
    } else {  // B is k x n
      BlasGemv(true, k, n, alpha, b, ldb, a, inc_a, beta, c, 1);
    }
    return;
  }
  // n == 1: c = op(A) * b, the column of op(B) is the vector.
  const int64_t inc_b = trans_b ? 1 : ldb;
  if (trans_a) {  // A is k x m
    BlasGemv(true, k, m, alpha, a, lda, b, inc_b, beta, c, ldc);
  } else {  // A is m x k
    BlasGemv(false, m, k, alpha, a, lda, b, inc_b, beta, c, ldc);
  }
}

// Multiply-adds below which a product stays on one thread (a few microseconds of work).
constexpr int64_t kMinParallelWork = int64_t{1} << 17;

template <typename T>
void SerialGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const T* a,
                int64_t lda, const T* b, int64_t ldb, double beta, T* c, int64_t ldc);

}  // namespace

namespace {

// Our AVX-512 tiles take plain float32 products, optionally added to C (docs/dependencies.md).
template <typename T>
bool UsesTiledGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, double beta) {
  return std::is_same_v<T, float> && !trans_a && !trans_b && alpha == 1.0 && (beta == 0.0 || beta == 1.0) &&
         TiledGemmApplies(m, n, k);
}

}  // namespace

template <typename T>
std::string_view GemmPathName(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                              double beta) {
  if (UsesTiledGemm<T>(trans_a, trans_b, m, n, k, alpha, beta)) return "tiles-avx512";
  return std::is_floating_point_v<T> ? BlasPathName() : "loop";
}

template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, double beta, T* c, int64_t ldc, ThreadPool* pool) {
  if constexpr (std::is_same_v<T, float>) {
    if (UsesTiledGemm<T>(trans_a, trans_b, m, n, k, alpha, beta)) {
      TiledGemm(m, n, k, a, lda, b, ldb, beta == 1.0, c, ldc, pool);
      return;
    }
  }
  const int64_t work = m * n * std::max<int64_t>(k, 1);
  if (pool == nullptr || m <= 0 || n <= 0 || work < 2 * kMinParallelWork) {
    return SerialGemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  // Panels of whole 16-column (or row) blocks; each panel is an independent product.
  constexpr int64_t kAlign = 16;
  const bool split_columns = n >= m;
  const int64_t extent = split_columns ? n : m;
  const int64_t blocks = (extent + kAlign - 1) / kAlign;
  const int64_t min_blocks = std::max<int64_t>(1, kMinParallelWork * blocks / work);
  ParallelFor(pool, blocks, min_blocks, [&](int64_t first, int64_t last) {
    const int64_t lo = first * kAlign;
    const int64_t hi = std::min(extent, last * kAlign);
    if (split_columns) {
      const T* bp = trans_b ? b + lo * ldb : b + lo;
      SerialGemm(trans_a, trans_b, m, hi - lo, k, alpha, a, lda, bp, ldb, beta, c + lo, ldc);
    } else {
      const T* ap = trans_a ? a + lo : a + lo * lda;
      SerialGemm(trans_a, trans_b, hi - lo, n, k, alpha, ap, lda, b, ldb, beta, c + lo * ldc, ldc);
    }
  });
}

void GemmWithColumnBias(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                        const float* b, int64_t ldb, const float* bias, float* c, int64_t ldc, ThreadPool* pool) {
  if (UsesTiledGemm<float>(trans_a, trans_b, m, n, k, 1.0, 0.0)) {
    TiledGemm(m, n, k, a, lda, b, ldb, false, c, ldc, pool, bias);
    return;
  }
  Gemm<float>(trans_a, trans_b, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc, pool);
  for (int64_t r = 0; r < m; ++r) {
    float* row = c + r * ldc;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) row[j] += bias[j];
  }
}

namespace {

template <typename T>
void SerialGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const T* a,
                int64_t lda, const T* b, int64_t ldb, double beta, T* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    ScaleRows(m, n, beta, c, ldc);
    return;
  }
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    // A single row or column is a matrix-vector product: GEMV streams the matrix once, where
    // GEMM would first pack it (decode steps multiply one token by every weight matrix).
    if (m == 1 || n == 1) {
      Gemv(trans_a, trans_b, m, n, k, static_cast<T>(alpha), a, lda, b, ldb, static_cast<T>(beta), c, ldc);
      return;
    }
    BlasGemm(trans_a, trans_b, m, n, k, static_cast<T>(alpha), a, lda, b, ldb, static_cast<T>(beta), c, ldc);
  } else {
    IntegerGemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

}  // namespace

template <typename T>
void SmallGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
               const T* b, int64_t ldb, T* c, int64_t ldc) {
  // Integers wrap (unsigned arithmetic); floats accumulate in their own type like BLAS.
  using Acc = std::conditional_t<std::is_floating_point_v<T>, T, uint64_t>;
  const int64_t a_row = trans_a ? 1 : lda;
  const int64_t a_col = trans_a ? lda : 1;
  const int64_t b_row = trans_b ? 1 : ldb;
  const int64_t b_col = trans_b ? ldb : 1;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      Acc sum = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        sum += static_cast<Acc>(a[i * a_row + kk * a_col]) * static_cast<Acc>(b[kk * b_row + j * b_col]);
      }
      c[i * ldc + j] = static_cast<T>(sum);
    }
  }
}

#define ONNX_LIGHT_INSTANTIATE_SMALL_GEMM(T)                                                              \
  template void SmallGemm<T>(bool, bool, int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t, \
                             T*, int64_t);
ONNX_LIGHT_INSTANTIATE_SMALL_GEMM(float)
ONNX_LIGHT_INSTANTIATE_SMALL_GEMM(double)
ONNX_LIGHT_INSTANTIATE_SMALL_GEMM(int32_t)
ONNX_LIGHT_INSTANTIATE_SMALL_GEMM(int64_t)
ONNX_LIGHT_INSTANTIATE_SMALL_GEMM(uint32_t)
ONNX_LIGHT_INSTANTIATE_SMALL_GEMM(uint64_t)
#undef ONNX_LIGHT_INSTANTIATE_SMALL_GEMM

#define ONNX_LIGHT_INSTANTIATE_GEMM_PATH_NAME(T) \
  template std::string_view GemmPathName<T>(bool, bool, int64_t, int64_t, int64_t, double, double);
ONNX_LIGHT_INSTANTIATE_GEMM_PATH_NAME(float)
ONNX_LIGHT_INSTANTIATE_GEMM_PATH_NAME(double)
ONNX_LIGHT_INSTANTIATE_GEMM_PATH_NAME(int32_t)
ONNX_LIGHT_INSTANTIATE_GEMM_PATH_NAME(int64_t)
ONNX_LIGHT_INSTANTIATE_GEMM_PATH_NAME(uint32_t)
ONNX_LIGHT_INSTANTIATE_GEMM_PATH_NAME(uint64_t)
#undef ONNX_LIGHT_INSTANTIATE_GEMM_PATH_NAME

template void Gemm<float>(bool, bool, int64_t, int64_t, int64_t, double, const float*, int64_t, const float*,
                          int64_t, double, float*, int64_t, ThreadPool*);
template void Gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t, ThreadPool*);
template void Gemm<int32_t>(bool, bool, int64_t, int64_t, int64_t, double, const int32_t*, int64_t,
                            const int32_t*, int64_t, double, int32_t*, int64_t, ThreadPool*);
template void Gemm<int64_t>(bool, bool, int64_t, int64_t, int64_t, double, const int64_t*, int64_t,
                            const int64_t*, int64_t, double, int64_t*, int64_t, ThreadPool*);
template void Gemm<uint32_t>(bool, bool, int64_t, int64_t, int64_t, double, const uint32_t*, int64_t,
                             const uint32_t*, int64_t, double, uint32_t*, int64_t, ThreadPool*);
template void Gemm<uint64_t>(bool, bool, int64_t, int64_t, int64_t, double, const uint64_t*, int64_t,
                             const uint64_t*, int64_t, double, uint64_t*, int64_t, ThreadPool*);

bool FindBlasLayout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride, BlasMatrix* out) {
  const int64_t r = std::max<int64_t>(rows, 1);
  const int64_t c = std::max<int64_t>(cols, 1);
  if ((cols <= 1 || col_stride == 1) && (rows <= 1 || row_stride >= c)) {
    *out = {.trans = false, .ld = rows <= 1 ? c : row_stride};
    return true;
  }
  if ((rows <= 1 || row_stride == 1) && (cols <= 1 || col_stride >= r)) {
    *out = {.trans = true, .ld = cols <= 1 ? r : col_stride};
    return true;
  }
  return false;
}

Tensor BlasOperand(const Tensor& t, const std::shared_ptr<Allocator>& allocator, BlasMatrix* layout) {
  if (t.is_contiguous()) {
    *layout = {.trans = false, .ld = std::max<int64_t>(t.dim(1), 1)};
    return t;
  }
  const Shape strides = t.strides();
  if (FindBlasLayout(t.dim(0), t.dim(1), strides[0], strides[1], layout)) return t;
  *layout = {.trans = false, .ld = std::max<int64_t>(t.dim(1), 1)};
  return t.Contiguous(allocator);
}

void PermuteCopy(DataType type, const void* src, std::span<const int64_t> shape, std::span<const int64_t> perm,
                 void* dst) {
  const Shape src_strides = ContiguousStrides(shape);
  Shape dims(perm.size());
  Shape strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    dims[i] = shape[static_cast<size_t>(perm[i])];
    strides[i] = src_strides[static_cast<size_t>(perm[i])];
  }
  StridedCopy(type, src, dims, strides, dst);
}

}  // namespace onnx_light::runtime

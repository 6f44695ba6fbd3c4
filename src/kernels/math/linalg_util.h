#pragma once
// Matrix-product and layout helpers shared by MatMul, Gemm, Einsum and the convolutions.
// Floating-point products go to OpenBLAS; integer products use a plain blocked loop (BLAS has
// no integer GEMM).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

class ThreadPool;

/// C[M,N] = alpha * op(A) * op(B) + beta * C, all row-major. op(A) is M x K (A stored K x M
/// when trans_a), op(B) is K x N (B stored N x K when trans_b). lda/ldb/ldc are the row
/// strides in elements. Handles M, N or K == 0 (K == 0 scales C by beta). Instantiated for
/// float and double (OpenBLAS) and for int32, int64, uint32, uint64 (blocked loop, wrapping
/// arithmetic; alpha and beta are applied in double when they are not 1 and 0/1).
/// With a `pool`, a product large enough to be worth it is split into column (or row) panels
/// computed on the pool's threads, each by a single-threaded BLAS call.
template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, double beta, T* c, int64_t ldc, ThreadPool* pool = nullptr);

/// The implementation Gemm<T> takes for these arguments, for kernel-usage names: "tiles-avx512"
/// (float32, neither operand transposed, alpha 1, beta 0 or 1, at least kTiledGemmMinRows rows,
/// on CPUs with AVX-512: our own tiles, kernels/nn/conv_pointwise.h), else "blas" for float and
/// double, "loop" for the integer types.
template <typename T>
std::string_view GemmPathName(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                              double beta);

/// C[M,N] = op(A) * op(B) + bias, the float32 `bias` (n values) added to every row: in the
/// tiles' first accumulators when Gemm<float> takes them for these arguments, otherwise after the
/// product, while C's rows are still in cache. Otherwise as Gemm<float> with alpha 1, beta 0.
void GemmWithColumnBias(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                        const float* b, int64_t ldb, const float* bias, float* c, int64_t ldc,
                        ThreadPool* pool = nullptr);

/// Per-product sizes (m * n * k) at or below which batched callers use SmallGemm: for tiny
/// products a BLAS call costs far more than the arithmetic.
inline constexpr int64_t kSmallGemmWork = 32;

/// C[M,N] = op(A) * op(B) by a direct loop, for products of at most kSmallGemmWork
/// multiply-adds (same layout conventions and instantiations as Gemm).
template <typename T>
void SmallGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
               const T* b, int64_t ldb, T* c, int64_t ldc);

/// How a stored rows x cols matrix whose elements lie at i * row_stride + j * col_stride can be
/// handed to BLAS: row-major with leading dimension `ld` (trans == false) or column-major, i.e.
/// the transpose of a row-major cols x rows matrix (trans == true).
struct BlasMatrix {
  bool trans = false;
  int64_t ld = 1;
};

/// False when neither layout fits (for example both strides differ from 1); the caller then
/// copies the operand to contiguous memory.
bool FindBlasLayout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride, BlasMatrix* out);

/// The 2-D tensor `t` ready for BLAS with its layout in `layout`: `t` itself when its strides fit,
/// otherwise a contiguous copy from `allocator`.
Tensor BlasOperand(const Tensor& t, const std::shared_ptr<Allocator>& allocator, BlasMatrix* layout);

/// Copies the contiguous array `src` of `shape` into `dst` so that dst is the row-major array of
/// shape[perm[0]], shape[perm[1]], ... (numpy `src.transpose(perm)`): one StridedCopy through
/// permuted strides.
void PermuteCopy(DataType type, const void* src, std::span<const int64_t> shape, std::span<const int64_t> perm,
                 void* dst);

}  // namespace onnx_light::runtime

#pragma once
// A float32 1x1 convolution (stride 1, no padding, one group) as a matrix product written for
// AVX-512 and chosen at run time, like conv_direct.h. Per image, Y [m, pixels] = W [m, k] X
// [k, pixels]: the pixels are one long row, so no input copy is needed (a GEMM library packs
// the whole image first), and each tile of 8 output channels x 48 pixels is finished where it is
// computed: the bias and Relu, Sigmoid or SiLU are applied in registers, any other activation and
// the residual on the tile while it is still in L1. The weights are the blocks PackDirectConvWeights writes,
// which the Conv kernel packs once when W is a constant. A product deeper than 128 input rows
// runs in passes of 128 rows; with 256 output channels or more each pass copies its rows of a
// chunk of pixels into a contiguous panel that every block of output channels reads from L1
// (docs/performance.md); with fewer the tiles read x in place.

#include <cstdint>

#include "kernels/nn/conv_epilogue.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

class ThreadPool;

/// y [m, pixels] = epilogue(bias[m] + W x + z) for one image x [k, pixels]; `packed_w` is W
/// [m, k] packed by PackDirectConvWeights; `bias` and `z` (laid out like y) may be null. Row c
/// of y (and of z) starts at c * y_stride (0: y_stride = pixels), so a band of an image's pixels
/// can be written into the whole image's output. Tiles of pixels are spread over `pool` (null:
/// the calling thread): when there are enough of them, thread t computes the t-th of equal runs
/// of pixels, so consecutive 1x1 layers give each thread the same pixels. With `x_scale` (k
/// floats) row t of x is read as x * x_scale[t], rounded before the products: a Mul of X by one
/// factor per channel (a squeeze-and-excitation scale) without writing the scaled X. Requires
/// DirectConvAvailable().
void PointwiseConv(const float* x, int64_t k, int64_t pixels, const float* packed_w, int64_t m, const float* bias,
                   const ConvEpilogue& epilogue, const float* z, float* y, ThreadPool* pool, int64_t y_stride = 0,
                   const float* x_scale = nullptr);

/// Rows of A below which TiledGemm leaves a product to BLAS (a matrix-vector product or a few
/// rows use one accumulator row of eight at most).
inline constexpr int64_t kTiledGemmMinRows = 8;

/// Whether TiledGemm takes a float32 product of this size on this CPU (DirectConvAvailable()).
bool TiledGemmApplies(int64_t m, int64_t n, int64_t k);

/// C [m, n] = A [m, k] B [k, n] (+ C when `accumulate`), all row-major with row strides lda,
/// ldb, ldc, computed by the same tiles: A's rows take the role of output channels (each tile
/// broadcasts its rows' values straight from A, so A is not copied) and B's columns that of
/// pixels. With `column_bias` (n floats; ignored when `accumulate`) every row of C starts from
/// it: C = A B + bias, the bias added first. Work is spread over `pool` (null: the calling
/// thread). Requires TiledGemmApplies(m, n, k).
void TiledGemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
               bool accumulate, float* c, int64_t ldc, ThreadPool* pool, const float* column_bias = nullptr);

/// Floats PackTiledGemmB writes for a B of k rows and n columns: n rounded up to the tiles'
/// 48 columns, times k.
int64_t TiledGemmPackedBSize(int64_t k, int64_t n);

/// Copies B [k, n] (row stride ldb) into `packed` (TiledGemmPackedBSize(k, n) floats) as the
/// tiles read it: 48 columns at a time, each such panel's k rows contiguous, zeros past column
/// n. A constant B packed once (MatMul's weights) is then read as one sequential stream.
void PackTiledGemmB(int64_t k, int64_t n, const float* b, int64_t ldb, float* packed);

/// PackTiledGemmB for a B [k, n] given as its transpose: row j of Bᵀ (column j of B, k floats)
/// starts at bt + j * ldbt. Attention packs each head's keys (the rows of Bᵀ = K) this way.
void PackTiledGemmBTransposed(int64_t k, int64_t n, const float* bt, int64_t ldbt, float* packed);

/// A constant float32 matrix B (or Bᵀ, stored [n, k], when `transposed`) packed by PackTiledGemmB
/// for a kernel to keep: a read-only tensor from its own allocator, shared by every run. An
/// undefined tensor when B is not a non-empty float32 matrix or the tiles do not run on this CPU.
Tensor PackConstantTiledGemmB(const Tensor* b, bool transposed);

/// TiledGemm (without accumulation) on a B packed by PackTiledGemmB.
void TiledGemmPackedB(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* packed_b,
                      float* c, int64_t ldc, ThreadPool* pool, const float* column_bias = nullptr);

}  // namespace onnx_light::runtime

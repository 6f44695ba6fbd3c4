#pragma once
// The fused weight-only MatMul: Y = A x dequantize(W) for a constant 4-bit (int4/uint4) or 8-bit
// (int8/uint8) W[K, N] with float32 scales (and zero points) per tensor, per column or per block
// of K rows, as the quantized_matmul_fusion pass writes it (docs/quantization.md). The weights
// stay packed: the decode path (few rows of A) dequantizes them in registers, the prefill path
// one panel of K at a time into a small scratch that the float GEMM then reads.

#include <cstdint>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// Columns per packed tile, and K rows per packed group of 4-bit codes: such a group of one tile
/// is 16 dwords, dword c holding column c's codes of the group's 8 K rows (row j in bits
/// 4j..4j+3). 8-bit codes are stored row after row, 16 bytes (one per column) per K row, K
/// padded to a multiple of kNBitsGroupRows8 rows so that a group is again 16 dwords.
inline constexpr int64_t kNBitsTileColumns = 16;
inline constexpr int64_t kNBitsGroupRows = 8;
inline constexpr int64_t kNBitsGroupRows8 = 4;

/// W packed for GEMV, tile after tile. Codes and zero points are stored centred: a 4-bit code
/// biased to 0..15 (int4 + 8) stands for code - 8; an 8-bit code is stored as an int8 (uint8
/// values minus 128); the zero points are stored minus the same centre. So centred code minus
/// centred zero point is the written q - zp for every type.
/// Immutable once built; shared read-only by every run.
struct PackedNBits {
  int bits = 4;            // 4 (int4/uint4) or 8 (int8/uint8)
  int64_t k = 0, n = 0;
  int64_t block_size = 1;  // K rows per scale row (K itself for per-tensor / per-column)
  int64_t blocks = 0;      // ceil(k / block_size)
  int64_t groups = 0;      // ceil(k / group_rows())
  int64_t tiles = 0;       // ceil(n / kNBitsTileColumns)
  bool is_signed = false;  // int4/int8 (true) or uint4/uint8
  bool centered = false;   // every centred zero point is 0 (symmetric signed weights): no zero-point term
  std::vector<uint32_t> codes;      // [tiles][groups][16]
  std::vector<float> scales;        // [tiles][blocks][16], 0 on padding columns
  std::vector<int8_t> zero_points;  // [tiles][blocks][16]: the centred zero point

  int64_t group_rows() const { return bits == 4 ? kNBitsGroupRows : kNBitsGroupRows8; }
  /// Bytes a product reads from the packed weights (codes, scales and zero points).
  int64_t bytes() const {
    return static_cast<int64_t>(codes.size() * sizeof(uint32_t) + zero_points.size() + scales.size() * sizeof(float));
  }
  /// Whether the vector loops can run: they take 4-bit codes a group of 8 K rows at a time, so
  /// no group may straddle two scale blocks (8-bit codes are taken row by row).
  bool groups_fit_blocks() const { return bits == 8 || blocks == 1 || block_size % kNBitsGroupRows == 0; }
};

/// Packs `w` (int4, uint4, int8 or uint8, [K, N]) with `scale` (float32: one value, N values, or
/// [ceil(K / block_size), N] when block_size > 0) and optional `zero_point` (w's type, shaped as
/// `scale`). With `transposed`, w is [N, K] and blocked scales are [N, ceil(K / block_size)] (Gemm's
/// transB). The caller (the fusion pass) has checked the shapes.
PackedNBits PackNBits(const Tensor& w, const Tensor& scale, const Tensor* zero_point, int64_t block_size,
                      bool transposed = false);

enum class NBitsIsa { kScalar, kAvx2, kAvx512 };

/// The best loops for this CPU: AVX-512 needs AVX-512F and neither ONNX_LIGHT_DISABLE_AVX512 nor
/// ONNX_LIGHT_DISABLE_AVX2 set; AVX2 needs AVX2+FMA and ONNX_LIGHT_DISABLE_AVX2 unset.
NBitsIsa BestNBitsIsa();
std::string_view NBitsIsaName(NBitsIsa isa);

/// C[r, tile columns] = A[r, :] x W for rows r < rows and tiles [tile_begin, tile_end), the
/// weights dequantized in registers. The portable loop multiplies by w = (q - zp) * scale,
/// rounded as DequantizeLinear rounds it; the vector loops compute per scale block
/// scale * (sum a * centred code - centred zp * sum a), the same value in exact arithmetic (see
/// docs/quantization.md for the tolerance). `a` has row stride lda, `c` row stride ldc.
void NBitsGemv(NBitsIsa isa, const PackedNBits& w, const float* a, int64_t rows, int64_t lda, float* c,
               int64_t ldc, int64_t tile_begin, int64_t tile_end);

/// The largest scale block the 8-bit-activation loop takes: A is quantized once per block, and
/// a block's integer sum stays far inside int32 (|sum| <= 127 * 15 * 256).
inline constexpr int64_t kNBitsA8MaxBlock = 256;

/// Rows of A quantized per scale block of a PackedNBits for NBitsGemvA8: block b of row r is
/// int8 values round(a / s) with s = max|a| / 127 (ties to even), stored per group of 8 K rows as
/// two dwords (the even rows' 4 bytes, then the odd rows'; K padded with zeros), with its scale
/// s and the sum of its int8 values. Scratch of one run.
struct QuantizedActivations {
  std::vector<uint32_t> pairs;  // [rows][groups][2]
  std::vector<float> scales;    // [rows][blocks]
  std::vector<int32_t> sums;    // [rows][blocks]
};

/// Whether NBitsGemvA8 runs for `w` on this CPU: 4-bit codes in scale blocks of a multiple of 8
/// rows, at most kNBitsA8MaxBlock (one scale per column counts as one block of K rows), and
/// AVX-512 with VNNI (BW, VL) not switched off by ONNX_LIGHT_DISABLE_AVX512.
bool NBitsA8Applies(const PackedNBits& w);

/// Quantizes `rows` rows of A (row stride lda) per scale block of `w` into `q`. Returns false,
/// leaving `q` unusable, when a value is NaN or infinite (8 bits cannot carry it: the caller
/// runs the float loops instead). Call only where NBitsA8Applies(w).
bool QuantizeActivations(const PackedNBits& w, const float* a, int64_t rows, int64_t lda, QuantizedActivations* q);

/// C[r, tile columns] for tiles [tile_begin, tile_end) = sum over scale blocks of scale_w *
/// scale_a * (sum of a_q * code - zero point * sum of a_q), the inner sums exact in int32 (codes
/// and zero points in the biased 0..15 form). Call only where NBitsA8Applies(w).
void NBitsGemvA8(const PackedNBits& w, const QuantizedActivations& q, int64_t rows, float* c, int64_t ldc,
                 int64_t tile_begin, int64_t tile_end);

/// Writes rows [k_begin, k_end) of the dequantized W into `out` (row-major, N columns), tiles
/// [tile_begin, tile_end) only.
void DequantizeNBitsRows(const PackedNBits& w, int64_t k_begin, int64_t k_end, int64_t tile_begin,
                         int64_t tile_end, float* out);

/// Registers the fused operators `QuantizedMatMul` and `QuantizedGemm` (version 1) in `domain`.
/// QuantizedMatMul: inputs A, W, scale, optional zero point (W, scale and zero point constants),
/// attribute block_size (0: one scale row for all of K); A of any rank, as MatMul's.
/// QuantizedGemm: Gemm(A, DequantizeLinear(W)[, C]) with transA = 0 and alpha = beta = 1; the
/// same inputs plus an optional constant float32 bias C of one value or N values (input 4), and
/// attribute trans_b; A must be 2-D, as Gemm's. Both take attribute activation_bits: 0 (default)
/// multiplies float32 A; 8 lets products of a few rows quantize A per scale block and run
/// NBitsGemvA8 where it applies (RuntimeSessionOptions::quantize_matmul_activations).
void RegisterNBitsMatMulKernel(KernelRegistry& registry, std::string_view domain);

}  // namespace onnx_light::runtime

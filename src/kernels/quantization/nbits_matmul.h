#pragma once
// The fused 4-bit weight-only MatMul: Y = A x dequantize(W) for a constant int4/uint4 W[K, N]
// with float32 scales (and zero points) per tensor, per column or per block of K rows, as the
// quantized_matmul_fusion pass writes it (docs/quantization.md). The weights stay packed: the
// decode path (few rows of A) dequantizes them in registers, the prefill path one panel of K at
// a time into a small scratch that the float GEMM then reads.

#include <cstdint>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// Columns per packed tile, and K rows per packed group: a group of one tile is 16 dwords, dword c
/// holding column c's codes of the group's 8 K rows (row j in bits 4j..4j+3).
inline constexpr int64_t kNBitsTileColumns = 16;
inline constexpr int64_t kNBitsGroupRows = 8;

/// W packed for GEMV, tile after tile. Codes are stored biased to 0..15 (int4 + 8) with the
/// zero points biased alike, so code - zero_point is the written q - zp for both types.
/// Immutable once built; shared read-only by every run.
struct PackedNBits {
  int64_t k = 0, n = 0;
  int64_t block_size = 1;  // K rows per scale row (K itself for per-tensor / per-column)
  int64_t blocks = 0;      // ceil(k / block_size)
  int64_t groups = 0;      // ceil(k / kNBitsGroupRows)
  int64_t tiles = 0;       // ceil(n / kNBitsTileColumns)
  bool is_signed = false;  // int4 (true) or uint4
  bool centered = false;   // every biased zero point is 8 (symmetric int4): no zero-point term
  std::vector<uint32_t> codes;      // [tiles][groups][16]
  std::vector<float> scales;        // [tiles][blocks][16], 0 on padding columns
  std::vector<int8_t> offsets;      // [tiles][blocks][16]: 8 - biased zero point

  /// Bytes a product reads from the packed weights (codes, scales and zero points).
  int64_t bytes() const {
    return static_cast<int64_t>(codes.size() * sizeof(uint32_t) + offsets.size() + scales.size() * sizeof(float));
  }
  /// Whether no group of 8 K rows straddles two scale blocks (the vector loops need it).
  bool groups_fit_blocks() const { return blocks == 1 || block_size % kNBitsGroupRows == 0; }
};

/// Packs `w` (int4 or uint4, [K, N]) with `scale` (float32: one value, N values, or
/// [ceil(K / block_size), N] when block_size > 0) and optional `zero_point` (w's type, shaped as
/// `scale`). The caller (the fusion pass) has checked the shapes.
PackedNBits PackNBits(const Tensor& w, const Tensor& scale, const Tensor* zero_point, int64_t block_size);

enum class NBitsIsa { kScalar, kAvx2, kAvx512 };

/// The best loops for this CPU: AVX-512 needs AVX-512F and neither ONNX_LIGHT_DISABLE_AVX512 nor
/// ONNX_LIGHT_DISABLE_AVX2 set; AVX2 needs AVX2+FMA and ONNX_LIGHT_DISABLE_AVX2 unset.
NBitsIsa BestNBitsIsa();
std::string_view NBitsIsaName(NBitsIsa isa);

/// C[r, tile columns] = A[r, :] x W for rows r < rows and tiles [tile_begin, tile_end), the
/// weights dequantized in registers. The portable loop multiplies by w = (q - zp) * scale,
/// rounded as DequantizeLinear rounds it; the vector loops compute per scale block
/// scale * (sum a * (code - 8) + (8 - zp) * sum a), the same value in exact arithmetic (see
/// docs/quantization.md for the tolerance). `a` has row stride lda, `c` row stride ldc.
void NBitsGemv(NBitsIsa isa, const PackedNBits& w, const float* a, int64_t rows, int64_t lda, float* c,
               int64_t ldc, int64_t tile_begin, int64_t tile_end);

/// Writes rows [k_begin, k_end) of the dequantized W into `out` (row-major, N columns), tiles
/// [tile_begin, tile_end) only.
void DequantizeNBitsRows(const PackedNBits& w, int64_t k_begin, int64_t k_end, int64_t tile_begin,
                         int64_t tile_end, float* out);

/// Registers the fused operator `QuantizedMatMul` (version 1) in `domain`: inputs A, W, scale,
/// optional zero point (W, scale and zero point constants), attribute block_size (0: one scale
/// row for all of K).
void RegisterNBitsMatMulKernel(KernelRegistry& registry, std::string_view domain);

}  // namespace onnx_light::runtime

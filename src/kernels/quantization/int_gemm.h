#pragma once
// The integer product behind MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv:
// C[m, n] (int32) = A'[m, k] * B'[k, n], where A' and B' are the 8-bit operands minus their
// zero points, held as int16 (|value| <= 255, so a pair of products fits int32 exactly).
// Sums wrap modulo 2^32 like the reference's int32 arithmetic (reachable only for k > 33000).
//
// B' is packed once into panels of 16 columns, each holding k in pairs: for pair p and column c
// the two values B'[2p][c], B'[2p+1][c] are adjacent, which is the operand layout of the AVX2
// multiply-add of int16 pairs (vpmaddwd). A' rows are padded to an even length with zeros.
// A constant B is packed when the kernel is built.

#include <cstdint>
#include <vector>

namespace onnx_light::runtime {

class ThreadPool;

struct PackedIntB {
  int64_t k = 0, n = 0;
  int64_t k_pairs = 0;  // ceil(k / 2)
  int64_t panels = 0;   // ceil(n / 16)
  std::vector<int16_t> data;  // the panels, unless packed into caller-owned storage
  const int16_t* panels_data = nullptr;  // what IntGemm reads: data.data() or that storage
  // The same panels as int8 when every value fits (symmetric int8 weights): products of one to
  // three rows read these, half the bytes, where streaming B is what costs.
  std::vector<int8_t> narrow;
};

/// The row length of an A' buffer for depth k: k rounded up to even.
inline int64_t PaddedDepth(int64_t k) { return (k + 1) & ~int64_t{1}; }

/// int16 elements the panels of a [k, n] B take.
inline int64_t PackedIntBSize(int64_t k, int64_t n) { return ((n + 15) / 16) * ((k + 1) / 2) * 32; }

/// Packs B' = b - zero_point from an int8 or uint8 [k, n] matrix with row stride `ldb`;
/// `zero_point` has n entries (per column) or 1 (`per_column` false). With `storage` (at least
/// PackedIntBSize(k, n) elements, e.g. run scratch from the allocator) the panels go there and
/// no int8 copy is kept; otherwise into `out->data`.
void PackInt8B(const void* b, bool is_signed, int64_t k, int64_t n, int64_t ldb, const int32_t* zero_point,
               bool per_column, PackedIntB* out, int16_t* storage = nullptr);
/// Packs an int16 [k, n] matrix (already zero-point adjusted) with row stride `ldb` (no int8
/// copy: these are a convolution's columns, packed on every run).
void PackInt16B(const int16_t* b, int64_t k, int64_t n, int64_t ldb, PackedIntB* out, int16_t* storage = nullptr);

/// A' rows: out[r * PaddedDepth(k) + j] = a[r * lda + j] - zero_point[per_row ? r : 0], zero padded.
void WidenInt8A(const void* a, bool is_signed, int64_t m, int64_t k, int64_t lda, const int32_t* zero_point,
                bool per_row, int16_t* out);

/// C = A' * B' for `m` rows of A' (row stride PaddedDepth(b.k)); C row stride `ldc`. Splits the
/// panels over `pool` when given.
void IntGemm(int64_t m, const int16_t* a, const PackedIntB& b, int32_t* c, int64_t ldc, ThreadPool* pool);

/// True when IntGemm uses its AVX2 micro-kernel.
bool IntGemmUsesAvx2();

}  // namespace onnx_light::runtime

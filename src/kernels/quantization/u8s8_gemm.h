#pragma once
// The integer product on CPUs with AVX-512 VNNI, built on vpdpbusd, which multiplies four
// unsigned bytes by four signed bytes and adds the four products to an int32 lane exactly (no
// intermediate saturation, unlike vpmaddubsw).
//
// The core, QuadGemm, multiplies `m` rows of bytes (broadcast four at a time) by panels of
// packed bytes (32 lanes), one operand uint8 and the other int8, and applies two rank-one
// corrections; everything wraps modulo 2^32 like the reference's int32 arithmetic:
//   C[r, j] = sum_k rows[r, k] * panels[k, j] - row_s[r] * col_u[j] - row_t[r] * col_v[j]
// Zero points become these corrections, so the bytes are multiplied as stored:
//   sum (a - a_zp)(b - b_zp) = sum a*b - a_zp * (colsum(b) - k * b_zp) - b_zp * rowsum(a).
// Other 8-bit types are shifted by 128 into the pair (an int8 operand that must be uint8 gets
// a + 128 and a_zp + 128; a uint8 one that must be int8 gets b - 128), which leaves the result
// unchanged.
//
// Two users: MatMulInteger/QLinearMatMul (U8S8Gemm: A's rows uint8, B int8 packed once at build)
// and the convolution (int_conv_vnni.h: the weights' rows int8, the image's columns uint8 packed
// per run), which keeps the channels-first layout because the pixels are the panel lanes.
// Panels: 32 columns, k in groups of four; for group q the 32 columns' four bytes
// [4q..4q+3] are adjacent (128 bytes, two vector registers), zero past k and n. The groups are
// counted up to a multiple of 16, so sixteen consecutive groups of 16 columns are one AMX tile.

#include <absl/functional/function_ref.h>

#include <cstdint>
#include <vector>

namespace onnx_light::runtime {

class ThreadPool;

/// Packed panels and their column sums. Immutable once packed: threads may read it at once.
struct QuadPanels {
  int64_t k = 0, n = 0;
  int64_t quads = 0;   // ceil(k / 4) rounded up to 16: whole AMX tiles, zero past k
  int64_t panels = 0;  // ceil(n / 32)
  std::vector<int8_t> data;             // the panels, unless packed into caller-owned storage
  const int8_t* panels_data = nullptr;  // what QuadGemm reads
  std::vector<int32_t> column_sums;     // sum over k of the packed bytes, when asked for
};

/// True on a CPU with AVX-512 F/BW/VNNI when UseAvx512() allows it (ONNX_LIGHT_DISABLE_AVX512
/// turns this path off too).
bool U8S8GemmAvailable();

/// True when QuadGemm also uses AMX tiles (tdpbusd/tdpbsud: 16 x 16 x 64 products per
/// instruction) for blocks of 32 rows: the CPU has AMX-TILE and AMX-INT8, Linux granted the
/// process the tile state, U8S8GemmAvailable() holds and ONNX_LIGHT_DISABLE_AMX is unset, empty
/// or "0". The results are the same bits either way (exact int32 arithmetic).
bool U8S8GemmUsesAmx();

/// Whether QuadGemm of `m` rows uses AMX blocks (U8S8GemmUsesAmx() and m >= 32).
bool QuadGemmUsesAmx(int64_t m);

/// The kernel-usage name of the product QuadGemm runs for `m` rows: "u8s8-amx" or "u8s8-vnni".
const char* U8S8ProductName(int64_t m);

/// Bytes of the panels of a [k, n] operand.
inline int64_t QuadPanelsSize(int64_t k, int64_t n) { return ((n + 31) / 32) * (((k + 63) / 64) * 16) * 128; }

/// Packs a [k, n] byte matrix (row stride `ld`), each byte XOR `flip` (0x80 shifts by 128
/// between int8 and uint8). `sums`: also the column sums of the packed bytes, read as int8
/// (`signed_sums`) or uint8. With `storage` (QuadPanelsSize bytes) the panels go there. Splits
/// the panels over `pool` when given.
void PackQuadPanels(const uint8_t* src, int64_t k, int64_t n, int64_t ld, uint8_t flip, bool sums, bool signed_sums,
                    QuadPanels* out, int8_t* storage = nullptr, ThreadPool* pool = nullptr);

/// k rounded up to a multiple of 64: the bytes an AMX block reads of each row.
inline int64_t RoundUpToAmxDepth(int64_t k) { return (k + 63) / 64 * 64; }

/// Called by QuadGemm for each block of C it has finished: rows [row, row + rows), columns
/// [col, col + cols), on the thread that computed it, while the block is in that thread's cache
/// (so a requantization after the product reads no other core's writes). Blocks are disjoint.
using QuadGemmDone = absl::FunctionRef<void(int64_t row, int64_t rows, int64_t col, int64_t cols)>;

/// C (row stride `ldc`) = rows x panels - row_s * col_u - row_t * col_v (see above). `rows`:
/// m rows of b.k bytes, stride `lda` (when lda >= RoundUpToAmxDepth(b.k) every row must have
/// that many readable bytes; otherwise AMX blocks copy the rows to pad them), uint8 when `rows_unsigned` (the panels then int8) or int8
/// (the panels uint8). row_s and row_t have m entries, col_u and col_v b.n; row_t may be null
/// (no second correction). Splits rows and panels over `pool`; `done`, when given, is called for
/// every finished block. Requires U8S8GemmAvailable().
void QuadGemm(int64_t m, const uint8_t* rows, int64_t lda, bool rows_unsigned, const QuadPanels& b,
              const int32_t* row_s, const int32_t* col_u, const int32_t* row_t, const int32_t* col_v, int32_t* c,
              int64_t ldc, ThreadPool* pool, const QuadGemmDone* done = nullptr);

/// A matmul's B ([k, n], int8 or uint8) packed as int8 panels, with what the correction needs.
struct PackedU8S8B {
  QuadPanels panels;
  std::vector<int32_t> adjusted_sums;  // colsum(B) - k * b_zp, per column
  std::vector<int32_t> zero_point;     // b_zp (shifted for a uint8 B), per column
  bool zero_point_nonzero = false;     // A's row sums are needed
};

/// Packs B (row stride `ldb`) and its zero point (n values when `per_column`, else one). With
/// `storage` (QuadPanelsSize(k, n) bytes) the panels go there.
void PackU8S8B(const void* b, bool is_signed, int64_t k, int64_t n, int64_t ldb, const int32_t* zero_point,
               bool per_column, PackedU8S8B* out, int8_t* storage = nullptr);

/// C = (A - a_zp) x (B - b_zp) for m rows of uint8 A (row stride `lda`); `a_zp`: m values when
/// `a_zp_per_row`, else one. `done` as for QuadGemm. Requires U8S8GemmAvailable().
void U8S8Gemm(int64_t m, const uint8_t* a, int64_t lda, const int32_t* a_zp, bool a_zp_per_row,
              const PackedU8S8B& b, int32_t* c, int64_t ldc, ThreadPool* pool, const QuadGemmDone* done = nullptr);

}  // namespace onnx_light::runtime

#include "kernels/quantization/u8s8_gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "core/thread_pool.h"
#include "kernels/registry/cpu_features.h"

namespace onnx_light::runtime {

namespace {

constexpr int64_t kPanel = 32;       // columns per panel (two registers of 16 int32 lanes)
constexpr int64_t kQuadBytes = 128;  // one group of four k for the panel's 32 columns
constexpr int kTileRows = 8;         // 16 accumulators, 2 panel registers, 1 broadcast
constexpr int64_t kRowBlock = 64;    // rows per task unit: a panel is read once per block
constexpr int64_t kRowGranule = 32;  // rows per share when rows are split over threads (AMX's block)

// Four rows of 16 columns interleaved into 64 bytes (column-major groups of four), each byte
// XORed with `flip`: with SSE2 on x86-64, a plain loop elsewhere.
inline void InterleaveQuad16(const uint8_t* r0, const uint8_t* r1, const uint8_t* r2, const uint8_t* r3, uint8_t flip,
                             int8_t* dst) {
#if defined(__x86_64__) && defined(__GNUC__)
  const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
  const __m128i a = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0)), f);
  const __m128i b = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r1)), f);
  const __m128i c = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r2)), f);
  const __m128i d = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r3)), f);
  const __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
  const __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
  auto* out = reinterpret_cast<__m128i*>(dst);
  _mm_storeu_si128(out + 0, _mm_unpacklo_epi16(ab_lo, cd_lo));
  _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(ab_lo, cd_lo));
  _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(ab_hi, cd_hi));
  _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(ab_hi, cd_hi));
#else
  const uint8_t* rows[4] = {r0, r1, r2, r3};
  for (int j = 0; j < 16; ++j) {
    for (int i = 0; i < 4; ++i) dst[j * 4 + i] = static_cast<int8_t>(rows[i][j] ^ flip);
  }
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
#define ONNX_LIGHT_U8S8_VNNI 1
#define ONNX_LIGHT_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))

ONNX_LIGHT_VNNI_TARGET int32_t RowSum(const uint8_t* a, int64_t k) {
  __m512i sum = _mm512_setzero_si512();
  int64_t i = 0;
  for (; i + 64 <= k; i += 64) {
    sum = _mm512_add_epi64(sum, _mm512_sad_epu8(_mm512_loadu_si512(a + i), _mm512_setzero_si512()));
  }
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, sum);
  uint64_t total = 0;
  for (uint64_t lane : lanes) total += lane;
  for (; i < k; ++i) total += a[i];
  return static_cast<int32_t>(static_cast<uint32_t>(total));
}

// vpdpbusd takes the unsigned bytes first: the broadcast row bytes or the panel's.
template <bool kRowsUnsigned>
ONNX_LIGHT_VNNI_TARGET inline __m512i Dot(__m512i acc, __m512i row, __m512i panel) {
  return kRowsUnsigned ? _mm512_dpbusd_epi32(acc, row, panel) : _mm512_dpbusd_epi32(acc, panel, row);
}

struct Corrections {
  const int32_t* row_s;
  const int32_t* row_t;  // null: no second correction
  __m512i col_u[2], col_v[2];
};

// C[r][0..cols) = acc[2r], acc[2r + 1] (columns 0-15, 16-31) minus the corrections.
template <int R>
ONNX_LIGHT_VNNI_TARGET inline void StoreCorrected(const __m512i* acc, const Corrections& corr, int32_t* c, int64_t ldc,
                                                  int64_t cols) {
  const __mmask16 m0 = cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? __mmask16(0xFFFF) : cols <= 16 ? __mmask16(0) : __mmask16((1u << (cols - 16)) - 1);
  for (int r = 0; r < R; ++r) {
    const __m512i s = _mm512_set1_epi32(corr.row_s[r]);
    __m512i c0 = _mm512_sub_epi32(acc[2 * r], _mm512_mullo_epi32(s, corr.col_u[0]));
    __m512i c1 = _mm512_sub_epi32(acc[2 * r + 1], _mm512_mullo_epi32(s, corr.col_u[1]));
    if (corr.row_t != nullptr) {
      const __m512i t = _mm512_set1_epi32(corr.row_t[r]);
      c0 = _mm512_sub_epi32(c0, _mm512_mullo_epi32(t, corr.col_v[0]));
      c1 = _mm512_sub_epi32(c1, _mm512_mullo_epi32(t, corr.col_v[1]));
    }
    _mm512_mask_storeu_epi32(c + r * ldc, m0, c0);
    _mm512_mask_storeu_epi32(c + r * ldc + 16, m1, c1);
  }
}

// R rows against one panel, corrected, stored to C[r][0..cols).
template <int R, bool kRowsUnsigned>
ONNX_LIGHT_VNNI_TARGET void Tile(const uint8_t* rows, int64_t lda, const int8_t* panel, int64_t k,
                                 const Corrections& corr, int32_t* c, int64_t ldc, int64_t cols) {
  __m512i acc0[R], acc1[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm512_setzero_si512();
  const int64_t full = k / 4;
  for (int64_t q = 0; q < full; ++q) {
    const __m512i b0 = _mm512_loadu_si512(panel + q * kQuadBytes);
    const __m512i b1 = _mm512_loadu_si512(panel + q * kQuadBytes + 64);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      int32_t quad;
      std::memcpy(&quad, rows + r * lda + 4 * q, sizeof(quad));
      const __m512i av = _mm512_set1_epi32(quad);
      acc0[r] = Dot<kRowsUnsigned>(acc0[r], av, b0);
      acc1[r] = Dot<kRowsUnsigned>(acc1[r], av, b1);
    }
  }
  if (k % 4 != 0) {  // the last group: the row's remaining bytes, the panel zero past k
    const __m512i b0 = _mm512_loadu_si512(panel + full * kQuadBytes);
    const __m512i b1 = _mm512_loadu_si512(panel + full * kQuadBytes + 64);
    for (int r = 0; r < R; ++r) {
      int32_t quad = 0;
      std::memcpy(&quad, rows + r * lda + 4 * full, static_cast<size_t>(k % 4));
      const __m512i av = _mm512_set1_epi32(quad);
      acc0[r] = Dot<kRowsUnsigned>(acc0[r], av, b0);
      acc1[r] = Dot<kRowsUnsigned>(acc1[r], av, b1);
    }
  }
  __m512i acc[2 * R];
  for (int r = 0; r < R; ++r) {
    acc[2 * r] = acc0[r];
    acc[2 * r + 1] = acc1[r];
  }
  StoreCorrected<R>(acc, corr, c, ldc, cols);
}

// The full 8-row tile with named accumulators: with the array form above GCC copies every
// accumulator once per step (a dozen extra moves and two spills per 16 products).
template <bool kRowsUnsigned>
ONNX_LIGHT_VNNI_TARGET void Tile8(const uint8_t* rows, int64_t lda, const int8_t* panel, int64_t k,
                                  const Corrections& corr, int32_t* c, int64_t ldc, int64_t cols) {
  if (k % 4 != 0) return Tile<8, kRowsUnsigned>(rows, lda, panel, k, corr, c, ldc, cols);
  __m512i c00 = _mm512_setzero_si512(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  __m512i c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
  const int64_t full = k / 4;
  const uint8_t* r0 = rows;
  for (int64_t q = 0; q < full; ++q, r0 += 4) {
    const __m512i b0 = _mm512_loadu_si512(panel + q * kQuadBytes);
    const __m512i b1 = _mm512_loadu_si512(panel + q * kQuadBytes + 64);
#define ONNX_LIGHT_VNNI_ROW(r)                                          \
  {                                                                     \
    int32_t quad;                                                       \
    std::memcpy(&quad, r0 + (r) * lda, sizeof(quad));                   \
    const __m512i av = _mm512_set1_epi32(quad);                         \
    c##r##0 = Dot<kRowsUnsigned>(c##r##0, av, b0);                      \
    c##r##1 = Dot<kRowsUnsigned>(c##r##1, av, b1);                      \
  }
    ONNX_LIGHT_VNNI_ROW(0)
    ONNX_LIGHT_VNNI_ROW(1)
    ONNX_LIGHT_VNNI_ROW(2)
    ONNX_LIGHT_VNNI_ROW(3)
    ONNX_LIGHT_VNNI_ROW(4)
    ONNX_LIGHT_VNNI_ROW(5)
    ONNX_LIGHT_VNNI_ROW(6)
    ONNX_LIGHT_VNNI_ROW(7)
#undef ONNX_LIGHT_VNNI_ROW
  }
  const __m512i acc[16] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71};
  StoreCorrected<8>(acc, corr, c, ldc, cols);
}

using TileFn = void (*)(const uint8_t*, int64_t, const int8_t*, int64_t, const Corrections&, int32_t*, int64_t,
                        int64_t);

template <bool U>
constexpr TileFn kTiles[kTileRows + 1] = {nullptr,    Tile<1, U>, Tile<2, U>, Tile<3, U>, Tile<4, U>,
                                          Tile<5, U>, Tile<6, U>, Tile<7, U>, Tile8<U>};

ONNX_LIGHT_VNNI_TARGET __m512i LoadColumns(const int32_t* v, int64_t count) {
  const __mmask16 mask = count >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << std::max<int64_t>(count, 0)) - 1);
  return _mm512_maskz_loadu_epi32(mask, v);
}

// AMX: tiles 0-3 accumulate a 32 x 32 block of C (2 x 2 tiles of 16 x 16 int32), tiles 4-5
// hold 16 rows x 64 k of the rows operand, tiles 6-7 16 groups of four k x 16 columns of the
// panel. Every tile is 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

#define ONNX_LIGHT_AMX_TARGET __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vnni")))

ONNX_LIGHT_AMX_TARGET void AmxBegin() {
  static const TileConfig config;
  _tile_loadconfig(&config);
}

ONNX_LIGHT_AMX_TARGET void AmxEnd() { _tile_release(); }

// Tiles 0-3 += 32 rows (stride `lda`, 64 * chunks readable bytes each) x a panel.
template <bool kRowsUnsigned>
ONNX_LIGHT_AMX_TARGET inline void AmxAccumulate(const uint8_t* rows, int64_t lda, const int8_t* panel, int64_t chunks) {
  for (int64_t j = 0; j < chunks; ++j) {
    _tile_loadd(4, rows + 64 * j, lda);
    _tile_loadd(5, rows + 16 * lda + 64 * j, lda);
    _tile_loadd(6, panel + j * 16 * kQuadBytes, kQuadBytes);
    _tile_loadd(7, panel + j * 16 * kQuadBytes + 64, kQuadBytes);
    if constexpr (kRowsUnsigned) {
      _tile_dpbusd(0, 4, 6);
      _tile_dpbusd(1, 4, 7);
      _tile_dpbusd(2, 5, 6);
      _tile_dpbusd(3, 5, 7);
    } else {
      _tile_dpbsud(0, 4, 6);
      _tile_dpbsud(1, 4, 7);
      _tile_dpbsud(2, 5, 6);
      _tile_dpbsud(3, 5, 7);
    }
  }
}

// 32 rows against a panel: out[32][32].
template <bool kRowsUnsigned>
ONNX_LIGHT_AMX_TARGET void AmxBlock(const uint8_t* rows, int64_t lda, const int8_t* panel, int64_t chunks,
                                    int32_t* out) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  AmxAccumulate<kRowsUnsigned>(rows, lda, panel, chunks);
  _tile_stored(0, out, 128);
  _tile_stored(1, out + 16, 128);
  _tile_stored(2, out + 16 * 32, 128);
  _tile_stored(3, out + 16 * 32 + 16, 128);
}

// AmxBlock starting from `init` (32 x 32 int32, rows 128 bytes apart: the corrections, already
// negated) and storing straight into C (row stride ldc): no pass over the block afterwards.
template <bool kRowsUnsigned>
ONNX_LIGHT_AMX_TARGET void AmxBlockInto(const uint8_t* rows, int64_t lda, const int8_t* panel, int64_t chunks,
                                        const int32_t* init, int32_t* c, int64_t ldc) {
  _tile_loadd(0, init, 128);
  _tile_loadd(1, init + 16, 128);
  _tile_loadd(2, init + 16 * 32, 128);
  _tile_loadd(3, init + 16 * 32 + 16, 128);
  AmxAccumulate<kRowsUnsigned>(rows, lda, panel, chunks);
  const int64_t stride = ldc * static_cast<int64_t>(sizeof(int32_t));
  _tile_stored(0, c, stride);
  _tile_stored(1, c + 16, stride);
  _tile_stored(2, c + 16 * ldc, stride);
  _tile_stored(3, c + 16 * ldc + 16, stride);
}

// -(row_s[i] * col_u[j]) for a 32 x 32 block, rows 32 apart. One multiplication per row when
// every column's u is the same (a convolution's input zero point), one row copied when every
// row's s is (a MatMulInteger's per-tensor zero point); otherwise 2 vector products per row.
ONNX_LIGHT_VNNI_TARGET void NegatedCorrections(const int32_t* row_s, const int32_t* col_u, bool u_uniform,
                                               bool s_uniform, int32_t* init) {
  const __m512i u0 = _mm512_loadu_si512(col_u), u1 = _mm512_loadu_si512(col_u + 16);
  const __m512i zero = _mm512_setzero_si512();
  for (int i = 0; i < 32; ++i) {
    __m512i v0, v1;
    if (u_uniform) {
      v0 = v1 = _mm512_set1_epi32(static_cast<int32_t>(0u - static_cast<uint32_t>(row_s[i]) *
                                                               static_cast<uint32_t>(col_u[0])));
    } else if (s_uniform && i > 0) {
      v0 = _mm512_load_si512(init);
      v1 = _mm512_load_si512(init + 16);
    } else {
      const __m512i s = _mm512_set1_epi32(row_s[i]);
      v0 = _mm512_sub_epi32(zero, _mm512_mullo_epi32(s, u0));
      v1 = _mm512_sub_epi32(zero, _mm512_mullo_epi32(s, u1));
    }
    _mm512_store_si512(init + i * 32, v0);
    _mm512_store_si512(init + i * 32 + 16, v1);
  }
}

// Rows [r0, r1) against panel p: AMX blocks of 32 rows when `amx`, VNNI tiles for the rest.
ONNX_LIGHT_VNNI_TARGET void PanelRows(int64_t p, int64_t r0, int64_t r1, const uint8_t* rows, int64_t lda,
                                      bool rows_unsigned, const QuadPanels& b, const int32_t* row_s,
                                      const int32_t* col_u, const int32_t* row_t, const int32_t* col_v, int32_t* c,
                                      int64_t ldc, bool amx, std::vector<uint8_t>* padded) {
  const int64_t c0 = p * kPanel, cols = std::min(kPanel, b.n - c0);
  Corrections corr;
  corr.col_u[0] = LoadColumns(col_u + c0, cols);
  corr.col_u[1] = LoadColumns(col_u + c0 + 16, cols - 16);
  if (row_t != nullptr) {
    corr.col_v[0] = LoadColumns(col_v + c0, cols);
    corr.col_v[1] = LoadColumns(col_v + c0 + 16, cols - 16);
  }
  const int8_t* panel = b.panels_data + p * b.quads * kQuadBytes;
  int64_t r = r0;
  if (amx) {
    const int64_t chunks = b.quads / 16, depth = chunks * 64;
    alignas(64) int32_t block[32 * 32];
    // A full panel without the second correction: the corrections start the accumulators and
    // the tiles store straight into C.
    const bool into_c = cols == kPanel && row_t == nullptr;
    bool u_uniform = true, s_uniform = true;
    if (into_c) {
      for (int64_t j = 1; j < kPanel; ++j) u_uniform = u_uniform && col_u[c0 + j] == col_u[c0];
      for (int64_t i = r0 + 1; i < r1; ++i) s_uniform = s_uniform && row_s[i] == row_s[r0];
    }
    for (; r + 32 <= r1; r += 32) {
      const uint8_t* src = rows + r * lda;
      int64_t stride = lda;
      if (depth != b.k && lda < depth) {
        // A tile reads 64 bytes of k at a time: copy the rows with zeros past k (the panel's
        // groups past k are zero too), so no read passes the end of the caller's rows.
        padded->assign(static_cast<size_t>(32 * depth), 0);
        for (int i = 0; i < 32; ++i) std::memcpy(padded->data() + i * depth, src + i * lda, static_cast<size_t>(b.k));
        src = padded->data();
        stride = depth;
      }
      if (into_c) {
        NegatedCorrections(row_s + r, col_u + c0, u_uniform, s_uniform, block);
        int32_t* dst = c + r * ldc + c0;
        if (rows_unsigned) {
          AmxBlockInto<true>(src, stride, panel, chunks, block, dst, ldc);
        } else {
          AmxBlockInto<false>(src, stride, panel, chunks, block, dst, ldc);
        }
        continue;
      }
      if (rows_unsigned) {
        AmxBlock<true>(src, stride, panel, chunks, block);
      } else {
        AmxBlock<false>(src, stride, panel, chunks, block);
      }
      for (int i = 0; i < 32; ++i) {
        const __m512i acc[2] = {_mm512_load_si512(block + i * 32), _mm512_load_si512(block + i * 32 + 16)};
        corr.row_s = row_s + r + i;
        corr.row_t = row_t == nullptr ? nullptr : row_t + r + i;
        StoreCorrected<1>(acc, corr, c + (r + i) * ldc + c0, ldc, cols);
      }
    }
  }
  const TileFn* tiles = rows_unsigned ? kTiles<true> : kTiles<false>;
  for (; r < r1; r += kTileRows) {
    const int rows_here = static_cast<int>(std::min<int64_t>(kTileRows, r1 - r));
    corr.row_s = row_s + r;
    corr.row_t = row_t == nullptr ? nullptr : row_t + r;
    tiles[rows_here](rows + r * lda, lda, panel, b.k, corr, c + r * ldc + c0, ldc, cols);
  }
}
#endif

}  // namespace

bool U8S8GemmAvailable() {
#ifdef ONNX_LIGHT_U8S8_VNNI
  static const bool available =
      UseAvx512() && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
  return available;
#else
  return false;
#endif
}

bool U8S8GemmUsesAmx() {
#ifdef ONNX_LIGHT_U8S8_VNNI
  static const bool uses = [] {
    const char* off = std::getenv("ONNX_LIGHT_DISABLE_AMX");
    if (off != nullptr && *off != '\0' && std::strcmp(off, "0") != 0) return false;
    if (!U8S8GemmAvailable()) return false;
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
    constexpr unsigned kAmxTile = 1u << 24, kAmxInt8 = 1u << 25;
    if ((edx & kAmxTile) == 0 || (edx & kAmxInt8) == 0) return false;
    // Linux hands out the 8 KB tile state only to processes that ask (ARCH_REQ_XCOMP_PERM for
    // XFEATURE_XTILEDATA); without it the first tile instruction faults.
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return uses;
#else
  return false;
#endif
}

bool QuadGemmUsesAmx(int64_t m) { return U8S8GemmUsesAmx() && m >= 32; }

const char* U8S8ProductName(int64_t m) { return QuadGemmUsesAmx(m) ? "u8s8-amx" : "u8s8-vnni"; }

void PackQuadPanels(const uint8_t* src, int64_t k, int64_t n, int64_t ld, uint8_t flip, bool sums, bool signed_sums,
                    QuadPanels* out, int8_t* storage, ThreadPool* pool) {
  out->k = k;
  out->n = n;
  out->quads = ((k + 63) / 64) * 16;
  out->panels = (n + kPanel - 1) / kPanel;
  if (storage == nullptr) {
    out->data.resize(static_cast<size_t>(QuadPanelsSize(k, n)));
    storage = out->data.data();
  } else {
    out->data.clear();
  }
  out->panels_data = storage;
  out->column_sums.assign(sums ? static_cast<size_t>(n) : 0, 0);
  const int64_t quads = out->quads;
  int32_t* column_sums = out->column_sums.data();
  ParallelFor(pool, out->panels, std::max<int64_t>(1, 4096 / std::max<int64_t>(k, 1)), [&](int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p) {
      int8_t* panel = storage + p * quads * kQuadBytes;
      const int64_t c0 = p * kPanel, cols = std::min(kPanel, n - c0);
      for (int64_t q = 0; q < quads; ++q) {
        int8_t* dst = panel + q * kQuadBytes;
        const uint8_t* r0 = src + 4 * q * ld + c0;
        if (cols == kPanel && 4 * q + 4 <= k) {
          InterleaveQuad16(r0, r0 + ld, r0 + 2 * ld, r0 + 3 * ld, flip, dst);
          InterleaveQuad16(r0 + 16, r0 + ld + 16, r0 + 2 * ld + 16, r0 + 3 * ld + 16, flip, dst + 64);
          continue;
        }
        std::memset(dst, 0, kQuadBytes);
        for (int64_t i = 0; i < 4 && 4 * q + i < k; ++i) {
          for (int64_t j = 0; j < cols; ++j) dst[j * 4 + i] = static_cast<int8_t>(r0[i * ld + j] ^ flip);
        }
      }
      if (!sums) continue;
      uint32_t acc[kPanel] = {};
      for (int64_t r = 0; r < k; ++r) {
        const uint8_t* row = src + r * ld + c0;
        for (int64_t j = 0; j < cols; ++j) {
          const auto v = static_cast<uint8_t>(row[j] ^ flip);
          acc[j] += signed_sums ? static_cast<uint32_t>(static_cast<int8_t>(v)) : v;
        }
      }
      for (int64_t j = 0; j < cols; ++j) column_sums[c0 + j] = static_cast<int32_t>(acc[j]);
    }
  });
}

void QuadGemm(int64_t m, const uint8_t* rows, int64_t lda, bool rows_unsigned, const QuadPanels& b,
              const int32_t* row_s, const int32_t* col_u, const int32_t* row_t, const int32_t* col_v, int32_t* c,
              int64_t ldc, ThreadPool* pool, const QuadGemmDone* done) {
#ifdef ONNX_LIGHT_U8S8_VNNI
  if (m == 0 || b.n == 0) return;
  const int64_t row_blocks = (m + kRowBlock - 1) / kRowBlock;
  const int64_t per_unit = std::max<int64_t>(1, std::min(m, kRowBlock) * b.quads * 4 * kPanel);
  const int64_t min_units = std::max<int64_t>(1, (int64_t{1} << 17) / per_unit);
  const bool amx = QuadGemmUsesAmx(m);
  const int64_t units = b.panels * row_blocks;
  const int64_t tasks = pool == nullptr ? 1 : std::min<int64_t>(pool->num_threads(), units / min_units);
  const int64_t granules = (m + kRowGranule - 1) / kRowGranule;
  if (tasks <= 1 || granules >= tasks) {
    // Rows per task, every panel: a thread reads only its own rows of A and writes only its own
    // rows of C, which the previous and the next node split the same way. Across cores, reading
    // rows another core just wrote cost more than the product (2 threads ran a 128 x 256 x 256
    // QLinearMatMul in 42 us against 18 us on one).
    const auto by_rows = [&](int64_t first, int64_t last) {
      const int64_t r0 = first * kRowGranule, r1 = std::min(m, last * kRowGranule);
      std::vector<uint8_t> padded;
      if (amx) AmxBegin();
      for (int64_t p = 0; p < b.panels; ++p) {
        PanelRows(p, r0, r1, rows, lda, rows_unsigned, b, row_s, col_u, row_t, col_v, c, ldc, amx, &padded);
      }
      if (amx) AmxEnd();
      if (done != nullptr) (*done)(r0, r1 - r0, 0, b.n);
    };
    if (tasks <= 1) {
      by_rows(0, granules);
    } else {
      pool->ParallelFor(granules, by_rows, tasks);
    }
    return;
  }
  // Fewer rows than threads: units of (panel, block of rows), panel-major so a task's units
  // share panels.
  ParallelFor(pool, units, min_units, [&](int64_t first, int64_t last) {
    std::vector<uint8_t> padded;
    if (amx) AmxBegin();
    for (int64_t u = first; u < last; ++u) {
      const int64_t p = u / row_blocks, r0 = (u % row_blocks) * kRowBlock, r1 = std::min(m, r0 + kRowBlock);
      PanelRows(p, r0, r1, rows, lda, rows_unsigned, b, row_s, col_u, row_t, col_v, c, ldc, amx, &padded);
      if (done != nullptr) (*done)(r0, r1 - r0, p * kPanel, std::min(kPanel, b.n - p * kPanel));
    }
    if (amx) AmxEnd();
  });
#else
  (void)m, (void)rows, (void)lda, (void)rows_unsigned, (void)b, (void)row_s, (void)col_u, (void)row_t, (void)col_v;
  (void)c, (void)ldc, (void)pool, (void)done;
#endif
}

void PackU8S8B(const void* b, bool is_signed, int64_t k, int64_t n, int64_t ldb, const int32_t* zero_point,
               bool per_column, PackedU8S8B* out, int8_t* storage) {
  // A uint8 B moves to int8 by subtracting 128 (XOR 0x80), and its zero point with it.
  const int32_t shift = is_signed ? 0 : 128;
  PackQuadPanels(static_cast<const uint8_t*>(b), k, n, ldb, is_signed ? 0 : 0x80, true, true, &out->panels, storage);
  out->zero_point.resize(static_cast<size_t>(n));
  out->adjusted_sums.resize(static_cast<size_t>(n));
  out->zero_point_nonzero = false;
  for (int64_t j = 0; j < n; ++j) {
    const int32_t z = zero_point[per_column ? j : 0] - shift;
    out->zero_point[static_cast<size_t>(j)] = z;
    out->zero_point_nonzero = out->zero_point_nonzero || z != 0;
    out->adjusted_sums[static_cast<size_t>(j)] = static_cast<int32_t>(
        static_cast<uint32_t>(out->panels.column_sums[j]) - static_cast<uint32_t>(k) * static_cast<uint32_t>(z));
  }
}

void U8S8Gemm(int64_t m, const uint8_t* a, int64_t lda, const int32_t* a_zp, bool a_zp_per_row,
              const PackedU8S8B& b, int32_t* c, int64_t ldc, ThreadPool* pool, const QuadGemmDone* done) {
#ifdef ONNX_LIGHT_U8S8_VNNI
  if (m == 0 || b.panels.n == 0) return;
  std::vector<int32_t> row_zp(a_zp, a_zp + (a_zp_per_row ? m : 1));
  if (!a_zp_per_row) row_zp.assign(static_cast<size_t>(m), a_zp[0]);
  std::vector<int32_t> row_sums;
  if (b.zero_point_nonzero) {
    row_sums.resize(static_cast<size_t>(m));
    for (int64_t r = 0; r < m; ++r) row_sums[static_cast<size_t>(r)] = RowSum(a + r * lda, b.panels.k);
  }
  QuadGemm(m, a, lda, true, b.panels, row_zp.data(), b.adjusted_sums.data(),
           row_sums.empty() ? nullptr : row_sums.data(), b.zero_point.data(), c, ldc, pool, done);
#else
  (void)m, (void)a, (void)lda, (void)a_zp, (void)a_zp_per_row, (void)b, (void)c, (void)ldc, (void)pool, (void)done;
#endif
}

}  // namespace onnx_light::runtime

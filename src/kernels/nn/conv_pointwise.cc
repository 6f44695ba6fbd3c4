// GCC 12's AVX-512 intrinsics seed results with _mm512_undefined_ps() and, once inlined into a
// target("avx512f") function, warn that it is uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/nn/conv_pointwise.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/nn/conv_direct.h"
#include "onnx_light/runtime/allocator.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "kernels/elementwise/sigmoid_avx512.h"
#define ONNX_LIGHT_POINTWISE_CONV 1
#else
#define ONNX_LIGHT_POINTWISE_CONV 0
#endif

namespace onnx_light::runtime {

namespace {

constexpr int64_t kLanes = 16;       // floats per vector, and output channels per packed block
constexpr int kTileChannels = 8;     // accumulators per vector of pixels: half a packed block
constexpr int kTileVectors = 3;      // 8 x 3 = 24 accumulators
constexpr int64_t kTilePixels = kLanes * kTileVectors;
// A chunk is the run of tiles whose output rows get the epilogue in one call per channel; its
// input panel (one pass's rows of the chunk's pixels) should stay in L2 while every channel block reads it.
constexpr int64_t kMaxChunkTiles = 4;
constexpr int64_t kChunkPanelBytes = int64_t{256} << 10;
// A TiledGemm on a packed B deeper than one pass has no panel to keep in L2. When A has many
// rows its chunks take up to kMaxWideChunkTiles tiles (1152 columns): narrow chunks read all of A
// once per 192 columns (3 MB per chunk for whisper's 750 x 1024 A), wide ones B once per range
// of rows. Whisper's 750 x 1024 x 256 product: 2790 / 1320 -> 2440 / 1140 us at 1 / 2 threads;
// its 750 x 256 x 1024 one 2610 / 1420 -> 2280 / 1100. With a few hundred rows or fewer B is
// the larger operand and the narrow chunks stay (ViT's 197-row products were even or better).
constexpr int64_t kMaxWideChunkTiles = 24;
constexpr int64_t kMinWideChunkRows = 384;
// Output channels from which a deep product copies each pass's rows of x into a panel: below it
// the copy cost more than the tiles' loads from x in place saved (squeezenet's 512->64 at 13x13:
// 96 -> 68 us without it; efficientnet_b0's 672->112 at 14x14: 202 -> 180 us), at 256 and more
// the two are even or the panel wins (512->1000 at 13x13: 1100 against 1117 us).
constexpr int64_t kMinPanelChannels = 256;
// Tails of this many pixels or fewer take PointwiseTail.
constexpr int64_t kMaxTailPixels = 8;

// What every tile of one product reads and writes. Row r of x starts at x + r * x_stride; row
// (output channel) c of y, and of z, at y + c * y_stride. The weights are either packed
// (packed_w) or, for TiledGemm, A itself, row-major with row stride `a_stride`.
struct Operands {
  const float* x;
  int64_t x_stride;
  const float* packed_x;  // x packed by PackTiledGemmB (then x is unused), or null
  int64_t k;
  int64_t pixels;
  const float* packed_w;  // null when the weights are read from `a`
  const float* a;
  int64_t a_stride;
  const float* bias;         // per output channel, or null
  const float* column_bias;  // per pixel (TiledGemm's per-column bias), or null
  const float* z;            // residual laid out like y, or null
  float* y;
  int64_t y_stride;
  bool accumulate;  // start from the values y holds instead of the bias
  const float* x_scale = nullptr;  // row t of x is read as x * x_scale[t] (rounded), or null
};

#if ONNX_LIGHT_POINTWISE_CONV

// Rows of x (input channels, or taps) per pass over a chunk. A tile reads its 48 pixels of these
// rows (24 KiB at 128) for every block of 8 output channels, so they stay in L1 while the
// weights of the pass (m x 128 floats) come from L2; without this a deep product (k = 4608 in
// resnet's last stage) streamed both operands from L2 or L3 for every tile.
constexpr int64_t kDepthBlock = 128;

// Rows per pass of a product k deep: as few passes as kDepthBlock allows, of equal depth, so
// that k = 147 (a 7x7 layer on 3 channels) runs 74 + 73 rows rather than 128 + 19, whose short
// pass would load and store every accumulator for a few multiply-adds.
int64_t PassRows(int64_t k) {
  const int64_t passes = (std::max<int64_t>(k, 1) + kDepthBlock - 1) / kDepthBlock;
  return (std::max<int64_t>(k, 1) + passes - 1) / passes;
}

// The activations a tile applies in registers as it stores its last pass: Relu, and Sigmoid and
// SiLU with the epilogue's own AVX-512 sigmoid (the same bits as ApplyConvEpilogue on the stored
// rows, without storing, reloading and storing them again: SiLU on efficientnet_b0's 1x1
// expansions).
enum class TileActivation { kNone, kRelu, kSigmoid, kSiLU };

__attribute__((target("avx512f"), always_inline)) inline __m512 Activate(TileActivation act, __m512 v) {
  switch (act) {
    case TileActivation::kRelu:
      // v < 0 ? 0 : v, like Relu (NaN compares false, so it passes through).
      return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v, _mm512_setzero_ps());
    case TileActivation::kSigmoid:
      return fast_math::SigmoidAvx512(v);
    case TileActivation::kSiLU:
      return _mm512_mul_ps(v, fast_math::SigmoidAvx512(v));
    default:
      return v;
  }
}

// What one pass over rows [t_begin, t_begin + kn) of x does with a tile.
struct TilePass {
  const float* x;    // the tile's first pixel in row t_begin
  int64_t x_stride;  // between rows
  int64_t kn;
  const float* wb;   // the first channel's weight of row t_begin, in its packed block or in A
  int64_t w_channel_stride;  // between the 8 channels' weights: 0 when packed (1 apart, 16 per row)
  const float* bias; // used when !load_y, or null
  const float* column_bias;  // the tile's first pixel's bias, used when !load_y, or null
  bool load_y;       // start from y (a later pass, or an accumulating product)
  TileActivation act;  // applied as the tile is stored: kNone but on a fused product's last pass
  const float* prefetch_w = nullptr;  // packed weights to prefetch into L2, one line per row, or null
  const float* x_scale = nullptr;     // row t_begin's factor (row t_begin + t: x_scale[t]), or null
};

// kVecs vectors of pixels x 8 output channels, accumulated over one pass's rows; `last` masks
// the last vector's pixels, `live` the channels. kRowMajor: the weights are rows of A (channel
// j's row at wb + j * w_channel_stride) and are broadcast from there, so no copy of A is made.
template <int kVecs, bool kRowMajor, bool kScaled>
__attribute__((target("avx512f"), always_inline)) inline void PointwiseTile(const TilePass& p, int64_t live,
                                                                             __mmask16 last, float* y,
                                                                             int64_t y_stride) {
  const __m512 zero = _mm512_setzero_ps();
  __m512 acc[kTileChannels][kVecs];
#pragma GCC unroll 8
  for (int j = 0; j < kTileChannels; ++j) {
    const __m512 b = p.bias != nullptr && j < live ? _mm512_set1_ps(p.bias[j]) : zero;
#pragma GCC unroll 3
    for (int v = 0; v < kVecs; ++v) {
      const __mmask16 mask = j < live ? (v + 1 < kVecs ? __mmask16(0xFFFF) : last) : __mmask16(0);
      if (p.load_y) {
        acc[j][v] = _mm512_maskz_loadu_ps(mask, y + j * y_stride + v * kLanes);
      } else if (p.column_bias != nullptr) {
        acc[j][v] = _mm512_maskz_loadu_ps(v + 1 < kVecs ? __mmask16(0xFFFF) : last, p.column_bias + v * kLanes);
      } else {
        acc[j][v] = b;
      }
    }
  }
  const float* row = p.x;
  if (kRowMajor && live == kTileChannels) {
    // Rows 0-3 and 4-7 of A from two pointers and three strides, so that every broadcast is one
    // addressing mode and the loop adds nothing on the FMA ports but the FMAs.
    const char* a0 = reinterpret_cast<const char*>(p.wb);
    const int64_t s1 = p.w_channel_stride * int64_t{sizeof(float)};
    const int64_t s3 = 3 * s1;
    const char* a4 = a0 + 4 * s1;
    const int64_t kn = p.kn, x_stride = p.x_stride;
#pragma GCC unroll 2
    for (int64_t t = 0; t < kn; ++t, row += x_stride, a0 += sizeof(float), a4 += sizeof(float)) {
      __m512 xv[kVecs];
#pragma GCC unroll 3
      for (int v = 0; v < kVecs; ++v) {
        xv[v] = v + 1 < kVecs ? _mm512_loadu_ps(row + v * kLanes) : _mm512_maskz_loadu_ps(last, row + v * kLanes);
      }
      const char* rows[kTileChannels] = {a0, a0 + s1, a0 + 2 * s1, a0 + s3, a4, a4 + s1, a4 + 2 * s1, a4 + s3};
#pragma GCC unroll 8
      for (int j = 0; j < kTileChannels; ++j) {
        const __m512 w = _mm512_set1_ps(*reinterpret_cast<const float*>(rows[j]));
#pragma GCC unroll 3
        for (int v = 0; v < kVecs; ++v) acc[j][v] = _mm512_fmadd_ps(w, xv[v], acc[j][v]);
      }
    }
  } else {
    const int64_t kn = p.kn, x_stride = p.x_stride;
#pragma GCC unroll 2
    for (int64_t t = 0; t < kn; ++t, row += x_stride) {
      if (!kRowMajor && p.prefetch_w != nullptr) {
        _mm_prefetch(reinterpret_cast<const char*>(p.prefetch_w + t * kLanes), _MM_HINT_T1);
      }
      __m512 xv[kVecs];
#pragma GCC unroll 3
      for (int v = 0; v < kVecs; ++v) {
        xv[v] = v + 1 < kVecs ? _mm512_loadu_ps(row + v * kLanes) : _mm512_maskz_loadu_ps(last, row + v * kLanes);
        if constexpr (kScaled) xv[v] = _mm512_mul_ps(xv[v], _mm512_set1_ps(p.x_scale[t]));
      }
      const float* wt = kRowMajor ? p.wb + t : p.wb + t * kLanes;
#pragma GCC unroll 8
      for (int j = 0; j < kTileChannels; ++j) {
        // Rows of A past `live` read row 0 again (their sums are never stored), so that nothing
        // past A's end is read.
        const __m512 w = _mm512_set1_ps(kRowMajor ? wt[(j < live ? j : 0) * p.w_channel_stride] : wt[j]);
#pragma GCC unroll 3
        for (int v = 0; v < kVecs; ++v) acc[j][v] = _mm512_fmadd_ps(w, xv[v], acc[j][v]);
      }
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < kTileChannels; ++j) {
    if (j >= live) break;
#pragma GCC unroll 3
    for (int v = 0; v < kVecs; ++v) {
      _mm512_mask_storeu_ps(y + j * y_stride + v * kLanes, v + 1 < kVecs ? __mmask16(0xFFFF) : last,
                            Activate(p.act, acc[j][v]));
    }
  }
}

// Rows [t_begin, t_begin + kn) of the depth for the image's last few pixels.
struct TailPass {
  int64_t t_begin;
  int64_t kn;
  bool load_y;
  TileActivation act;
};

// The last few pixels of the image (fewer than half a vector) with the roles turned: 16 output
// channels of one packed block in the lanes, one accumulator per pixel, so that a 7x7 image does
// not spend a whole vector of pixels on its 49th. kBlocks packed blocks at once keep enough
// independent accumulators in flight when there are only one or two pixels. Pixels [p0, p0 +
// kPixels), blocks from channel m0 on, channels below m_end, rows [t_begin, t_begin + kn).
template <int kPixels, int kBlocks>
__attribute__((target("avx512f"), always_inline)) inline void PointwiseTailBlocks(const Operands& o, int64_t p0,
                                                                                   int64_t m0, int64_t m_end,
                                                                                   const TailPass& pass) {
  const __m512 zero = _mm512_setzero_ps();
  alignas(64) float lanes[kLanes];
  __m512 acc[kBlocks][kPixels];
  int64_t live[kBlocks];
#pragma GCC unroll 8
  for (int b = 0; b < kBlocks; ++b) {
    live[b] = std::clamp<int64_t>(m_end - (m0 + b * kLanes), 0, kLanes);
    const auto live_mask = static_cast<__mmask16>(live[b] >= kLanes ? 0xFFFF : (1u << live[b]) - 1u);
    const __m512 bias = o.bias != nullptr ? _mm512_maskz_loadu_ps(live_mask, o.bias + m0 + b * kLanes) : zero;
    float* y = o.y + (m0 + b * kLanes) * o.y_stride + p0;
#pragma GCC unroll 8
    for (int r = 0; r < kPixels; ++r) {
      if (pass.load_y) {
        for (int64_t j = 0; j < kLanes; ++j) lanes[j] = j < live[b] ? y[j * o.y_stride + r] : 0.0f;
        acc[b][r] = _mm512_load_ps(lanes);
      } else {
        acc[b][r] = bias;
      }
    }
  }
  const float* x = o.x + pass.t_begin * o.x_stride + p0;
  for (int64_t t = 0; t < pass.kn; ++t) {
    const float* row = x + t * o.x_stride;
    float values[kPixels];
    const float f = o.x_scale != nullptr ? o.x_scale[pass.t_begin + t] : 1.0f;
#pragma GCC unroll 8
    for (int r = 0; r < kPixels; ++r) values[r] = o.x_scale != nullptr ? row[r] * f : row[r];
#pragma GCC unroll 8
    for (int b = 0; b < kBlocks; ++b) {
      const __m512 w = _mm512_loadu_ps(o.packed_w + ((m0 / kLanes + b) * o.k + pass.t_begin + t) * kLanes);
#pragma GCC unroll 8
      for (int r = 0; r < kPixels; ++r) acc[b][r] = _mm512_fmadd_ps(_mm512_set1_ps(values[r]), w, acc[b][r]);
    }
  }
#pragma GCC unroll 8
  for (int b = 0; b < kBlocks; ++b) {
    float* y = o.y + (m0 + b * kLanes) * o.y_stride + p0;
#pragma GCC unroll 8
    for (int r = 0; r < kPixels; ++r) {
      const __m512 out = Activate(pass.act, acc[b][r]);
      _mm512_store_ps(lanes, out);
      for (int64_t j = 0; j < live[b]; ++j) y[j * o.y_stride + r] = lanes[j];
    }
  }
}

// Output channels [m_begin, m_end) of the tail; m_begin is a multiple of 16. About eight
// accumulators per step: one or two pixels take several blocks at once.
template <int kPixels>
__attribute__((target("avx512f"))) void PointwiseTail(const Operands& o, int64_t p0, int64_t m_begin, int64_t m_end,
                                                      const TailPass& pass) {
  constexpr int kBlocks = kPixels == 1 ? 8 : kPixels == 2 ? 4 : kPixels <= 4 ? 2 : 1;
  int64_t m0 = m_begin;
  for (; m_end - m0 > (kBlocks - 1) * kLanes; m0 += kBlocks * kLanes) {
    PointwiseTailBlocks<kPixels, kBlocks>(o, p0, m0, m_end, pass);
  }
  for (; m0 < m_end; m0 += kLanes) PointwiseTailBlocks<kPixels, 1>(o, p0, m0, m_end, pass);
}

using TailFunction = void (*)(const Operands&, int64_t, int64_t, int64_t, const TailPass&);
constexpr TailFunction kTailFunctions[kMaxTailPixels + 1] = {
    nullptr,          PointwiseTail<1>, PointwiseTail<2>, PointwiseTail<3>, PointwiseTail<4>,
    PointwiseTail<5>, PointwiseTail<6>, PointwiseTail<7>, PointwiseTail<8>};

// Copies rows [t_begin, t_begin + kn) of pixels [p0, p_end) of x into `panel`, tile after tile
// ([tile][row][kTilePixels], the last tile's unused pixels zero), so that a tile's rows are
// contiguous whatever x's row stride (a stride near a multiple of 4 KiB would map every row to
// the same few L1 sets).
__attribute__((target("avx512f"))) void PackPanel(const Operands& o, int64_t t_begin, int64_t kn, int64_t p0,
                                                  int64_t p_end, float* panel) {
  for (int64_t t0 = p0; t0 < p_end; t0 += kTilePixels) {
    const int64_t width = std::min(kTilePixels, p_end - t0);
    float* dst = panel + (t0 - p0) / kTilePixels * kn * kTilePixels;
    for (int64_t t = 0; t < kn; ++t) {
      const float* src = o.x + (t_begin + t) * o.x_stride + t0;
      const __m512 f = _mm512_set1_ps(o.x_scale != nullptr ? o.x_scale[t_begin + t] : 1.0f);
#pragma GCC unroll 3
      for (int64_t v = 0; v < kTilePixels; v += kLanes) {
        const int64_t rest = std::clamp<int64_t>(width - v, 0, kLanes);
        const auto mask = static_cast<__mmask16>(rest == kLanes ? 0xFFFF : (1u << rest) - 1u);
        const __m512 values = _mm512_maskz_loadu_ps(mask, src + v);
        _mm512_storeu_ps(dst + t * kTilePixels + v, o.x_scale != nullptr ? _mm512_mul_ps(values, f) : values);
      }
    }
  }
}

// The tile of `vecs` vectors (1 to 3) of pixels for 8 channels.
template <bool kRowMajor, bool kScaled>
__attribute__((target("avx512f"))) void RunTileOf(const TilePass& p, int64_t vecs, int64_t live, __mmask16 last,
                                                  float* y, int64_t y_stride) {
  if (vecs == 3) {
    PointwiseTile<3, kRowMajor, kScaled>(p, live, last, y, y_stride);
  } else if (vecs == 2) {
    PointwiseTile<2, kRowMajor, kScaled>(p, live, last, y, y_stride);
  } else {
    PointwiseTile<1, kRowMajor, kScaled>(p, live, last, y, y_stride);
  }
}

__attribute__((target("avx512f"))) inline void RunTile(const TilePass& p, int64_t vecs, int64_t live, __mmask16 last,
                                                       float* y, int64_t y_stride) {
  if (p.w_channel_stride > 0) {
    RunTileOf<true, false>(p, vecs, live, last, y, y_stride);  // TiledGemm: no scale
  } else if (p.x_scale != nullptr) {
    RunTileOf<false, true>(p, vecs, live, last, y, y_stride);
  } else {
    RunTileOf<false, false>(p, vecs, live, last, y, y_stride);
  }
}

// Where channel m0's weights of row t begin, and the stride between channels (0: packed).
inline const float* TileWeights(const Operands& o, int64_t m0, int64_t t) {
  return o.packed_w != nullptr ? o.packed_w + ((m0 / kLanes) * o.k + t) * kLanes + m0 % kLanes
                               : o.a + m0 * o.a_stride + t;
}

inline int64_t ChannelStride(const Operands& o) { return o.packed_w != nullptr ? 0 : o.a_stride; }

// Vectors of the tile starting at pixel t0 of a run ending at tiles_end, and the last one's mask.
inline int64_t TileVectors(int64_t t0, int64_t tiles_end, __mmask16* last) {
  const int64_t width = std::min(kTilePixels, tiles_end - t0);
  const int64_t vecs = (width + kLanes - 1) / kLanes;
  const int64_t rest = width - (vecs - 1) * kLanes;
  *last = static_cast<__mmask16>(rest == kLanes ? 0xFFFF : (1u << rest) - 1u);
  return vecs;
}

// The epilogue on pixels [p0, p_end) of output channels [m_begin, m_end). When those are whole
// rows they are one contiguous run, taken in one call: an SE block's 1-pixel products would
// otherwise pay a call, and a 7x7 image a mostly empty last vector, per channel.
void EpilogueOnRows(const Operands& o, const ConvEpilogue& epilogue, int64_t m_begin, int64_t m_end, int64_t p0,
                    int64_t p_end) {
  if (p0 == 0 && p_end == o.y_stride) {
    const int64_t offset = m_begin * o.y_stride;
    ApplyConvEpilogue(epilogue, o.y + offset, o.z != nullptr ? o.z + offset : nullptr, (m_end - m_begin) * o.y_stride,
                      0.0f);
    return;
  }
  for (int64_t c = m_begin; c < m_end; ++c) {
    const int64_t offset = c * o.y_stride + p0;
    ApplyConvEpilogue(epilogue, o.y + offset, o.z != nullptr ? o.z + offset : nullptr, p_end - p0, 0.0f);
  }
}

// The panel's threshold for a product: kMinPanelChannels for a 1x1 convolution (packed weights);
// TiledGemm's products (A's rows in place, B unpacked: attention's) keep it from two blocks of
// 16 rows, where it was measured.
inline int64_t MinPanelChannels(const Operands& o) { return o.packed_w != nullptr ? kMinPanelChannels : kLanes + 1; }

// The packed weights of the block of 16 channels after m0's, from row t, for the first half of
// each block to prefetch while it runs (in the model a layer's weights come from memory: 885 KB
// for efficientnet_b0's 192->1152 expansions); null for the second half, the last block, or
// weights not packed.
inline const float* NextBlockWeights(const Operands& o, int64_t m0, int64_t m_end, int64_t t) {
  if (o.packed_w == nullptr || m0 % kLanes != 0 || m0 + kLanes >= m_end) return nullptr;
  return TileWeights(o, m0 + kLanes, t);
}

// The epilogue's activation when the tiles can apply it as they store (no residual to add first).
inline TileActivation InRegisters(const ConvEpilogue& epilogue, const Operands& o) {
  if (o.z != nullptr) return TileActivation::kNone;
  switch (epilogue.activation) {
    case ConvActivation::kRelu:
      return TileActivation::kRelu;
    case ConvActivation::kSigmoid:
      return TileActivation::kSigmoid;
    case ConvActivation::kSiLU:
      return TileActivation::kSiLU;
    default:
      return TileActivation::kNone;
  }
}

// One chunk of `chunk_pixels` pixels (the image's last chunk may be shorter) for output
// channels [m_begin, m_end), m_begin a multiple of 16, then the epilogue on those rows.
__attribute__((target("avx512f"))) void PointwiseChunk(const Operands& o, const ConvEpilogue& epilogue,
                                                       int64_t m_begin, int64_t m_end, int64_t chunk_pixels,
                                                       int64_t chunk) {
  const TileActivation act = InRegisters(epilogue, o);
  const bool run_epilogue = act == TileActivation::kNone && (!epilogue.is_identity() || o.z != nullptr);
  const int64_t p0 = chunk * chunk_pixels;
  const int64_t p_end = std::min(o.pixels, p0 + chunk_pixels);
  // The image's last pixels, when they would fill less than half of a vector (the tail reads
  // packed weights; with A's rows they take a masked vector).
  const int64_t tail =
      o.packed_w != nullptr && p_end == o.pixels && o.pixels % kLanes <= kMaxTailPixels ? o.pixels % kLanes : 0;
  const int64_t tiles_end = p_end - tail;
  __mmask16 last = 0;

  if (o.k <= kDepthBlock) {
    // One pass, x read in place: each block of 8 channels over the chunk's tiles, and its
    // epilogue while those rows are still in L1.
    if (tail > 0) kTailFunctions[tail](o, tiles_end, m_begin, m_end, TailPass{0, o.k, o.accumulate, act});
    for (int64_t m0 = m_begin; m0 < m_end; m0 += kTileChannels) {
      TilePass p{.x_stride = o.packed_x != nullptr ? kTilePixels : o.x_stride,
                 .kn = o.k,
                 .wb = TileWeights(o, m0, 0),
                 .w_channel_stride = ChannelStride(o),
                 .bias = o.bias != nullptr ? o.bias + m0 : nullptr,
                 .load_y = o.accumulate,
                 .act = act,
                 .x_scale = o.x_scale};
      const int64_t live = std::min<int64_t>(kTileChannels, m_end - m0);
      p.prefetch_w = NextBlockWeights(o, m0, m_end, 0);
      for (int64_t t0 = p0; t0 < tiles_end; t0 += kTilePixels) {
        p.x = o.packed_x != nullptr ? o.packed_x + t0 / kTilePixels * o.k * kTilePixels : o.x + t0;
        p.column_bias = o.column_bias != nullptr ? o.column_bias + t0 : nullptr;
        const int64_t vecs = TileVectors(t0, tiles_end, &last);
        RunTile(p, vecs, live, last, o.y + m0 * o.y_stride + t0, o.y_stride);
        p.prefetch_w = nullptr;
      }
      if (run_epilogue) EpilogueOnRows(o, epilogue, m0, m0 + live, p0, p_end);
    }
    return;
  }

  // A deep product: passes of PassRows rows, each running every block of 8 channels over one
  // tile (its rows copied into a contiguous panel when enough blocks read them) before the next
  // tile; the epilogue once the last pass is done.
  const bool pack = o.packed_x == nullptr && m_end - m_begin >= MinPanelChannels(o);
  thread_local std::vector<float> panel;
  if (pack && panel.size() < static_cast<size_t>(kDepthBlock * chunk_pixels)) {
    panel.resize(static_cast<size_t>(kDepthBlock * chunk_pixels));
  }
  const int64_t pass_rows = PassRows(o.k);
  for (int64_t t_begin = 0; t_begin < o.k; t_begin += pass_rows) {
    const int64_t kn = std::min(pass_rows, o.k - t_begin);
    const bool load_y = o.accumulate || t_begin > 0;
    const bool last_pass = t_begin + kn == o.k;
    if (pack) PackPanel(o, t_begin, kn, p0, tiles_end, panel.data());
    for (int64_t t0 = p0; t0 < tiles_end; t0 += kTilePixels) {
      const int64_t vecs = TileVectors(t0, tiles_end, &last);
      const float* packed_tile =
          o.packed_x != nullptr ? o.packed_x + (t0 / kTilePixels * o.k + t_begin) * kTilePixels : nullptr;
      TilePass p{.x = packed_tile != nullptr ? packed_tile
                      : pack                 ? panel.data() + (t0 - p0) / kTilePixels * kn * kTilePixels
                                             : o.x + t_begin * o.x_stride + t0,
                 .x_stride = packed_tile != nullptr || pack ? kTilePixels : o.x_stride,
                 .kn = kn,
                 .w_channel_stride = ChannelStride(o),
                 .column_bias = o.column_bias != nullptr ? o.column_bias + t0 : nullptr,
                 .load_y = load_y,
                 .act = last_pass ? act : TileActivation::kNone,
                 .x_scale = packed_tile != nullptr || pack || o.x_scale == nullptr ? nullptr : o.x_scale + t_begin};
      for (int64_t m0 = m_begin; m0 < m_end; m0 += kTileChannels) {
        p.wb = TileWeights(o, m0, t_begin);
        p.bias = o.bias != nullptr ? o.bias + m0 : nullptr;
        p.prefetch_w = NextBlockWeights(o, m0, m_end, t_begin);
        RunTile(p, vecs, std::min<int64_t>(kTileChannels, m_end - m0), last, o.y + m0 * o.y_stride + t0,
                o.y_stride);
      }
    }
    // In the same pass, while its weights are in cache (a second sweep over the whole depth
    // would read every weight again: 9 MiB for resnet's 7x7 layers).
    if (tail > 0) {
      kTailFunctions[tail](o, tiles_end, m_begin, m_end,
                           TailPass{t_begin, kn, load_y, last_pass ? act : TileActivation::kNone});
    }
  }
  if (run_epilogue) EpilogueOnRows(o, epilogue, m_begin, m_end, p0, p_end);
}

// How RunTiles hands its units to the pool's threads when they are chunks of pixels only.
enum class PixelShares {
  kClaimed,     // ranges claimed one at a time (ParallelForBalanced)
  kContiguous,  // thread t takes the t-th run of chunks (ParallelForContiguousSlots)
};

// Every tile of the product, over `pool`.
void RunTiles(const Operands& o, int64_t m, const ConvEpilogue& epilogue, ThreadPool* pool, PixelShares shares) {
  if (o.pixels <= 0 || m <= 0) return;
  const int64_t pass_rows = PassRows(o.k);
  const int64_t panel_tile_bytes = pass_rows * kTilePixels * int64_t{sizeof(float)};
  const bool wide = o.packed_x != nullptr && o.k > kDepthBlock && m >= kMinWideChunkRows;
  const int64_t chunk_tiles = wide ? std::min((o.pixels + kTilePixels - 1) / kTilePixels, kMaxWideChunkTiles)
                                   : std::clamp<int64_t>(kChunkPanelBytes / panel_tile_bytes, 1, kMaxChunkTiles);
  const int64_t chunk_pixels = chunk_tiles * kTilePixels;
  const int64_t chunks = (o.pixels + chunk_pixels - 1) / chunk_pixels;
  // Units of work are (chunk, range of output channels): a small image has too few chunks to
  // keep the threads busy (a 7x7 one has one), so its channels are split too, in blocks of 16.
  const int64_t threads = pool != nullptr ? pool->num_threads() : 1;
  const int64_t channel_blocks = (m + kLanes - 1) / kLanes;
  const int64_t parts = std::clamp<int64_t>((2 * threads + chunks - 1) / chunks, 1, channel_blocks);
  const int64_t blocks_per_part = (channel_blocks + parts - 1) / parts;
  const int64_t units = chunks * parts;
  // A task of at least ~64K multiply-adds pays for handing it to another thread.
  constexpr int64_t kMinTaskWork = int64_t{1} << 16;
  const int64_t unit_work =
      std::max<int64_t>(blocks_per_part * kLanes * o.k * std::min(chunk_pixels, o.pixels), 1);
  const int64_t min_units = std::max<int64_t>(1, kMinTaskWork / unit_work);
  if (shares == PixelShares::kContiguous && parts == 1 && threads > 1 && chunks >= threads * min_units) {
    ParallelForContiguousSlots(pool, chunks, threads, [&](int64_t chunk, int64_t) {
      PointwiseChunk(o, epilogue, 0, m, chunk_pixels, chunk);
    });
    return;
  }
  ParallelForBalanced(pool, units, min_units, [&](int64_t begin, int64_t end) {
    // Channel-part-major, so that a thread's consecutive units share weights and the image's
    // short last chunk does not make up a whole task.
    for (int64_t unit = begin; unit < end; ++unit) {
      // Parts of nearly equal numbers of blocks: parts of a rounded-up size would cut 13 blocks
      // (a 197-row A) as 4 + 4 + 4 + 1, and one thread would do twice the other's work.
      const int64_t part = unit / chunks;
      const int64_t m_begin = part * channel_blocks / parts * kLanes;
      const int64_t m_end = std::min(m, (part + 1) * channel_blocks / parts * kLanes);
      if (m_begin < m_end) PointwiseChunk(o, epilogue, m_begin, m_end, chunk_pixels, unit % chunks);
    }
  });
}

#endif

}  // namespace

void PointwiseConv(const float* x, int64_t k, int64_t pixels, const float* packed_w, int64_t m, const float* bias,
                   const ConvEpilogue& epilogue, const float* z, float* y, ThreadPool* pool, int64_t y_stride,
                   const float* x_scale) {
#if ONNX_LIGHT_POINTWISE_CONV
  const Operands o{x, pixels, nullptr, k, pixels, packed_w, nullptr, 0, bias, nullptr, z, y,
                   y_stride > 0 ? y_stride : pixels, false, x_scale};
  // A convolution's image split in runs of pixels, the same runs every layer: the 1x1 layer
  // after another (squeezenet's fire modules, a projection and the next expansion) then reads
  // mostly rows its own core wrote (docs/performance.md).
  RunTiles(o, m, epilogue, pool, PixelShares::kContiguous);
#else
  (void)x, (void)k, (void)pixels, (void)packed_w, (void)m, (void)bias, (void)epilogue, (void)z, (void)y,
      (void)pool, (void)y_stride, (void)x_scale;
#endif
}

bool TiledGemmApplies(int64_t m, int64_t n, int64_t k) {
  return DirectConvAvailable() && m >= kTiledGemmMinRows && n >= kLanes && k > 0;
}

#if ONNX_LIGHT_POINTWISE_CONV
namespace {

// TiledGemm with B in place (packed_b null) or packed by PackTiledGemmB.
void RunTiledGemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                  const float* packed_b, bool accumulate, float* c, int64_t ldc, ThreadPool* pool,
                  const float* column_bias) {
  // A's rows play the output channels, read where they are: each tile broadcasts its 8 rows'
  // values. A row stride that is a multiple of 2 KiB would put the same column of those 8 rows
  // into one or two L1 sets, which evict each other (a 1024-deep product ran 25% slower than a
  // 1040-deep one); such an A is first copied with its rows 64 bytes further apart. On a packed
  // B, whose wide chunks read A once per range of rows, the evictions cost ~6% of the product and
  // the copy pays for itself from about 512 columns: whisper's 750 x 1024 x 256 ran 2410 / 1350
  // us (1 / 2 threads) with the copy and 2380 / 1160 without, a 750 x 1024 x 1024 9720 us with it
  // and 10370 without at 1 thread.
  constexpr int64_t kAliasingBytes = 2048;
  constexpr int64_t kMinPackedCopyColumns = 512;
  constexpr int64_t kRowPadding = 16;
  // The copy goes into a buffer each thread keeps, up to 16 MiB; a larger one lives for this
  // call only.
  constexpr size_t kKeptFloats = size_t{4} << 20;
  constexpr int64_t kMinCopyRows = 64;
  thread_local std::vector<float> kept;
  std::vector<float> once;
  if (lda * int64_t{sizeof(float)} % kAliasingBytes == 0 && (packed_b == nullptr || n >= kMinPackedCopyColumns)) {
    const int64_t stride = k + kRowPadding;
    const auto size = static_cast<size_t>(m * stride);
    std::vector<float>& spaced = size <= kKeptFloats ? kept : once;
    if (spaced.size() < size) spaced.resize(size);
    // On the pool's threads: on one, the copy of whisper's 750 x 1024 A held the other core
    // idle for a sixth of the product.
    float* const dst = spaced.data();
    ParallelFor(pool, m, kMinCopyRows, [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) {
        std::memcpy(dst + r * stride, a + r * lda, static_cast<size_t>(k) * sizeof(float));
      }
    });
    a = spaced.data();
    lda = stride;
  }
  const Operands o{b, ldb, packed_b, k, n, nullptr, a, lda, nullptr, accumulate ? nullptr : column_bias,
                   nullptr, c, ldc, accumulate};
  RunTiles(o, m, ConvEpilogue{}, pool, PixelShares::kClaimed);
}

}  // namespace
#endif

void TiledGemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
               bool accumulate, float* c, int64_t ldc, ThreadPool* pool, const float* column_bias) {
#if ONNX_LIGHT_POINTWISE_CONV
  RunTiledGemm(m, n, k, a, lda, b, ldb, nullptr, accumulate, c, ldc, pool, column_bias);
#else
  (void)m, (void)n, (void)k, (void)a, (void)lda, (void)b, (void)ldb, (void)accumulate, (void)c, (void)ldc,
      (void)pool, (void)column_bias;
#endif
}

int64_t TiledGemmPackedBSize(int64_t k, int64_t n) {
  return (n + kTilePixels - 1) / kTilePixels * k * kTilePixels;
}

void PackTiledGemmB(int64_t k, int64_t n, const float* b, int64_t ldb, float* packed) {
  for (int64_t t0 = 0; t0 < n; t0 += kTilePixels) {
    const int64_t width = std::min(kTilePixels, n - t0);
    float* tile = packed + t0 / kTilePixels * k * kTilePixels;
    for (int64_t t = 0; t < k; ++t) {
      std::memcpy(tile + t * kTilePixels, b + t * ldb + t0, static_cast<size_t>(width) * sizeof(float));
      std::fill(tile + t * kTilePixels + width, tile + (t + 1) * kTilePixels, 0.0f);
    }
  }
}

void PackTiledGemmBTransposed(int64_t k, int64_t n, const float* bt, int64_t ldbt, float* packed) {
  for (int64_t t0 = 0; t0 < n; t0 += kTilePixels) {
    const int64_t width = std::min(kTilePixels, n - t0);
    float* tile = packed + t0 / kTilePixels * k * kTilePixels;
    for (int64_t j = 0; j < width; ++j) {
      const float* column = bt + (t0 + j) * ldbt;
      for (int64_t t = 0; t < k; ++t) tile[t * kTilePixels + j] = column[t];
    }
    for (int64_t t = 0; t < k; ++t) std::fill(tile + t * kTilePixels + width, tile + (t + 1) * kTilePixels, 0.0f);
  }
}

Tensor PackConstantTiledGemmB(const Tensor* b, bool transposed) {
  if (b == nullptr || b->dtype() != DataType::kFloat || b->rank() != 2 || b->size() == 0 || !DirectConvAvailable()) {
    return Tensor();
  }
  const auto allocator = std::make_shared<CpuAllocator>(0);
  const Tensor bc = b->Contiguous(allocator);
  const int64_t k = transposed ? b->dim(1) : b->dim(0), n = transposed ? b->dim(0) : b->dim(1);
  Tensor packed = Tensor::Allocate(DataType::kFloat, {TiledGemmPackedBSize(k, n)}, allocator);
  if (transposed) {
    PackTiledGemmBTransposed(k, n, bc.data<float>(), k, packed.data<float>());
  } else {
    PackTiledGemmB(k, n, bc.data<float>(), n, packed.data<float>());
  }
  return packed.AsReadOnly();
}

void TiledGemmPackedB(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* packed_b,
                      float* c, int64_t ldc, ThreadPool* pool, const float* column_bias) {
#if ONNX_LIGHT_POINTWISE_CONV
  RunTiledGemm(m, n, k, a, lda, nullptr, 0, packed_b, false, c, ldc, pool, column_bias);
#else
  (void)m, (void)n, (void)k, (void)a, (void)lda, (void)packed_b, (void)c, (void)ldc, (void)pool, (void)column_bias;
#endif
}

}  // namespace onnx_light::runtime

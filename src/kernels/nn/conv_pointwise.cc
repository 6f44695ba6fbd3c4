#include "kernels/nn/conv_pointwise.h"

#include <algorithm>

#include "core/thread_pool.h"
#include "kernels/nn/conv_direct.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
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
// input panel (k rows of the chunk's pixels) should stay in L2 while every channel block reads it.
constexpr int64_t kMaxChunkTiles = 4;
constexpr int64_t kChunkPanelBytes = int64_t{256} << 10;

#if ONNX_LIGHT_POINTWISE_CONV

// kVecs vectors of pixels x 8 output channels, accumulated over the k input channels. x and y
// point at the tile's first pixel; wb at the 8 channels' weights in their packed block (16
// floats per input channel); `last` masks the last vector's pixels.
template <int kVecs>
__attribute__((target("avx512f"), always_inline)) inline void PointwiseTile(const float* x, int64_t k,
                                                                             int64_t pixels, const float* wb,
                                                                             const float* bias, int64_t live,
                                                                             bool relu, __mmask16 last, float* y) {
  const __m512 zero = _mm512_setzero_ps();
  __m512 acc[kTileChannels][kVecs];
#pragma GCC unroll 8
  for (int j = 0; j < kTileChannels; ++j) {
    const __m512 b = bias != nullptr && j < live ? _mm512_set1_ps(bias[j]) : zero;
#pragma GCC unroll 3
    for (int v = 0; v < kVecs; ++v) acc[j][v] = b;
  }
  for (int64_t t = 0; t < k; ++t) {
    const float* row = x + t * pixels;
    __m512 xv[kVecs];
#pragma GCC unroll 3
    for (int v = 0; v < kVecs; ++v) {
      xv[v] = v + 1 < kVecs ? _mm512_loadu_ps(row + v * kLanes) : _mm512_maskz_loadu_ps(last, row + v * kLanes);
    }
    const float* wt = wb + t * kLanes;
#pragma GCC unroll 8
    for (int j = 0; j < kTileChannels; ++j) {
      const __m512 w = _mm512_set1_ps(wt[j]);
#pragma GCC unroll 3
      for (int v = 0; v < kVecs; ++v) acc[j][v] = _mm512_fmadd_ps(w, xv[v], acc[j][v]);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < kTileChannels; ++j) {
    if (j >= live) break;
#pragma GCC unroll 3
    for (int v = 0; v < kVecs; ++v) {
      // v < 0 ? 0 : v, like Relu (NaN compares false, so it passes through).
      const __m512 out =
          relu ? _mm512_mask_blend_ps(_mm512_cmp_ps_mask(acc[j][v], zero, _CMP_LT_OQ), acc[j][v], zero) : acc[j][v];
      _mm512_mask_storeu_ps(y + j * pixels + v * kLanes, v + 1 < kVecs ? __mmask16(0xFFFF) : last, out);
    }
  }
}

// The last few pixels of the image (fewer than half a vector) with the roles turned: 16 output
// channels of one packed block in the lanes, one accumulator per pixel, so that a 7x7 image does
// not spend a whole vector of pixels on its 49th. y points at the block's first channel and the
// first of the kPixels pixels.
template <int kPixels>
__attribute__((target("avx512f"), always_inline)) inline void PointwiseTailBlock(const float* x, int64_t k,
                                                                                  int64_t pixels, const float* wblock,
                                                                                  const float* bias, int64_t live,
                                                                                  bool relu, float* y) {
  const __m512 zero = _mm512_setzero_ps();
  const auto live_mask = static_cast<__mmask16>(live >= kLanes ? 0xFFFF : (1u << live) - 1u);
  const __m512 b = bias != nullptr ? _mm512_maskz_loadu_ps(live_mask, bias) : zero;
  __m512 acc[kPixels];
#pragma GCC unroll 8
  for (int r = 0; r < kPixels; ++r) acc[r] = b;
  for (int64_t t = 0; t < k; ++t) {
    const __m512 w = _mm512_loadu_ps(wblock + t * kLanes);
    const float* row = x + t * pixels;
#pragma GCC unroll 8
    for (int r = 0; r < kPixels; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(row[r]), w, acc[r]);
  }
  alignas(64) float lanes[kLanes];
#pragma GCC unroll 8
  for (int r = 0; r < kPixels; ++r) {
    const __m512 out =
        relu ? _mm512_mask_blend_ps(_mm512_cmp_ps_mask(acc[r], zero, _CMP_LT_OQ), acc[r], zero) : acc[r];
    _mm512_store_ps(lanes, out);
    for (int64_t j = 0; j < live; ++j) y[j * pixels + r] = lanes[j];
  }
}

// Output channels [m_begin, m_end) of the tail; m_begin is a multiple of 16.
template <int kPixels>
__attribute__((target("avx512f"))) void PointwiseTail(const float* x, int64_t k, int64_t pixels,
                                                      const float* packed_w, int64_t m_begin, int64_t m,
                                                      const float* bias, bool relu, float* y) {
  for (int64_t m0 = m_begin; m0 < m; m0 += kLanes) {
    PointwiseTailBlock<kPixels>(x, k, pixels, packed_w + m0 * k, bias != nullptr ? bias + m0 : nullptr,
                                std::min(kLanes, m - m0), relu, y + m0 * pixels);
  }
}

// Tails of this many pixels or fewer take PointwiseTail.
constexpr int64_t kMaxTailPixels = 8;

using TailFunction = void (*)(const float*, int64_t, int64_t, const float*, int64_t, int64_t, const float*, bool,
                              float*);
constexpr TailFunction kTailFunctions[kMaxTailPixels + 1] = {
    nullptr,          PointwiseTail<1>, PointwiseTail<2>, PointwiseTail<3>, PointwiseTail<4>,
    PointwiseTail<5>, PointwiseTail<6>, PointwiseTail<7>, PointwiseTail<8>};

// One chunk of `chunk_pixels` pixels (the image's last chunk may be shorter) for output
// channels [m_begin, m_end), m_begin a multiple of 16: every block of 8 channels over the
// chunk's tiles, then the epilogue on those rows.
__attribute__((target("avx512f"))) void PointwiseChunk(const float* x, int64_t k, int64_t pixels,
                                                       const float* packed_w, int64_t m_begin, int64_t m_end,
                                                       const float* bias, const ConvEpilogue& epilogue, const float* z,
                                                       float* y, int64_t chunk_pixels, int64_t chunk) {
  const bool relu = epilogue.activation == ConvActivation::kRelu && z == nullptr;
  const bool run_epilogue = !relu && (!epilogue.is_identity() || z != nullptr);
  const int64_t p0 = chunk * chunk_pixels;
  const int64_t p_end = std::min(pixels, p0 + chunk_pixels);
  // The image's last pixels, when they would fill less than half of a vector.
  const int64_t tail = p_end == pixels && pixels % kLanes <= kMaxTailPixels ? pixels % kLanes : 0;
  const int64_t tiles_end = p_end - tail;
  if (tail > 0) kTailFunctions[tail](x + tiles_end, k, pixels, packed_w, m_begin, m_end, bias, relu, y + tiles_end);
  for (int64_t m0 = m_begin; m0 < m_end; m0 += kTileChannels) {
    const float* wb = packed_w + (m0 / kLanes) * k * kLanes + m0 % kLanes;
    const float* b = bias != nullptr ? bias + m0 : nullptr;
    const int64_t live = std::min<int64_t>(kTileChannels, m_end - m0);
    for (int64_t t0 = p0; t0 < tiles_end; t0 += kTilePixels) {
      const int64_t width = std::min(kTilePixels, tiles_end - t0);
      const int64_t vecs = (width + kLanes - 1) / kLanes;
      const int64_t tail = width - (vecs - 1) * kLanes;
      const auto last = static_cast<__mmask16>(tail == kLanes ? 0xFFFF : (1u << tail) - 1u);
      float* yt = y + m0 * pixels + t0;
      if (vecs == 3) {
        PointwiseTile<3>(x + t0, k, pixels, wb, b, live, relu, last, yt);
      } else if (vecs == 2) {
        PointwiseTile<2>(x + t0, k, pixels, wb, b, live, relu, last, yt);
      } else {
        PointwiseTile<1>(x + t0, k, pixels, wb, b, live, relu, last, yt);
      }
    }
    if (!run_epilogue) continue;
    for (int64_t j = 0; j < live; ++j) {
      const int64_t offset = (m0 + j) * pixels + p0;
      ApplyConvEpilogue(epilogue, y + offset, z != nullptr ? z + offset : nullptr, p_end - p0, 0.0f);
    }
  }
}

#endif

}  // namespace

void PointwiseConv(const float* x, int64_t k, int64_t pixels, const float* packed_w, int64_t m, const float* bias,
                   const ConvEpilogue& epilogue, const float* z, float* y, ThreadPool* pool) {
#if ONNX_LIGHT_POINTWISE_CONV
  if (pixels <= 0 || m <= 0) return;
  const int64_t panel_tile_bytes = std::max<int64_t>(k, 1) * kTilePixels * int64_t{sizeof(float)};
  const int64_t chunk_tiles = std::clamp<int64_t>(kChunkPanelBytes / panel_tile_bytes, 1, kMaxChunkTiles);
  const int64_t chunk_pixels = chunk_tiles * kTilePixels;
  const int64_t chunks = (pixels + chunk_pixels - 1) / chunk_pixels;
  // Units of work are (chunk, range of output channels): a small image has too few chunks to
  // keep the threads busy (a 7x7 one has one), so its channels are split too, in blocks of 16.
  const int64_t threads = pool != nullptr ? pool->num_threads() : 1;
  const int64_t channel_blocks = (m + kLanes - 1) / kLanes;
  const int64_t parts = std::clamp<int64_t>((2 * threads + chunks - 1) / chunks, 1, channel_blocks);
  const int64_t blocks_per_part = (channel_blocks + parts - 1) / parts;
  const int64_t units = chunks * parts;
  // A task of at least ~64K multiply-adds pays for handing it to another thread.
  constexpr int64_t kMinTaskWork = int64_t{1} << 16;
  const int64_t unit_work = std::max<int64_t>(blocks_per_part * kLanes * k * std::min(chunk_pixels, pixels), 1);
  const int64_t min_units = std::max<int64_t>(1, kMinTaskWork / unit_work);
  ParallelFor(pool, units, min_units, [&](int64_t begin, int64_t end) {
    // Channel-part-major, so that a thread's consecutive units share weights and the image's
    // short last chunk does not make up a whole task.
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t m_begin = unit / chunks * blocks_per_part * kLanes;
      const int64_t m_end = std::min(m, m_begin + blocks_per_part * kLanes);
      if (m_begin < m_end) {
        PointwiseChunk(x, k, pixels, packed_w, m_begin, m_end, bias, epilogue, z, y, chunk_pixels, unit % chunks);
      }
    }
  });
#else
  (void)x, (void)k, (void)pixels, (void)packed_w, (void)m, (void)bias, (void)epilogue, (void)z, (void)y,
      (void)pool;
#endif
}

}  // namespace onnx_light::runtime

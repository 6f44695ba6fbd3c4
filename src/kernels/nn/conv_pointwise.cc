#include "kernels/nn/conv_pointwise.h"

#include <algorithm>
#include <vector>

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
// Tails of this many pixels or fewer take PointwiseTail.
constexpr int64_t kMaxTailPixels = 8;

// What every tile of one product reads and writes. Row r of x starts at x + r * x_stride; row
// (output channel) c of y, and of z, at y + c * y_stride.
struct Operands {
  const float* x;
  int64_t x_stride;
  int64_t k;
  int64_t pixels;
  const float* packed_w;
  const float* bias;  // per output channel, or null
  const float* z;     // residual laid out like y, or null
  float* y;
  int64_t y_stride;
  bool accumulate;  // start from the values y holds instead of the bias
};

#if ONNX_LIGHT_POINTWISE_CONV

// kVecs vectors of pixels x 8 output channels from pixel p0 on, accumulated over the k input
// channels. wb points at the 8 channels' weights in their packed block (16 floats per input
// channel); `last` masks the last vector's pixels.
template <int kVecs>
__attribute__((target("avx512f"), always_inline)) inline void PointwiseTile(const Operands& o, int64_t p0,
                                                                             const float* wb, const float* bias,
                                                                             int64_t live, bool relu, __mmask16 last,
                                                                             float* y) {
  const __m512 zero = _mm512_setzero_ps();
  __m512 acc[kTileChannels][kVecs];
#pragma GCC unroll 8
  for (int j = 0; j < kTileChannels; ++j) {
    const __m512 b = bias != nullptr && j < live ? _mm512_set1_ps(bias[j]) : zero;
#pragma GCC unroll 3
    for (int v = 0; v < kVecs; ++v) {
      const __mmask16 mask = j < live ? (v + 1 < kVecs ? __mmask16(0xFFFF) : last) : __mmask16(0);
      acc[j][v] = o.accumulate ? _mm512_maskz_loadu_ps(mask, y + j * o.y_stride + v * kLanes) : b;
    }
  }
  const float* x = o.x + p0;
  for (int64_t t = 0; t < o.k; ++t) {
    const float* row = x + t * o.x_stride;
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
      _mm512_mask_storeu_ps(y + j * o.y_stride + v * kLanes, v + 1 < kVecs ? __mmask16(0xFFFF) : last, out);
    }
  }
}

// The last few pixels of the image (fewer than half a vector) with the roles turned: 16 output
// channels of one packed block in the lanes, one accumulator per pixel, so that a 7x7 image does
// not spend a whole vector of pixels on its 49th. Pixels [p0, p0 + kPixels), channels [m0,
// m0 + live).
template <int kPixels>
__attribute__((target("avx512f"), always_inline)) inline void PointwiseTailBlock(const Operands& o, int64_t p0,
                                                                                  int64_t m0, int64_t live,
                                                                                  bool relu) {
  const __m512 zero = _mm512_setzero_ps();
  const auto live_mask = static_cast<__mmask16>(live >= kLanes ? 0xFFFF : (1u << live) - 1u);
  float* y = o.y + m0 * o.y_stride + p0;
  alignas(64) float lanes[kLanes];
  __m512 acc[kPixels];
  const __m512 b = o.bias != nullptr ? _mm512_maskz_loadu_ps(live_mask, o.bias + m0) : zero;
#pragma GCC unroll 8
  for (int r = 0; r < kPixels; ++r) {
    if (o.accumulate) {
      for (int64_t j = 0; j < kLanes; ++j) lanes[j] = j < live ? y[j * o.y_stride + r] : 0.0f;
      acc[r] = _mm512_load_ps(lanes);
    } else {
      acc[r] = b;
    }
  }
  const float* wblock = o.packed_w + m0 * o.k;
  const float* x = o.x + p0;
  for (int64_t t = 0; t < o.k; ++t) {
    const __m512 w = _mm512_loadu_ps(wblock + t * kLanes);
    const float* row = x + t * o.x_stride;
#pragma GCC unroll 8
    for (int r = 0; r < kPixels; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(row[r]), w, acc[r]);
  }
#pragma GCC unroll 8
  for (int r = 0; r < kPixels; ++r) {
    const __m512 out =
        relu ? _mm512_mask_blend_ps(_mm512_cmp_ps_mask(acc[r], zero, _CMP_LT_OQ), acc[r], zero) : acc[r];
    _mm512_store_ps(lanes, out);
    for (int64_t j = 0; j < live; ++j) y[j * o.y_stride + r] = lanes[j];
  }
}

// Output channels [m_begin, m_end) of the tail; m_begin is a multiple of 16.
template <int kPixels>
__attribute__((target("avx512f"))) void PointwiseTail(const Operands& o, int64_t p0, int64_t m_begin, int64_t m_end,
                                                      bool relu) {
  for (int64_t m0 = m_begin; m0 < m_end; m0 += kLanes) {
    PointwiseTailBlock<kPixels>(o, p0, m0, std::min(kLanes, m_end - m0), relu);
  }
}

using TailFunction = void (*)(const Operands&, int64_t, int64_t, int64_t, bool);
constexpr TailFunction kTailFunctions[kMaxTailPixels + 1] = {
    nullptr,          PointwiseTail<1>, PointwiseTail<2>, PointwiseTail<3>, PointwiseTail<4>,
    PointwiseTail<5>, PointwiseTail<6>, PointwiseTail<7>, PointwiseTail<8>};

// One chunk of `chunk_pixels` pixels (the image's last chunk may be shorter) for output
// channels [m_begin, m_end), m_begin a multiple of 16: every block of 8 channels over the
// chunk's tiles, then the epilogue on those rows.
__attribute__((target("avx512f"))) void PointwiseChunk(const Operands& o, const ConvEpilogue& epilogue,
                                                       int64_t m_begin, int64_t m_end, int64_t chunk_pixels,
                                                       int64_t chunk) {
  const bool relu = epilogue.activation == ConvActivation::kRelu && o.z == nullptr;
  const bool run_epilogue = !relu && (!epilogue.is_identity() || o.z != nullptr);
  const int64_t p0 = chunk * chunk_pixels;
  const int64_t p_end = std::min(o.pixels, p0 + chunk_pixels);
  // The image's last pixels, when they would fill less than half of a vector.
  const int64_t tail = p_end == o.pixels && o.pixels % kLanes <= kMaxTailPixels ? o.pixels % kLanes : 0;
  const int64_t tiles_end = p_end - tail;
  if (tail > 0) kTailFunctions[tail](o, tiles_end, m_begin, m_end, relu);
  for (int64_t m0 = m_begin; m0 < m_end; m0 += kTileChannels) {
    const float* wb = o.packed_w + (m0 / kLanes) * o.k * kLanes + m0 % kLanes;
    const float* b = o.bias != nullptr ? o.bias + m0 : nullptr;
    const int64_t live = std::min<int64_t>(kTileChannels, m_end - m0);
    for (int64_t t0 = p0; t0 < tiles_end; t0 += kTilePixels) {
      const int64_t width = std::min(kTilePixels, tiles_end - t0);
      const int64_t vecs = (width + kLanes - 1) / kLanes;
      const int64_t rest = width - (vecs - 1) * kLanes;
      const auto last = static_cast<__mmask16>(rest == kLanes ? 0xFFFF : (1u << rest) - 1u);
      float* yt = o.y + m0 * o.y_stride + t0;
      if (vecs == 3) {
        PointwiseTile<3>(o, t0, wb, b, live, relu, last, yt);
      } else if (vecs == 2) {
        PointwiseTile<2>(o, t0, wb, b, live, relu, last, yt);
      } else {
        PointwiseTile<1>(o, t0, wb, b, live, relu, last, yt);
      }
    }
    if (!run_epilogue) continue;
    for (int64_t j = 0; j < live; ++j) {
      const int64_t offset = (m0 + j) * o.y_stride + p0;
      ApplyConvEpilogue(epilogue, o.y + offset, o.z != nullptr ? o.z + offset : nullptr, p_end - p0, 0.0f);
    }
  }
}

// Every tile of the product, over `pool`.
void RunTiles(const Operands& o, int64_t m, const ConvEpilogue& epilogue, ThreadPool* pool) {
  if (o.pixels <= 0 || m <= 0) return;
  const int64_t panel_tile_bytes = std::max<int64_t>(o.k, 1) * kTilePixels * int64_t{sizeof(float)};
  const int64_t chunk_tiles = std::clamp<int64_t>(kChunkPanelBytes / panel_tile_bytes, 1, kMaxChunkTiles);
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
  ParallelFor(pool, units, min_units, [&](int64_t begin, int64_t end) {
    // Channel-part-major, so that a thread's consecutive units share weights and the image's
    // short last chunk does not make up a whole task.
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t m_begin = unit / chunks * blocks_per_part * kLanes;
      const int64_t m_end = std::min(m, m_begin + blocks_per_part * kLanes);
      if (m_begin < m_end) PointwiseChunk(o, epilogue, m_begin, m_end, chunk_pixels, unit % chunks);
    }
  });
}

#endif

}  // namespace

void PointwiseConv(const float* x, int64_t k, int64_t pixels, const float* packed_w, int64_t m, const float* bias,
                   const ConvEpilogue& epilogue, const float* z, float* y, ThreadPool* pool) {
#if ONNX_LIGHT_POINTWISE_CONV
  const Operands o{x, pixels, k, pixels, packed_w, bias, z, y, pixels, false};
  RunTiles(o, m, epilogue, pool);
#else
  (void)x, (void)k, (void)pixels, (void)packed_w, (void)m, (void)bias, (void)epilogue, (void)z, (void)y,
      (void)pool;
#endif
}

bool TiledGemmApplies(int64_t m, int64_t n, int64_t k) {
  return DirectConvAvailable() && m >= kTiledGemmMinRows && n >= kLanes && k > 0;
}

void TiledGemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
               bool accumulate, float* c, int64_t ldc, ThreadPool* pool) {
#if ONNX_LIGHT_POINTWISE_CONV
  // A's rows play the output channels: packed per call, into a buffer each thread keeps (up to
  // 16 MiB; a larger one lives for this call only).
  constexpr size_t kKeptFloats = size_t{4} << 20;
  thread_local std::vector<float> kept;
  std::vector<float> once;
  const auto size = static_cast<size_t>(DirectConvPackedSize(m, k));
  std::vector<float>& packed = size <= kKeptFloats ? kept : once;
  if (packed.size() < size) packed.resize(size);
  for (int64_t mb = 0; mb * kLanes < m; ++mb) {
    for (int64_t t = 0; t < k; ++t) {
      float* dst = packed.data() + (mb * k + t) * kLanes;
      for (int64_t j = 0; j < kLanes; ++j) {
        const int64_t row = mb * kLanes + j;
        dst[j] = row < m ? a[row * lda + t] : 0.0f;
      }
    }
  }
  const Operands o{b, ldb, k, n, packed.data(), nullptr, nullptr, c, ldc, accumulate};
  RunTiles(o, m, ConvEpilogue{}, pool);
#else
  (void)m, (void)n, (void)k, (void)a, (void)lda, (void)b, (void)ldb, (void)accumulate, (void)c, (void)ldc,
      (void)pool;
#endif
}

}  // namespace onnx_light::runtime

#include "kernels/nn/conv_direct.h"

#include "core/thread_pool.h"
#include "kernels/nn/conv_epilogue.h"
#include "kernels/nn/conv_padded_image.h"
#include "kernels/registry/cpu_features.h"

#include <algorithm>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ONNX_LIGHT_DIRECT_CONV 1
#else
#define ONNX_LIGHT_DIRECT_CONV 0
#endif

namespace onnx_light::runtime {

namespace {

constexpr int64_t kBlock = kDirectConvPackedLanes;  // output channels per accumulator block, and floats per vector
constexpr int64_t kMaxPhases = 4;              // horizontal strides DirectConvStridedApplies takes
constexpr int64_t kMaxPhasedKernelWidth = 16;  // and kernel widths
// A tile's channels go in halves of a packed block of 16 (8 accumulators per row), rows in threes.
constexpr int kTileChannels = 8;
constexpr int kTileRows = 3;

#if ONNX_LIGHT_DIRECT_CONV

// Where tap kw of a tile's row starts past the tile's first column, in a phased image (strided
// outputs): kw's phase and its column within the phase.
struct TapColumns {
  int64_t stride_h = 1;
  int64_t offsets[kMaxPhasedKernelWidth] = {};
};

// Stores one output channel's kRows accumulators (acc[r * stride]) into rows `ow_n` apart.
template <int kRows>
__attribute__((target("avx512f"), always_inline)) inline void StoreTileRows(const __m512* acc, int stride, bool relu,
                                                                           __mmask16 mask, int64_t ow_n, float* y) {
  const __m512 zero = _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    // v < 0 ? 0 : v, like Relu (NaN compares false, so it passes through).
    const __m512 a = acc[r * stride];
    const __m512 v = relu ? _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, zero, _CMP_LT_OQ), a, zero) : a;
    _mm512_mask_storeu_ps(y + r * ow_n, mask, v);
  }
}

// One tile: kRows output rows x 16 columns (lanes) x kChannels output channels, accumulated over
// every (c, kh, kw) tap. Each broadcast weight feeds kRows FMAs and each input load kChannels.
// kPhased: strided outputs over PaddedImage::Phased, tap columns from `taps`.
template <int kRows, int kChannels, bool kPhased>
__attribute__((target("avx512f"), always_inline)) inline void DirectTile(
    const float* xpad, int64_t channels, int64_t kh_n, int64_t kw_n, const PaddedImage& p, const TapColumns& taps,
    const float* wb, const float* bias, int64_t live, bool relu, int64_t oh, int64_t ow0, __mmask16 mask,
    int64_t out_size, int64_t ow_n, float* y) {
  const __m512 zero = _mm512_setzero_ps();
  __m512 acc[kRows][kChannels];
#pragma GCC unroll 16
  for (int j = 0; j < kChannels; ++j) {
    const __m512 b = bias != nullptr && j < live ? _mm512_set1_ps(bias[j]) : zero;
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) acc[r][j] = b;
  }
  const float* wk = wb;
  const int64_t row_step = kPhased ? taps.stride_h * p.pitch : p.pitch;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t kh = 0; kh < kh_n; ++kh) {
      const float* row = xpad + c * p.plane + (kPhased ? oh * taps.stride_h + kh : oh + kh) * p.pitch + ow0;
      for (int64_t kw = 0; kw < kw_n; ++kw, wk += kBlock) {
        const float* tap = row + (kPhased ? taps.offsets[kw] : kw);
        __m512 xv[kRows];
#pragma GCC unroll 4
        for (int r = 0; r < kRows; ++r) xv[r] = _mm512_loadu_ps(tap + r * row_step);
#pragma GCC unroll 16
        for (int j = 0; j < kChannels; ++j) {
          const __m512 w = _mm512_set1_ps(wk[j]);
#pragma GCC unroll 4
          for (int r = 0; r < kRows; ++r) acc[r][j] = _mm512_fmadd_ps(w, xv[r], acc[r][j]);
        }
      }
    }
  }
  float* yt = y + oh * ow_n + ow0;
  if (live == kChannels) {
#pragma GCC unroll 16
    for (int j = 0; j < kChannels; ++j) {
      StoreTileRows<kRows>(acc[0] + j, kChannels, relu, mask, ow_n, yt + j * out_size);
    }
    return;
  }
#pragma GCC unroll 16
  for (int j = 0; j < kChannels; ++j) {
    if (j >= live) break;
    StoreTileRows<kRows>(acc[0] + j, kChannels, relu, mask, ow_n, yt + j * out_size);
  }
}

// Lanes of a tile whose first column leaves `remaining` columns in the row.
inline __mmask16 ColumnMask(int64_t remaining) {
  return static_cast<__mmask16>(remaining >= kBlock ? 0xFFFF : (1u << remaining) - 1);
}

// Output channels [m_begin, m_end) (m_begin a multiple of 8) of the window `g` (which may be a band
// of a larger output: its planes, and z's, lie `y_plane` floats apart).
template <bool kPhased>
__attribute__((target("avx512f"))) void DirectConvAvx512(const float* xpad, int64_t channels,
                                                         const WindowGeometry& g, const PaddedImage& p,
                                                         const float* packed_w, int64_t m, int64_t m_begin,
                                                         int64_t m_end, const float* bias,
                                                         const ConvEpilogue& epilogue, const float* z, float* y,
                                                         int64_t y_plane) {
  TapColumns taps;
  taps.stride_h = g.stride[0];
  for (int64_t kw = 0; kPhased && kw < g.kernel[1]; ++kw) {
    taps.offsets[kw] = kw % p.phases * p.phase_plane + kw / p.phases;
  }
  // Relu alone is applied in registers; anything else runs on each block of 8 channels' planes
  // right after the block is written (bias already added).
  const bool relu = epilogue.activation == ConvActivation::kRelu && z == nullptr;
  const bool run_epilogue = !relu && (!epilogue.is_identity() || z != nullptr);
  const int64_t kh_n = g.kernel[0];
  const int64_t kw_n = g.kernel[1];
  const int64_t oh_n = g.output[0];
  const int64_t ow_n = g.output[1];
  const int64_t k = channels * kh_n * kw_n;
  for (int64_t m0 = m_begin; m0 < m_end; m0 += kTileChannels) {
    // Weights of channels [m0, m0 + 8): half of the packed block of 16 they belong to.
    const float* wb = packed_w + (m0 / kBlock) * k * kBlock + m0 % kBlock;
    const float* b = bias != nullptr ? bias + m0 : nullptr;
    const int64_t live = std::min<int64_t>(kTileChannels, m - m0);
    float* ym = y + m0 * y_plane;
    // Row groups outside, column blocks inside: a group's tiles complete its output rows (and the
    // cache lines two column blocks share) one after another, and read the same input rows.
    int64_t oh = 0;
    for (; oh + kTileRows <= oh_n; oh += kTileRows) {
      for (int64_t ow0 = 0; ow0 < ow_n; ow0 += kBlock) {
        DirectTile<kTileRows, kTileChannels, kPhased>(xpad, channels, kh_n, kw_n, p, taps, wb, b, live, relu, oh,
                                                      ow0, ColumnMask(ow_n - ow0), y_plane, ow_n, ym);
      }
    }
    for (; oh < oh_n; ++oh) {
      for (int64_t ow0 = 0; ow0 < ow_n; ow0 += kBlock) {
        DirectTile<1, kTileChannels, kPhased>(xpad, channels, kh_n, kw_n, p, taps, wb, b, live, relu, oh, ow0,
                                              ColumnMask(ow_n - ow0), y_plane, ow_n, ym);
      }
    }
    for (int64_t j = 0; run_epilogue && j < live; ++j) {
      ApplyConvEpilogue(epilogue, ym + j * y_plane, z != nullptr ? z + (m0 + j) * y_plane : nullptr, oh_n * ow_n,
                        0.0f);
    }
  }
}

#endif

}  // namespace

bool DirectConvAvailable() {
#if ONNX_LIGHT_DIRECT_CONV
  return UseAvx512();
#else
  return false;
#endif
}

bool DirectConvApplies(const WindowGeometry& g) {
  return g.rank() == 2 && g.stride[0] == 1 && g.stride[1] == 1 && g.dilation[0] == 1 && g.dilation[1] == 1 &&
         g.output[1] >= 8 && g.output[0] > 0;
}

bool DirectConvStridedApplies(const WindowGeometry& g) {
  return g.rank() == 2 && g.dilation[0] == 1 && g.dilation[1] == 1 && g.stride[1] <= kMaxPhases &&
         g.kernel[1] <= kMaxPhasedKernelWidth && g.output[1] >= 8 && g.output[0] > 0;
}

int64_t DirectConvPackedSize(int64_t m, int64_t k) { return (m + kBlock - 1) / kBlock * kBlock * k; }

void PackDirectConvWeights(const float* w, int64_t m, int64_t k, float* packed) {
  for (int64_t mb = 0; mb * kBlock < m; ++mb) {
    for (int64_t t = 0; t < k; ++t) {
      float* dst = packed + (mb * k + t) * kBlock;
      for (int64_t j = 0; j < kBlock; ++j) {
        const int64_t oc = mb * kBlock + j;
        dst[j] = oc < m ? w[oc * k + t] : 0.0f;
      }
    }
  }
}

namespace {

// Output rows are computed in bands, each from its own padded copy of the input rows it reads: a
// band's input stays in cache while every block of output channels reads it, and a thread reads
// only the input rows of its own bands (a split by output channels read the whole image on every
// thread, half of it from the other core's cache).
struct DirectBands {
  int64_t rows;     // output rows per band (the last may have fewer)
  int64_t count;    // bands
  int64_t slots;    // bands that may run at once
  int64_t scratch;  // floats of padded input per slot
};

DirectBands PlanBands(int64_t channels, const WindowGeometry& g, const ThreadPool* pool) {
  // About 64 KiB of padded input per band, in whole tiles of rows; with several threads, at least
  // two bands per thread so that a slower thread takes fewer.
  constexpr int64_t kBandBytes = int64_t{1} << 16;
  const PaddedImage whole = PaddedImage::Phased(g);
  const int64_t row_bytes = std::max<int64_t>(1, channels * whole.phases * whole.pitch * g.stride[0] * 4);
  const int64_t oh = g.output[0];
  int64_t rows = std::max<int64_t>(kTileRows, kBandBytes / row_bytes / kTileRows * kTileRows);
  const int64_t threads = pool == nullptr ? 1 : pool->num_threads();
  if (threads > 1) {
    const int64_t per_band = (oh + 2 * threads - 1) / (2 * threads);
    rows = std::min(rows, std::max<int64_t>(kTileRows, (per_band + kTileRows - 1) / kTileRows * kTileRows));
  }
  rows = std::min(rows, oh);
  DirectBands b;
  b.rows = rows;
  b.count = (oh + rows - 1) / rows;
  b.slots = ParallelSlots(threads > 1 ? pool : nullptr, b.count);
  b.scratch = channels * PaddedImage::Phased(OutputRowBand(g, 0, rows)).plane + kPaddedImageSlack;
  return b;
}

}  // namespace

int64_t DirectConvScratchSize(int64_t channels, const WindowGeometry& g, const ThreadPool* pool) {
  const DirectBands b = PlanBands(channels, g, pool);
  return b.slots * b.scratch;
}

void DirectConv2d(const float* x, int64_t channels, const WindowGeometry& g, const float* packed_w, int64_t m,
                  const float* bias, const ConvEpilogue& epilogue, const float* z, float* scratch, float* y,
                  ThreadPool* pool) {
#if ONNX_LIGHT_DIRECT_CONV
  const DirectBands bands = PlanBands(channels, g, pool);
  const bool phased = g.stride[0] != 1 || g.stride[1] != 1;
  const int64_t ow = g.output[1];
  const int64_t out_size = g.output_size();
  ParallelForSlots(pool, bands.count, bands.slots, [&](int64_t band, int64_t slot) {
    const int64_t r0 = band * bands.rows;
    const WindowGeometry bg = OutputRowBand(g, r0, std::min(g.output[0], r0 + bands.rows));
    const PaddedImage p = PaddedImage::Phased(bg);
    float* padded = scratch + slot * bands.scratch;
    PadImage(x, channels, bg, p, padded);
    const auto run = phased ? &DirectConvAvx512<true> : &DirectConvAvx512<false>;
    run(padded, channels, bg, p, packed_w, m, 0, m, bias, epilogue, z != nullptr ? z + r0 * ow : nullptr,
        y + r0 * ow, out_size);
  });
#else
  (void)x, (void)channels, (void)g, (void)packed_w, (void)m, (void)bias, (void)epilogue, (void)z, (void)scratch,
      (void)y, (void)pool;
#endif
}

}  // namespace onnx_light::runtime

#include "kernels/nn/conv_direct_lanes.h"

#include "core/thread_pool.h"
#include "kernels/nn/conv_direct.h"
#include "kernels/nn/conv_padded_image.h"

#include <algorithm>
#include <array>
#include <utility>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ONNX_LIGHT_DIRECT_LANES 1
#else
#define ONNX_LIGHT_DIRECT_LANES 0
#endif

namespace onnx_light::runtime {

namespace {

constexpr int64_t kLanes = 16;  // output channels per vector, and per packed weight block

#if ONNX_LIGHT_DIRECT_LANES

// One tile's operands; the tile starts at output channel m0, row oh, column ow0, and sums the
// taps of input channels [c0, c0 + channels).
struct TileArgs {
  const float* origin;  // the padded image's plane c0 at the tile's first input pixel (row oh * sh, column ow0 * sw)
  int64_t pitch;        // floats per padded row
  int64_t row_step;     // floats from one output row's first input pixel to the next row's (sh * pitch)
  int64_t plane;        // floats per padded plane
  int64_t channels;     // input channels of this pass
  int64_t kh_n;
  int64_t kw_n;
  int64_t block;        // floats per packed weight block of 16 output channels (all input channels' taps)
  const float* w;       // the packed block holding channel m0, at the first tap of channel c0
  const float* next_w;  // the weights the next pass reads, laid out like w's, to prefetch into L2; or null
  const float* bias;    // bias[m0], or null
  float* partial;       // the tile's running sums between passes, [kPixels][kVectors * 16]
  bool first;           // the first pass: start from the bias, not from `partial`
  bool last;            // the last pass: store into y, not into `partial`
  int live;             // channels of the tile that exist, 1 .. 16 * kVectors
  bool relu;
  int64_t out_size;     // OH * OW
  float* y;             // y[m0, oh, ow0]
};

// kPixels outputs x kVectors blocks of 16 output channels, accumulated over the pass's (c, kh, kw)
// taps: per tap, kVectors weight loads and kPixels broadcasts feed kPixels * kVectors FMAs. The
// pixels are rows of kRowPixels adjacent outputs (input columns kStride apart): one row, or, on
// an output narrower than a tile (7x7), whole consecutive rows, which lie next to each other in y.
// Predictive commoning would carry the broadcast inputs from one kw to the next through the
// stack (they overlap at stride 1), which spills more than it saves.
template <int kPixels, int kVectors, int kStride, int kRowPixels = kPixels>
__attribute__((target("avx512f"), optimize("no-predictive-commoning"))) void LanesTile(const TileArgs& a) {
  constexpr int kBufPitch = kVectors * static_cast<int>(kLanes);
  const __m512 zero = _mm512_setzero_ps();
  __m512 acc[kPixels][kVectors];
#pragma GCC unroll 4
  for (int v = 0; v < kVectors; ++v) {
    if (a.first) {
      const int in_block = std::clamp(a.live - v * static_cast<int>(kLanes), 0, static_cast<int>(kLanes));
      const __mmask16 mask = static_cast<__mmask16>((1u << in_block) - 1);
      const __m512 b = a.bias != nullptr ? _mm512_maskz_loadu_ps(mask, a.bias + v * kLanes) : zero;
#pragma GCC unroll 14
      for (int p = 0; p < kPixels; ++p) acc[p][v] = b;
    } else {
#pragma GCC unroll 14
      for (int p = 0; p < kPixels; ++p) acc[p][v] = _mm512_loadu_ps(a.partial + p * kBufPitch + v * kLanes);
    }
  }
  const float* wk = a.w;
  const int64_t taps = a.kh_n * a.kw_n;
  for (int64_t c = 0; c < a.channels; ++c) {
    if (a.next_w != nullptr) {  // the next pass's lines that match this channel's
      const float* pf = a.next_w + c * taps * kLanes;
      for (int64_t t = 0; t < taps; ++t) {
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v) {
          _mm_prefetch(reinterpret_cast<const char*>(pf + t * kLanes + v * a.block), _MM_HINT_T1);
        }
      }
    }
    const float* plane = a.origin + c * a.plane;
    for (int64_t kh = 0; kh < a.kh_n; ++kh) {
      const float* row = plane + kh * a.pitch;
      for (int64_t kw = 0; kw < a.kw_n; ++kw, wk += kLanes) {
        __m512 w[kVectors];
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v) w[v] = _mm512_loadu_ps(wk + v * a.block);
#pragma GCC unroll 14
        for (int p = 0; p < kPixels; ++p) {
          const __m512 xv = _mm512_set1_ps(row[kw + p / kRowPixels * a.row_step + p % kRowPixels * kStride]);
#pragma GCC unroll 4
          for (int v = 0; v < kVectors; ++v) acc[p][v] = _mm512_fmadd_ps(w[v], xv, acc[p][v]);
        }
      }
    }
  }
  if (!a.last) {
#pragma GCC unroll 14
    for (int p = 0; p < kPixels; ++p) {
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) _mm512_storeu_ps(a.partial + p * kBufPitch + v * kLanes, acc[p][v]);
    }
    return;
  }
  // Pixel-major in registers, channel-major in y: through a buffer, one gather per channel.
  alignas(64) float buf[kPixels][kBufPitch];
#pragma GCC unroll 14
  for (int p = 0; p < kPixels; ++p) {
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      // v < 0 ? 0 : v, like Relu (NaN compares false, so it passes through).
      const __m512 r = a.relu ? _mm512_mask_blend_ps(_mm512_cmp_ps_mask(acc[p][v], zero, _CMP_LT_OQ), acc[p][v], zero)
                              : acc[p][v];
      _mm512_store_ps(&buf[p][v * kLanes], r);
    }
  }
  const __m512i index = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(kBufPitch));
  constexpr __mmask16 kPixelMask = static_cast<__mmask16>((1u << kPixels) - 1);
  for (int ch = 0; ch < a.live; ++ch) {
    const __m512 column = _mm512_mask_i32gather_ps(zero, kPixelMask, index, &buf[0][ch], 4);
    _mm512_mask_storeu_ps(a.y + ch * a.out_size, kPixelMask, column);
  }
}

using TileFn = void (*)(const TileArgs&);

// Up to 14 pixels: with two vectors of channels, 28 accumulators of the 32 registers.
constexpr int kMaxPixels = 14;

template <int kVectors, int kStride, size_t... kIndex>
constexpr std::array<TileFn, sizeof...(kIndex)> TileTable(std::index_sequence<kIndex...>) {
  return {&LanesTile<static_cast<int>(kIndex) + 1, kVectors, kStride>...};
}

template <int kVectors, int kStride>
constexpr auto kTiles = TileTable<kVectors, kStride>(std::make_index_sequence<kMaxPixels>());

TileFn PickTile(int vectors, int64_t stride, int64_t pixels) {
  const size_t i = static_cast<size_t>(pixels - 1);
  if (vectors == 1) return stride == 1 ? kTiles<1, 1>[i] : kTiles<1, 2>[i];
  return stride == 1 ? kTiles<2, 1>[i] : kTiles<2, 2>[i];
}

// Rows of kMinRowPairPixels .. kMaxPixels / 2 outputs are taken two at a time: a 7-wide row alone
// leaves half of the accumulators unused, and resnet18's 7x7 layers ran at half the FMA peak.
constexpr int kMinRowPairPixels = 4;
constexpr int kRowPairWidths = kMaxPixels / 2 - kMinRowPairPixels + 1;

template <int kVectors, int kStride, size_t... kIndex>
constexpr std::array<TileFn, sizeof...(kIndex)> RowPairTable(std::index_sequence<kIndex...>) {
  return {&LanesTile<2 * (static_cast<int>(kIndex) + kMinRowPairPixels), kVectors, kStride,
                     static_cast<int>(kIndex) + kMinRowPairPixels>...};
}

template <int kVectors, int kStride>
constexpr auto kRowPairTiles = RowPairTable<kVectors, kStride>(std::make_index_sequence<kRowPairWidths>());

// A tile of two whole rows of `width` outputs, or null when rows that wide are not paired.
TileFn PickRowPairTile(int vectors, int64_t stride, int64_t width) {
  if (width < kMinRowPairPixels || 2 * width > kMaxPixels) return nullptr;
  const size_t i = static_cast<size_t>(width - kMinRowPairPixels);
  if (vectors == 1) return stride == 1 ? kRowPairTiles<1, 1>[i] : kRowPairTiles<1, 2>[i];
  return stride == 1 ? kRowPairTiles<2, 1>[i] : kRowPairTiles<2, 2>[i];
}

// Vectors of 16 output channels per tile (and output channels per parallel unit).
constexpr int kTileVectors = 2;

// Bytes of packed weights one pass of input channels reads for a tile, kept within about half of
// the L1 data cache: every tile of the pass then reads them from L1 instead of streaming all
// channels' weights from L2 per tile (64->64 channels at 56x56: 73 KB of them).
constexpr int64_t kPassWeightBytes = 24 << 10;

// Input channels per pass over the output for tiles of `vectors` vectors: passes of equal size.
int64_t PassChannels(int64_t channels, int64_t taps, int vectors) {
  const int64_t fit = std::max<int64_t>(1, kPassWeightBytes / (taps * vectors * kLanes * int64_t{sizeof(float)}));
  const int64_t passes = (channels + fit - 1) / fit;
  return (channels + passes - 1) / passes;
}

// The running sums between passes: up to about 256 KB per task, so they stay in L2 and the
// scratch does not grow with the image.
constexpr int64_t kPartialBytes = 256 << 10;

// Output rows per band: every pass over input channels runs on one band of rows before the next
// band starts, so a task keeps the running sums of one band only.
int64_t BandRows(const WindowGeometry& g) {
  const int64_t row_bytes = g.output[1] * kTileVectors * kLanes * int64_t{sizeof(float)};
  return std::clamp<int64_t>(kPartialBytes / row_bytes, 1, g.output[0]);
}

// Floats of running sums a task keeps: one tile's [pixels][32] per output pixel of a band, none
// when one pass takes every input channel.
int64_t PartialSize(int64_t channels, const WindowGeometry& g) {
  if (PassChannels(channels, g.kernel[0] * g.kernel[1], kTileVectors) >= channels) return 0;
  return BandRows(g) * g.output[1] * kTileVectors * kLanes;
}

// Output channels [m0, m_end) of m (m0 a multiple of 16, at most 32 channels), output rows
// [row_begin, row_end): band by band, every pass of input channels, the next pass's weights
// prefetched into L2 while one runs; `partial` holds PartialSize(channels, g) floats.
void LanesChannels(const float* xpad, int64_t channels, const WindowGeometry& g, const PaddedImage& p,
                   const float* packed_w, int64_t m, int64_t m0, int64_t m_end, int64_t row_begin, int64_t row_end,
                   const float* bias, const ConvEpilogue& epilogue, const float* z, float* partial, float* y) {
  // Relu alone is applied in registers; anything else runs on the block's planes right after
  // they are written (bias already added).
  const bool relu = epilogue.activation == ConvActivation::kRelu && z == nullptr;
  const bool run_epilogue = !relu && (!epilogue.is_identity() || z != nullptr);
  const int64_t oh_n = g.output[0];
  const int64_t ow_n = g.output[1];
  const int64_t out_size = oh_n * ow_n;
  const int64_t taps = g.kernel[0] * g.kernel[1];
  const int vectors = m_end - m0 > kLanes ? kTileVectors : 1;
  const int64_t pass_channels = PassChannels(channels, taps, vectors);
  const int64_t band_rows = BandRows(g);
  const TileFn row_pair = PickRowPairTile(vectors, g.stride[1], ow_n);
  TileArgs a{};
  a.pitch = p.pitch;
  a.row_step = g.stride[0] * p.pitch;
  a.plane = p.plane;
  a.kh_n = g.kernel[0];
  a.kw_n = g.kernel[1];
  a.block = channels * taps * kLanes;
  a.bias = bias != nullptr ? bias + m0 : nullptr;
  a.live = static_cast<int>(m_end - m0);
  a.relu = relu;
  a.out_size = out_size;
  float* ym = y + m0 * out_size;
  for (int64_t oh0 = row_begin; oh0 < row_end; oh0 += band_rows) {
    const int64_t oh1 = std::min(row_end, oh0 + band_rows);
    for (int64_t c0 = 0; c0 < channels; c0 += pass_channels) {
      a.channels = std::min(pass_channels, channels - c0);
      a.first = c0 == 0;
      a.last = c0 + a.channels == channels;
      a.w = packed_w + (m0 / kLanes) * a.block + c0 * taps * kLanes;
      // The next pass: this band's next channels, else the next band's first, else the next
      // block of output channels' first (the next unit of this thread when units are contiguous).
      const int64_t blocks = (m + kLanes - 1) / kLanes;
      const int64_t next_m = oh1 < row_end || m_end / kLanes + vectors > blocks ? m0 : m_end;
      a.next_w = a.last ? packed_w + (next_m / kLanes) * a.block : a.w + a.channels * taps * kLanes;
      const float* plane = xpad + c0 * p.plane;
      for (int64_t oh = oh0; oh < oh1; ++oh) {
        if (row_pair != nullptr && oh + 1 < oh1) {
          a.origin = plane + oh * a.row_step;
          a.partial = partial + (oh - oh0) * ow_n * vectors * kLanes;
          a.y = ym + oh * ow_n;
          row_pair(a);
          a.next_w = nullptr;
          ++oh;
          continue;
        }
        for (int64_t ow0 = 0; ow0 < ow_n; ow0 += kMaxPixels) {
          const int64_t pixels = std::min<int64_t>(kMaxPixels, ow_n - ow0);
          a.origin = plane + oh * g.stride[0] * p.pitch + ow0 * g.stride[1];
          a.partial = partial + ((oh - oh0) * ow_n + ow0) * vectors * kLanes;
          a.y = ym + oh * ow_n + ow0;
          PickTile(vectors, g.stride[1], pixels)(a);
          a.next_w = nullptr;  // the pass's first tile has prefetched it all
        }
      }
    }
  }
  if (!run_epilogue) return;
  const float* zm = z != nullptr ? z + m0 * out_size : nullptr;
  if (row_begin == 0 && row_end == oh_n) return ApplyConvEpilogue(epilogue, ym, zm, a.live, out_size, nullptr);
  const int64_t begin = row_begin * ow_n;
  for (int64_t ch = 0; ch < a.live; ++ch) {
    ApplyConvEpilogue(epilogue, ym + ch * out_size + begin, zm != nullptr ? zm + ch * out_size + begin : nullptr,
                      (row_end - row_begin) * ow_n, 0.0f);
  }
}

// How the work is spread over the pool: tasks of 32 output channels (all rows), or, when the
// padded image is larger than the weights, a share of the output rows per thread (all
// channels). Each thread then reads the weights whole but mostly the image rows it padded
// itself, where splitting channels made every thread read the whole image, half of it from the
// other core (resnet18's 64-channel layers at 56x56, docs/performance.md).
struct LanesSplit {
  bool by_rows = false;
  int64_t slots = 1;
};

LanesSplit PlanSplit(const ThreadPool* pool, int64_t channels, const WindowGeometry& g, int64_t m) {
  constexpr int64_t kMinTaskWork = int64_t{1} << 18;  // multiply-adds
  const int64_t units = (m + kTileVectors * kLanes - 1) / (kTileVectors * kLanes);
  const int64_t unit_work = kTileVectors * kLanes * channels * g.kernel_size() * g.output_size();
  const int64_t image_floats = channels * PaddedImage::Of(g).plane;
  const int64_t weight_floats = DirectConvPackedSize(m, channels * g.kernel_size());
  const int64_t row_slots = ParallelSlots(pool, g.output[0]);
  if (row_slots > 1 && image_floats > weight_floats && units * unit_work >= row_slots * kMinTaskWork) {
    return {true, row_slots};
  }
  return {false, unit_work >= kMinTaskWork ? ParallelSlots(pool, units) : 1};
}

#endif

}  // namespace

bool DirectLanesApplies(const WindowGeometry& g) {
  return DirectConvAvailable() && ONNX_LIGHT_DIRECT_LANES && g.rank() == 2 && g.stride[0] >= 1 &&
         g.stride[0] <= 2 && g.stride[1] >= 1 && g.stride[1] <= 2 && g.dilation[0] == 1 && g.dilation[1] == 1 &&
         g.output[0] > 0 && g.output[1] > 0;
}

int64_t DirectLanesScratchSize(int64_t channels, const WindowGeometry& g, int64_t m, const ThreadPool* pool) {
#if ONNX_LIGHT_DIRECT_LANES
  return channels * PaddedImage::Of(g).plane + kPaddedImageSlack +
         PlanSplit(pool, channels, g, m).slots * PartialSize(channels, g);
#else
  (void)channels, (void)g, (void)m, (void)pool;
  return 0;
#endif
}

void DirectLanesConv2d(const float* x, int64_t channels, const WindowGeometry& g, const float* packed_w, int64_t m,
                       const float* bias, const ConvEpilogue& epilogue, const float* z, float* scratch, float* y,
                       ThreadPool* pool) {
#if ONNX_LIGHT_DIRECT_LANES
  const PaddedImage p = PaddedImage::Of(g);
  const LanesSplit split = PlanSplit(pool, channels, g, m);
  float* partials = scratch + channels * p.plane + kPaddedImageSlack;
  const int64_t unit = kTileVectors * kLanes;
  const int64_t units = (m + unit - 1) / unit;
  const int64_t oh_n = g.output[0];
  if (!split.by_rows) {
    PadImage(x, channels, g, p, scratch, pool);
    ParallelForSlots(pool, units, split.slots, [&](int64_t u, int64_t slot) {
      LanesChannels(scratch, channels, g, p, packed_w, m, u * unit, std::min(m, (u + 1) * unit), 0, oh_n, bias,
                    epilogue, z, partials + slot * PartialSize(channels, g), y);
    });
    return;
  }
  // Slot t pads the padded rows of its output rows, then computes items [items * t / slots,
  // items * (t + 1) / slots) of the (output row, unit) pairs taken row by row: each unit's rows
  // there are one run.
  const int64_t slots = split.slots;
  ParallelForContiguousSlots(pool, slots, slots, [&](int64_t t, int64_t) {
    const auto padded_row = [&](int64_t s) { return s == slots ? p.rows : oh_n * s / slots * g.stride[0]; };
    PadImageRows(x, channels, g, p, padded_row(t), padded_row(t + 1), scratch);
  });
  const int64_t items = oh_n * units;
  ParallelForContiguousSlots(pool, slots, slots, [&](int64_t t, int64_t slot) {
    const int64_t i0 = items * t / slots;
    const int64_t i1 = items * (t + 1) / slots;
    for (int64_t u = 0; u < units; ++u) {
      const int64_t r0 = std::max<int64_t>(i0 - u + units - 1, 0) / units;
      const int64_t r1 = std::max<int64_t>(i1 - u + units - 1, 0) / units;
      if (r0 >= r1) continue;
      LanesChannels(scratch, channels, g, p, packed_w, m, u * unit, std::min(m, (u + 1) * unit), r0, r1, bias,
                    epilogue, z, partials + slot * PartialSize(channels, g), y);
    }
  });
#else
  (void)x, (void)channels, (void)g, (void)packed_w, (void)m, (void)bias, (void)epilogue, (void)z, (void)scratch,
      (void)y, (void)pool;
#endif
}

}  // namespace onnx_light::runtime

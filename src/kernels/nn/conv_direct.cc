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

constexpr int64_t kBlock = 16;  // output channels per accumulator block, and floats per vector
constexpr int64_t kMaxPhases = 4;              // horizontal strides DirectConvStridedApplies takes
constexpr int64_t kMaxPhasedKernelWidth = 16;  // and kernel widths

#if ONNX_LIGHT_DIRECT_CONV

// Where tap kw of a tile's row starts past the tile's first column, in a phased image (strided
// outputs): kw's phase and its column within the phase.
struct TapColumns {
  int64_t stride_h = 1;
  int64_t offsets[kMaxPhasedKernelWidth] = {};
};

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
#pragma GCC unroll 16
  for (int j = 0; j < kChannels; ++j) {
    if (j >= live) break;
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      // v < 0 ? 0 : v, like Relu (NaN compares false, so it passes through).
      const __m512 v =
          relu ? _mm512_mask_blend_ps(_mm512_cmp_ps_mask(acc[r][j], zero, _CMP_LT_OQ), acc[r][j], zero)
               : acc[r][j];
      _mm512_mask_storeu_ps(y + j * out_size + (oh + r) * ow_n + ow0, mask, v);
    }
  }
}

// Channels go in halves of a packed block of 16 (8 accumulators per row), rows in threes.
constexpr int kTileChannels = 8;
constexpr int kTileRows = 3;

// Output channels [m_begin, m_end) (m_begin a multiple of 8).
template <bool kPhased>
__attribute__((target("avx512f"))) void DirectConvAvx512(const float* xpad, int64_t channels,
                                                         const WindowGeometry& g, const PaddedImage& p,
                                                         const float* packed_w, int64_t m, int64_t m_begin,
                                                         int64_t m_end, const float* bias,
                                                         const ConvEpilogue& epilogue, const float* z, float* y) {
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
  const int64_t out_size = oh_n * ow_n;
  const int64_t k = channels * kh_n * kw_n;
  for (int64_t m0 = m_begin; m0 < m_end; m0 += kTileChannels) {
    // Weights of channels [m0, m0 + 8): half of the packed block of 16 they belong to.
    const float* wb = packed_w + (m0 / kBlock) * k * kBlock + m0 % kBlock;
    const float* b = bias != nullptr ? bias + m0 : nullptr;
    const int64_t live = std::min<int64_t>(kTileChannels, m - m0);
    float* ym = y + m0 * out_size;
    for (int64_t ow0 = 0; ow0 < ow_n; ow0 += kBlock) {
      const int64_t width = std::min(kBlock, ow_n - ow0);
      const __mmask16 mask = static_cast<__mmask16>(width == kBlock ? 0xFFFF : (1u << width) - 1);
      int64_t oh = 0;
      for (; oh + kTileRows <= oh_n; oh += kTileRows) {
        DirectTile<kTileRows, kTileChannels, kPhased>(xpad, channels, kh_n, kw_n, p, taps, wb, b, live, relu, oh,
                                                      ow0, mask, out_size, ow_n, ym);
      }
      for (; oh < oh_n; ++oh) {
        DirectTile<1, kTileChannels, kPhased>(xpad, channels, kh_n, kw_n, p, taps, wb, b, live, relu, oh, ow0, mask,
                                              out_size, ow_n, ym);
      }
    }
    if (run_epilogue) {
      ApplyConvEpilogue(epilogue, ym, z != nullptr ? z + m0 * out_size : nullptr, live, out_size, nullptr);
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

int64_t DirectConvScratchSize(int64_t channels, const WindowGeometry& g) {
  return channels * PaddedImage::Phased(g).plane + kPaddedImageSlack;
}

void DirectConv2d(const float* x, int64_t channels, const WindowGeometry& g, const float* packed_w, int64_t m,
                  const float* bias, const ConvEpilogue& epilogue, const float* z, float* scratch, float* y,
                  ThreadPool* pool) {
#if ONNX_LIGHT_DIRECT_CONV
  const PaddedImage p = PaddedImage::Phased(g);
  PadImage(x, channels, g, p, scratch, pool);
  const bool phased = g.stride[0] != 1 || g.stride[1] != 1;
  // Blocks of 8 output channels over the pool; a task of at least ~256K multiply-adds.
  const int64_t blocks = (m + kTileChannels - 1) / kTileChannels;
  const int64_t block_work = std::max<int64_t>(1, kTileChannels * channels * g.kernel_size() * g.output_size());
  const int64_t min_blocks = std::max<int64_t>(1, (int64_t{1} << 18) / block_work);
  ParallelForBalanced(pool, blocks, min_blocks, [&](int64_t begin, int64_t end) {
    const auto run = phased ? &DirectConvAvx512<true> : &DirectConvAvx512<false>;
    run(scratch, channels, g, p, packed_w, m, begin * kTileChannels, std::min(m, end * kTileChannels), bias,
        epilogue, z, y);
  });
#else
  (void)x, (void)channels, (void)g, (void)packed_w, (void)m, (void)bias, (void)epilogue, (void)z, (void)scratch,
      (void)y, (void)pool;
#endif
}

}  // namespace onnx_light::runtime

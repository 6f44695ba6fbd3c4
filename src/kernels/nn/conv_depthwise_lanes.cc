#include "kernels/nn/conv_depthwise_lanes.h"

#include <algorithm>

#include "kernels/nn/conv_direct.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ONNX_LIGHT_DEPTHWISE_LANES 1
#else
#define ONNX_LIGHT_DEPTHWISE_LANES 0
#endif

namespace onnx_light::runtime {

namespace {

constexpr int64_t kLanes = kDepthwiseLanes;
constexpr int kMaxRowPixels = 8;  // output pixels of a row accumulated at once
// Measured against the plane kernel (bench in docs/performance.md): 1.3-1.4x faster on 7x7
// outputs, slower from 14 columns on, where the scalar transposes cost more than the lanes save.
constexpr int64_t kMaxOutputWidth = 8;

// The zero-padded input block, [rows][cols][16]: every input pixel any output reads.
struct PaddedBlock {
  int64_t rows;
  int64_t cols;
};

PaddedBlock PaddedExtent(const WindowGeometry& g) {
  return {(g.output[0] - 1) * g.stride[0] + (g.kernel[0] - 1) * g.dilation[0] + 1,
          (g.output[1] - 1) * g.stride[1] + (g.kernel[1] - 1) * g.dilation[1] + 1};
}

#if ONNX_LIGHT_DEPTHWISE_LANES

// kPixels output pixels of one row, starting at output column ow0, over every kernel tap.
template <int kPixels>
__attribute__((target("avx512f"), always_inline)) inline void RowPixels(const float* in, const PaddedBlock& p,
                                                                         const WindowGeometry& g, const float* wl,
                                                                         const float* bias, int64_t oh, int64_t ow0,
                                                                         float* out) {
  __m512 acc[kPixels];
#pragma GCC unroll 8
  for (int r = 0; r < kPixels; ++r) acc[r] = _mm512_loadu_ps(bias);
  const int64_t col_step = g.stride[1] * kLanes;
  for (int64_t kh = 0; kh < g.kernel[0]; ++kh) {
    const float* row = in + ((oh * g.stride[0] + kh * g.dilation[0]) * p.cols + ow0 * g.stride[1]) * kLanes;
    for (int64_t kw = 0; kw < g.kernel[1]; ++kw) {
      const __m512 w = _mm512_loadu_ps(wl + (kh * g.kernel[1] + kw) * kLanes);
      const float* tap = row + kw * g.dilation[1] * kLanes;
#pragma GCC unroll 8
      for (int r = 0; r < kPixels; ++r) acc[r] = _mm512_fmadd_ps(w, _mm512_loadu_ps(tap + r * col_step), acc[r]);
    }
  }
  float* dst = out + (oh * g.output[1] + ow0) * kLanes;
#pragma GCC unroll 8
  for (int r = 0; r < kPixels; ++r) _mm512_storeu_ps(dst + r * kLanes, acc[r]);
}

using RowFunction = void (*)(const float*, const PaddedBlock&, const WindowGeometry&, const float*, const float*,
                             int64_t, int64_t, float*);

template <int kPixels>
__attribute__((target("avx512f"))) void RowPixelsOutOfLine(const float* in, const PaddedBlock& p,
                                                           const WindowGeometry& g, const float* wl, const float* bias,
                                                           int64_t oh, int64_t ow0, float* out) {
  RowPixels<kPixels>(in, p, g, wl, bias, oh, ow0, out);
}

constexpr RowFunction kRowFunctions[kMaxRowPixels + 1] = {
    nullptr,
    RowPixelsOutOfLine<1>,
    RowPixelsOutOfLine<2>,
    RowPixelsOutOfLine<3>,
    RowPixelsOutOfLine<4>,
    RowPixelsOutOfLine<5>,
    RowPixelsOutOfLine<6>,
    RowPixelsOutOfLine<7>,
    RowPixelsOutOfLine<8>};

// `b` holds the 16 lanes' biases (zeros for absent channels).
__attribute__((target("avx512f"))) void ComputeBlock(const float* in, const PaddedBlock& p, const WindowGeometry& g,
                                                     const float* wl, const float* b, float* out) {
  for (int64_t oh = 0; oh < g.output[0]; ++oh) {
    for (int64_t ow0 = 0; ow0 < g.output[1]; ow0 += kMaxRowPixels) {
      const int64_t pixels = std::min<int64_t>(kMaxRowPixels, g.output[1] - ow0);
      if (pixels == kMaxRowPixels) {
        RowPixels<kMaxRowPixels>(in, p, g, wl, b, oh, ow0, out);
      } else {
        kRowFunctions[pixels](in, p, g, wl, b, oh, ow0, out);
      }
    }
  }
}

#endif

}  // namespace

bool DepthwiseLanesApplies(const WindowGeometry& g) {
  return g.rank() == 2 && g.output[1] <= kMaxOutputWidth && g.output[0] > 0 && g.output[1] > 0 &&
         DirectConvAvailable();
}

int64_t DepthwiseLanesScratchSize(const WindowGeometry& g) {
  const PaddedBlock p = PaddedExtent(g);
  return (p.rows * p.cols + g.output[0] * g.output[1] + g.kernel[0] * g.kernel[1] + 1) * kLanes;
}

void DepthwiseLanesBlock(const float* x, int64_t live, const WindowGeometry& g, const float* w, const float* bias,
                         const ConvEpilogue& epilogue, const float* z, float* scratch, float* y) {
#if ONNX_LIGHT_DEPTHWISE_LANES
  const PaddedBlock p = PaddedExtent(g);
  const int64_t ih_n = g.input[0];
  const int64_t iw_n = g.input[1];
  const int64_t taps = g.kernel[0] * g.kernel[1];
  const int64_t out_plane = g.output[0] * g.output[1];
  float* in = scratch;
  float* out = in + p.rows * p.cols * kLanes;
  float* wl = out + out_plane * kLanes;
  float* lane_bias = wl + taps * kLanes;
  // Input planes transposed into the padded block; the lanes of absent channels stay zero.
  std::fill(in, in + p.rows * p.cols * kLanes, 0.0f);
  const int64_t r_lo = std::max<int64_t>(0, g.pad_begin[0]);
  const int64_t r_hi = std::min(p.rows, g.pad_begin[0] + ih_n);
  const int64_t c_lo = std::max<int64_t>(0, g.pad_begin[1]);
  const int64_t c_hi = std::min(p.cols, g.pad_begin[1] + iw_n);
  for (int64_t c = 0; c < live; ++c) {
    const float* plane = x + c * ih_n * iw_n;
    for (int64_t r = r_lo; r < r_hi; ++r) {
      const float* src = plane + (r - g.pad_begin[0]) * iw_n;
      float* dst = in + r * p.cols * kLanes + c;
      for (int64_t q = c_lo; q < c_hi; ++q) dst[q * kLanes] = src[q - g.pad_begin[1]];
    }
  }
  for (int64_t t = 0; t < taps; ++t) {
    for (int64_t c = 0; c < kLanes; ++c) wl[t * kLanes + c] = c < live ? w[c * taps + t] : 0.0f;
  }
  for (int64_t c = 0; c < kLanes; ++c) lane_bias[c] = bias != nullptr && c < live ? bias[c] : 0.0f;
  ComputeBlock(in, p, g, wl, lane_bias, out);
  // Without a residual the activation runs on the whole block in its channel-last layout.
  if (z == nullptr) ApplyConvEpilogue(epilogue, out, nullptr, out_plane * kLanes, 0.0f);
  for (int64_t c = 0; c < live; ++c) {
    float* dst = y + c * out_plane;
    for (int64_t i = 0; i < out_plane; ++i) dst[i] = out[i * kLanes + c];
    if (z != nullptr) ApplyConvEpilogue(epilogue, dst, z + c * out_plane, out_plane, 0.0f);
  }
#else
  (void)x, (void)live, (void)g, (void)w, (void)bias, (void)epilogue, (void)z, (void)scratch, (void)y;
#endif
}

}  // namespace onnx_light::runtime

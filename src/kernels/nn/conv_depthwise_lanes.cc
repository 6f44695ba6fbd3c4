// GCC 12's AVX-512 intrinsics seed results with _mm512_undefined_ps() and, once inlined into a
// target("avx512f") function, warn that it is uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

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
// Measured against the plane kernel of conv_grouped.h (docs/performance.md): faster up to 28
// output columns (1.3-1.9x on 7x7 and 14x14 planes), slower from 56 on, where the plane kernel
// fills its vectors and the transposes cost more than the lanes save.
constexpr int64_t kMaxOutputWidth = 32;

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

// RowPixels for a kernel kKw wide, column stride kStride and no column dilation: each kernel
// row's input pixels are loaded once and serve every tap of the row that reads them (a 5-wide
// kernel over 8 pixels loads 12 vectors for 40 FMAs, where RowPixels loads 40).
template <int kPixels, int kKw, int kStride>
__attribute__((target("avx512f"))) void RowPixelsReuse(const float* in, const PaddedBlock& p, const WindowGeometry& g,
                                                       const float* wl, const float* bias, int64_t oh, int64_t ow0,
                                                       float* out) {
  constexpr int kInputs = (kPixels - 1) * kStride + kKw;
  __m512 acc[kPixels];
#pragma GCC unroll 8
  for (int r = 0; r < kPixels; ++r) acc[r] = _mm512_loadu_ps(bias);
  for (int64_t kh = 0; kh < g.kernel[0]; ++kh) {
    const float* row = in + ((oh * g.stride[0] + kh * g.dilation[0]) * p.cols + ow0 * kStride) * kLanes;
    __m512 v[kInputs];
#pragma GCC unroll 32
    for (int j = 0; j < kInputs; ++j) v[j] = _mm512_loadu_ps(row + j * kLanes);
    const float* wrow = wl + kh * kKw * kLanes;
#pragma GCC unroll 8
    for (int kw = 0; kw < kKw; ++kw) {
      const __m512 w = _mm512_loadu_ps(wrow + kw * kLanes);
#pragma GCC unroll 8
      for (int r = 0; r < kPixels; ++r) acc[r] = _mm512_fmadd_ps(w, v[r * kStride + kw], acc[r]);
    }
  }
  float* dst = out + (oh * g.output[1] + ow0) * kLanes;
#pragma GCC unroll 8
  for (int r = 0; r < kPixels; ++r) _mm512_storeu_ps(dst + r * kLanes, acc[r]);
}

template <int kKw, int kStride>
constexpr RowFunction kReuseFunctions[kMaxRowPixels + 1] = {
    nullptr,
    RowPixelsReuse<1, kKw, kStride>,
    RowPixelsReuse<2, kKw, kStride>,
    RowPixelsReuse<3, kKw, kStride>,
    RowPixelsReuse<4, kKw, kStride>,
    RowPixelsReuse<5, kKw, kStride>,
    RowPixelsReuse<6, kKw, kStride>,
    RowPixelsReuse<7, kKw, kStride>,
    RowPixelsReuse<8, kKw, kStride>};

// The row functions for this geometry: the reusing ones for the kernels MobileNet- and
// EfficientNet-style models use (3 or 5 wide, column stride 1 or 2, no column dilation).
const RowFunction* RowFunctionsFor(const WindowGeometry& g) {
  if (g.dilation[1] != 1) return kRowFunctions;
  const int64_t kw = g.kernel[1];
  const int64_t sw = g.stride[1];
  if (kw == 3 && sw == 1) return kReuseFunctions<3, 1>;
  if (kw == 3 && sw == 2) return kReuseFunctions<3, 2>;
  if (kw == 5 && sw == 1) return kReuseFunctions<5, 1>;
  if (kw == 5 && sw == 2) return kReuseFunctions<5, 2>;
  return kRowFunctions;
}

// `b` holds the 16 lanes' biases (zeros for absent channels).
__attribute__((target("avx512f"))) void ComputeBlock(const float* in, const PaddedBlock& p, const WindowGeometry& g,
                                                     const float* wl, const float* b, float* out) {
  const RowFunction* rows = RowFunctionsFor(g);
  for (int64_t oh = 0; oh < g.output[0]; ++oh) {
    for (int64_t ow0 = 0; ow0 < g.output[1]; ow0 += kMaxRowPixels) {
      const int64_t pixels = std::min<int64_t>(kMaxRowPixels, g.output[1] - ow0);
      rows[pixels](in, p, g, wl, b, oh, ow0, out);
    }
  }
}

// r[i][j] <-> r[j][i]: pairs interleaved, then 2x2 blocks, then 128-bit quarters twice.
__attribute__((target("avx512f"), always_inline)) inline void Transpose16x16(__m512* r) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
#pragma GCC unroll 2
  for (int h = 0; h < 16; h += 8) {
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
      t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xDD);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
  }
}

__mmask16 FirstLanes(int64_t n) { return static_cast<__mmask16>(n >= kLanes ? 0xFFFF : (1u << n) - 1u); }

// The `live` planes of x into their places in the padded block, one input row at a time, 16
// columns at a time, so that each transposed vector lands in consecutive pixels (columns past a
// cut-short end padding, which no output reads, are dropped). The lanes of absent channels get
// zeros. Only the interior is written: ZeroBorder clears the rest.
__attribute__((target("avx512f"))) void TransposeIn(const float* x, int64_t live, const WindowGeometry& g,
                                                    const PaddedBlock& p, float* in) {
  const int64_t iw_n = g.input[1];
  const int64_t plane = g.input[0] * iw_n;
  const int64_t rows = std::min(g.input[0], p.rows - g.pad_begin[0]);
  const int64_t cols = std::min(iw_n, p.cols - g.pad_begin[1]);
  for (int64_t ih = 0; ih < rows; ++ih) {
    float* dst_row = in + ((ih + g.pad_begin[0]) * p.cols + g.pad_begin[1]) * kLanes;
    for (int64_t iw0 = 0; iw0 < cols; iw0 += kLanes) {
      const int64_t count = std::min(kLanes, cols - iw0);
      const __mmask16 mask = FirstLanes(count);
      const float* src = x + ih * iw_n + iw0;
      __m512 r[16];
#pragma GCC unroll 16
      for (int c = 0; c < 16; ++c) r[c] = c < live ? _mm512_maskz_loadu_ps(mask, src + c * plane) : _mm512_setzero_ps();
      Transpose16x16(r);
      float* dst = dst_row + iw0 * kLanes;
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) {
        if (i < count) _mm512_storeu_ps(dst + i * kLanes, r[i]);
      }
    }
  }
}

// Zeros in every pixel of the padded block TransposeIn does not write: the padding rows and
// columns around the input.
void ZeroBorder(const WindowGeometry& g, const PaddedBlock& p, float* in) {
  const int64_t top = std::min(g.pad_begin[0], p.rows);
  const int64_t interior_end = std::min(g.pad_begin[0] + g.input[0], p.rows);
  const int64_t left = std::min(g.pad_begin[1], p.cols);
  const int64_t right_begin = std::min(g.pad_begin[1] + g.input[1], p.cols);
  const int64_t row_floats = p.cols * kLanes;
  std::fill(in, in + top * row_floats, 0.0f);
  std::fill(in + interior_end * row_floats, in + p.rows * row_floats, 0.0f);
  for (int64_t r = top; r < interior_end; ++r) {
    float* row = in + r * row_floats;
    std::fill(row, row + left * kLanes, 0.0f);
    std::fill(row + right_begin * kLanes, row + row_floats, 0.0f);
  }
}

// The channel-last block back into the `live` output planes of y.
__attribute__((target("avx512f"))) void TransposeOut(const float* out, int64_t live, int64_t out_plane, float* y) {
  for (int64_t p0 = 0; p0 < out_plane; p0 += kLanes) {
    const int64_t count = std::min(kLanes, out_plane - p0);
    __m512 r[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) r[i] = i < count ? _mm512_loadu_ps(out + (p0 + i) * kLanes) : _mm512_setzero_ps();
    Transpose16x16(r);
    const __mmask16 mask = FirstLanes(count);
#pragma GCC unroll 16
    for (int c = 0; c < 16; ++c) {
      if (c >= live) break;
      _mm512_mask_storeu_ps(y + c * out_plane + p0, mask, r[c]);
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
  const int64_t taps = g.kernel[0] * g.kernel[1];
  const int64_t out_plane = g.output[0] * g.output[1];
  float* in = scratch;
  float* out = in + p.rows * p.cols * kLanes;
  float* wl = out + out_plane * kLanes;
  float* lane_bias = wl + taps * kLanes;
  // Input planes transposed into the padded block, zeros around them.
  ZeroBorder(g, p, in);
  TransposeIn(x, live, g, p, in);
  for (int64_t t = 0; t < taps; ++t) {
    for (int64_t c = 0; c < kLanes; ++c) wl[t * kLanes + c] = c < live ? w[c * taps + t] : 0.0f;
  }
  for (int64_t c = 0; c < kLanes; ++c) lane_bias[c] = bias != nullptr && c < live ? bias[c] : 0.0f;
  ComputeBlock(in, p, g, wl, lane_bias, out);
  // Without a residual the activation runs on the whole block in its channel-last layout.
  if (z == nullptr) ApplyConvEpilogue(epilogue, out, nullptr, out_plane * kLanes, 0.0f);
  TransposeOut(out, live, out_plane, y);
  if (z != nullptr) {
    for (int64_t c = 0; c < live; ++c) {
      ApplyConvEpilogue(epilogue, y + c * out_plane, z + c * out_plane, out_plane, 0.0f);
    }
  }
#else
  (void)x, (void)live, (void)g, (void)w, (void)bias, (void)epilogue, (void)z, (void)scratch, (void)y;
#endif
}

}  // namespace onnx_light::runtime

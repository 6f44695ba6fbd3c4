#pragma once
// The plain loop the direct 2-D convolution kernels are checked against: one image, one group,
// strides and padding from the window, dilation 1, summed in double.

#include <cstdint>
#include <vector>

#include "kernels/nn/im2col.h"

namespace onnx_light::runtime::testing {

/// y [m, OH, OW] = bias[m] (0 when null) + sum over c, kh, kw of w[m, c, kh, kw] * x[c, oh * sh +
/// kh - pad_h, ow * sw + kw - pad_w], taps in the padding reading 0; x is [channels, H, W].
inline std::vector<float> ReferenceConv2d(const std::vector<float>& x, int64_t channels, const std::vector<float>& w,
                                          int64_t m, const WindowGeometry& g, const float* bias) {
  const int64_t h = g.input[0], wd = g.input[1], kh_n = g.kernel[0], kw_n = g.kernel[1];
  const int64_t oh_n = g.output[0], ow_n = g.output[1];
  std::vector<float> y(static_cast<size_t>(m * oh_n * ow_n));
  for (int64_t o = 0; o < m; ++o) {
    for (int64_t oh = 0; oh < oh_n; ++oh) {
      for (int64_t ow = 0; ow < ow_n; ++ow) {
        double acc = bias != nullptr ? bias[o] : 0.0;
        for (int64_t c = 0; c < channels; ++c) {
          for (int64_t i = 0; i < kh_n; ++i) {
            for (int64_t j = 0; j < kw_n; ++j) {
              const int64_t ih = oh * g.stride[0] + i - g.pad_begin[0];
              const int64_t iw = ow * g.stride[1] + j - g.pad_begin[1];
              if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
              acc += static_cast<double>(x[(c * h + ih) * wd + iw]) * w[((o * channels + c) * kh_n + i) * kw_n + j];
            }
          }
        }
        y[(o * oh_n + oh) * ow_n + ow] = static_cast<float>(acc);
      }
    }
  }
  return y;
}

}  // namespace onnx_light::runtime::testing

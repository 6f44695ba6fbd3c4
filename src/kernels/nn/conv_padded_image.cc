#include "kernels/nn/conv_padded_image.h"

#include <algorithm>
#include <cstring>

#include "core/thread_pool.h"

namespace onnx_light::runtime {

PaddedImage PaddedImage::Of(const WindowGeometry& g) {
  PaddedImage p;
  p.rows = (g.output[0] - 1) * g.stride[0] + g.kernel[0];
  p.pitch = (g.output[1] - 1) * g.stride[1] + g.kernel[1];
  p.plane = p.rows * p.pitch;
  return p;
}

namespace {

// PadImage without the slack: planes [0, channels) only.
void PadPlanes(const float* x, int64_t channels, const WindowGeometry& g, const PaddedImage& p, float* out) {
  const int64_t ih_n = g.input[0];
  const int64_t iw_n = g.input[1];
  // Columns [pad_begin, pad_begin + iw_n) of a padded row hold the input row, clipped to the
  // padded width.
  const int64_t lo = std::min(g.pad_begin[1], p.pitch);
  const int64_t hi = std::max(lo, std::min(g.pad_begin[1] + iw_n, p.pitch));
  for (int64_t c = 0; c < channels; ++c) {
    float* plane = out + c * p.plane;
    for (int64_t r = 0; r < p.rows; ++r) {
      float* row = plane + r * p.pitch;
      const int64_t ih = r - g.pad_begin[0];
      if (ih < 0 || ih >= ih_n) {
        std::fill(row, row + p.pitch, 0.0f);
        continue;
      }
      std::fill(row, row + lo, 0.0f);
      if (hi > lo) {
        std::memcpy(row + lo, x + (c * ih_n + ih) * iw_n, static_cast<size_t>(hi - lo) * sizeof(float));
      }
      std::fill(row + hi, row + p.pitch, 0.0f);
    }
  }
}

}  // namespace

void PadImage(const float* x, int64_t channels, const WindowGeometry& g, const PaddedImage& p, float* out,
              ThreadPool* pool) {
  // Whole planes per task, a task at least ~64 KiB of copy.
  const int64_t min_planes = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(p.plane, 1));
  ParallelForBalanced(pool, channels, min_planes, [&](int64_t begin, int64_t end) {
    PadPlanes(x + begin * g.input[0] * g.input[1], end - begin, g, p, out + begin * p.plane);
  });
  std::fill(out + channels * p.plane, out + channels * p.plane + kPaddedImageSlack, 0.0f);
}

}  // namespace onnx_light::runtime

#pragma once
// The zero-padded copy of one image that the direct convolution kernels read: every input
// element any output reads, with the padding made explicit, so their inner loops have no bounds
// checks. Plane c of the copy starts at c * plane.

#include <cstdint>

#include "kernels/nn/im2col.h"

namespace onnx_light::runtime {

class ThreadPool;

struct PaddedImage {
  int64_t rows;             // (OH - 1) * stride_h + KH: the padded rows the outputs read
  int64_t pitch;            // floats per padded row: (OW - 1) * stride_w + KW, or per phase row
  int64_t plane;            // floats per channel: phases * phase_plane
  int64_t phases = 1;       // column phases (Phased)
  int64_t phase_plane = 0;  // rows * pitch

  /// The padded extent of a 2-D window without dilation, one row after another.
  static PaddedImage Of(const WindowGeometry& g);
  /// The same split into stride_w column phases: row r of phase q holds padded columns q,
  /// q + stride_w, q + 2 stride_w, ..., so the taps of sixteen strided outputs read sixteen
  /// contiguous floats (tap kw of output column ow: phase kw % stride_w, column ow + kw /
  /// stride_w). With stride_w 1 it is Of(g).
  static PaddedImage Phased(const WindowGeometry& g);
};

/// Floats of zero slack PadImage writes after the last plane (full-vector loads of the last row
/// may run into it).
inline constexpr int64_t kPaddedImageSlack = 16;

/// Writes `channels` planes of x [channels, H, W] into `out` (channels * p.plane +
/// kPaddedImageSlack floats): zeros in the padding, input elements elsewhere; input rows or
/// columns past what the outputs read (an end padding that drops them) are left out. Planes are
/// spread over `pool` (null: the calling thread).
void PadImage(const float* x, int64_t channels, const WindowGeometry& g, const PaddedImage& p, float* out,
              ThreadPool* pool = nullptr);

/// PadImage's padded rows [row_begin, row_end) of every plane, on the calling thread, and the
/// slack when row_end is p.rows: calls over ranges that cover [0, p.rows) write all of `out`.
/// Requires p.phases == 1 (PaddedImage::Of).
void PadImageRows(const float* x, int64_t channels, const WindowGeometry& g, const PaddedImage& p,
                  int64_t row_begin, int64_t row_end, float* out);

}  // namespace onnx_light::runtime

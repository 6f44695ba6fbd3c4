#pragma once
// The integer convolution on the VNNI product (u8s8_gemm.h), channels-first like the rest of
// the graph: the weights' rows (int8, one per output channel, packed when the kernel is built)
// are broadcast against the image's columns (uint8 im2col, padded with the zero point, packed
// into 32-pixel panels per run), so the product lands in NCHW order with no transposition.
// Zero points become QuadGemm's two corrections.

#include <cstdint>
#include <vector>

#include <absl/functional/function_ref.h>

#include "kernels/nn/im2col.h"
#include "kernels/quantization/u8s8_gemm.h"
#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// Receives a finished block of a convolution's int32 result: image `image`, output channels
/// [channel, channel + channels), output positions [first, first + count); channel
/// `channel + i`'s values start at acc + i * ld (scratch, reused once the call returns).
using IntConvBlock = absl::FunctionRef<void(int64_t image, int64_t first, int64_t count, int64_t channel,
                                            int64_t channels, const int32_t* acc, int64_t ld)>;

/// Immutable once built; Run may be called from several threads at once.
class VnniConv {
 public:
  /// Takes W ([M, C / group, k...], int8 or uint8, contiguous) and its zero point (`w_zp`: one
  /// value, or M when `per_channel`).
  VnniConv(const Tensor& w, const int32_t* w_zp, bool per_channel, int64_t group);

  /// out (int32 [N, M, out...]) = conv(X - x_zp, W - w_zp) for X int8 or uint8 [N, C, in...].
  void Run(RuntimeContext& rt, const Tensor& x, int32_t x_zp, const WindowGeometry& g, int32_t* out) const;

  /// The same product for a 2-D window with group 1, band by band: each band of output rows is
  /// gathered, packed and multiplied in scratch that stays in cache and handed to `block` while
  /// it is still there, so no whole-image columns, panels or int32 result are written.
  /// With two bands or more per thread each thread takes whole bands; with fewer, each band is
  /// gathered and packed by all threads and multiplied in blocks of output channels. `block`
  /// runs on the session's threads, on disjoint blocks.
  void RunBands(RuntimeContext& rt, const Tensor& x, int32_t x_zp, const WindowGeometry& g, IntConvBlock block) const;

  const Shape& weight_shape() const { return weight_shape_; }

 private:
  // Output rows per band for RunBands: whole 32-pixel panels where the width allows, as many
  // rows as keep a band's columns within a per-thread budget that stays in the L2 cache.
  int64_t BandRows(const WindowGeometry& g) const;

  Shape weight_shape_;
  int64_t group_;
  int64_t depth_;                 // C / group * kernel size
  int64_t row_stride_;            // depth_ rounded up to AMX's 64: no row is copied to pad it
  std::vector<uint8_t> rows_;     // W (shifted to int8) as M rows of row_stride_ bytes, zero past depth_
  std::vector<int32_t> row_s_;    // sum of the row - depth * w_zp
  std::vector<int32_t> zero_point_;  // w_zp (shifted), per output channel
  bool zero_point_nonzero_ = false;
};

}  // namespace onnx_light::runtime

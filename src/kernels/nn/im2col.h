#pragma once
// Convolution geometry shared by Conv, ConvTranspose and the pooling operators: attribute
// parsing (kernel_shape, strides, dilations, pads, auto_pad), output sizes and padding, and the
// im2col / col2im transforms that turn a convolution into a GEMM.

#include <absl/container/inlined_vector.h>

#include <cstdint>
#include <string>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

using SpatialDims = absl::InlinedVector<int64_t, 4>;

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

/// Window attributes as written on the node. Empty vectors mean "not given" (defaults depend on
/// the spatial rank, known at run time unless kernel_shape is set).
struct WindowAttributes {
  AutoPad auto_pad = AutoPad::kNotSet;
  SpatialDims kernel_shape;
  SpatialDims strides;
  SpatialDims dilations;
  SpatialDims pads;  // [x1_begin, x2_begin, ..., x1_end, x2_end, ...]
  bool ceil_mode = false;

  /// Reads and validates the attributes; throws Error(kInvalidArgument) naming the node for bad
  /// values (unknown auto_pad, non-positive strides or dilations, negative pads, lengths that
  /// disagree).
  static WindowAttributes Parse(const KernelBuildInfo& info, bool require_kernel_shape);
};

/// Resolved geometry of one windowed operation over `rank` spatial axes.
struct WindowGeometry {
  SpatialDims input;   // spatial input dims
  SpatialDims output;  // spatial output dims
  SpatialDims kernel;
  SpatialDims stride;
  SpatialDims dilation;
  SpatialDims pad_begin;
  SpatialDims pad_end;

  size_t rank() const { return input.size(); }
  int64_t input_size() const;
  int64_t output_size() const;
  int64_t kernel_size() const;
};

/// (kernel - 1) * dilation + 1: the extent of a dilated kernel; an overflow is an Error.
int64_t EffectiveKernel(int64_t kernel, int64_t dilation);

/// Output dims and pads of a convolution or pool over `input` with `kernel`: explicit pads, or
/// auto_pad SAME_UPPER / SAME_LOWER (output ceil(in / stride)) / VALID; ceil_mode for pools.
/// Throws (naming the node) when the attributes' lengths do not fit the input's spatial rank or
/// an output dim would be negative.
WindowGeometry ResolveWindow(const RuntimeContext& rt, const WindowAttributes& attrs,
                             std::span<const int64_t> input, std::span<const int64_t> kernel);

/// The window of a pool over X [N, C, D1, ...] with the attributes' kernel_shape (X's rank is
/// checked against it, naming input X), and the output shape [N, C, out1, ...] in `out_shape`.
WindowGeometry ResolvePoolWindow(const RuntimeContext& rt, const WindowAttributes& attrs, const Tensor& x,
                                 Shape* out_shape);

/// Rearranges `channels` planes of the image (spatial dims `g.input`) into columns
/// [channels * kernel_size, output_size]: row (c, k0, k1, ...) holds, for every output position,
/// the input element under kernel tap (k0, k1, ...), or 0 in the padding.
/// Rank and element-type checks shared by Conv and ConvTranspose: X is [N, C, D1, ...], W has
/// X's rank, and X, W and the optional B share one element type.
void CheckConvOperands(const RuntimeContext& rt, const Tensor& x, const Tensor& w, const Tensor* b);

/// A 1x1 window with unit strides and no padding: the columns are the image itself.
bool IsPointwise(const WindowGeometry& g);

/// The 2-D window `g` restricted to output rows [row_begin, row_end) (its output height becomes
/// row_end - row_begin, its leading padding shifts by row_begin strides): Im2Col with it writes
/// the columns of those rows only, read from the same whole image. Only for Im2Col: the band's
/// pad_end is g's.
WindowGeometry OutputRowBand(const WindowGeometry& g, int64_t row_begin, int64_t row_end);

/// Columns [channels * kernel size, output size] of `image` [channels, input...]; entries in the
/// padding read `pad` (0, or a quantized image's zero point).
template <typename T>
void Im2Col(const T* image, int64_t channels, const WindowGeometry& g, T* col, T pad = T{0});

/// The adjoint of Im2Col: adds every column entry onto the image element it was read from
/// (entries that fall into the padding are dropped). `image` must be initialised.
template <typename T>
void Col2Im(const T* col, int64_t channels, const WindowGeometry& g, T* image);

}  // namespace onnx_light::runtime

#pragma once
// A float32 2-D depthwise convolution (one input and one output channel per group) for narrow
// planes, written for AVX-512 and chosen at run time, like conv_direct.h. The plane kernel of
// conv_grouped.h puts output columns in the vector lanes, which leaves lanes idle on 7x7, 14x14
// and 28x28 planes and pays its padding copy per channel; here sixteen channels share a vector
// instead. Per block of 16 channels the input planes are transposed (16x16 in registers) into
// a zero-padded [rows][columns][16] block; every output pixel then accumulates one FMA per kernel
// tap over the 16 channels, eight pixels of a row at a time; the bias and the activation (when
// there is no residual) run on the block in that layout, and the block is transposed back into
// NCHW. Padding is real zeros, so an infinite or NaN weight meets it as the spec's zero-padded
// convolution does.

#include <cstdint>

#include "kernels/nn/conv_epilogue.h"
#include "kernels/nn/im2col.h"

namespace onnx_light::runtime {

/// Whether DepthwiseLanesBlock takes this geometry: 2-D, output rows at most 32 wide (wider rows
/// fill the plane kernel's vectors well enough to pay less than the transposes), on CPUs with
/// AVX-512 (DirectConvAvailable()).
bool DepthwiseLanesApplies(const WindowGeometry& g);

/// Channels per block: the vector's lanes.
inline constexpr int64_t kDepthwiseLanes = 16;

/// Floats of scratch one DepthwiseLanesBlock call needs.
int64_t DepthwiseLanesScratchSize(const WindowGeometry& g);

/// `live` (1..16) channels of one image: y [live, OH, OW] = epilogue(bias + depthwise(x [live,
/// H, W], w [live, 1, KH, KW]) + z); `bias` (live values) and `z` (laid out like y) may be
/// null. Requires DepthwiseLanesApplies(g).
void DepthwiseLanesBlock(const float* x, int64_t live, const WindowGeometry& g, const float* w, const float* bias,
                         const ConvEpilogue& epilogue, const float* z, float* scratch, float* y);

}  // namespace onnx_light::runtime

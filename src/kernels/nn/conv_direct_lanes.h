#pragma once
// A direct float32 2-D convolution with sixteen output channels in each vector, written for
// AVX-512 and chosen at run time (like conv_direct.h, whose packed weights it reads). A tile is
// up to 14 output pixels of one row times 32 output channels: every input element is broadcast
// once per kernel tap and feeds two FMAs, so every lane is busy whatever the row's width, and
// strides 1 and 2 cost the same per output. Input channels are summed in passes whose weights
// stay in the L1 cache, one band of output rows at a time; the running sums of a band (at most
// about 256 KB per task) wait in the scratch between passes, and each pass prefetches the next
// one's weights into L2 (a 7x7 layer's 9 MB of weights otherwise came from memory at the pace of
// the FMAs). Rows of 4 to 7 outputs are taken two at a time, so a tile still has up to 14 pixels.
// Tiles are transposed into NCHW as they are stored; the bias and a Relu are applied in
// registers, other activations and a residual on each block of channels right after it is
// written.

#include <cstdint>

#include "kernels/nn/conv_epilogue.h"
#include "kernels/nn/im2col.h"

namespace onnx_light::runtime {

class ThreadPool;

/// Whether DirectLanesConv2d handles this geometry on this CPU: DirectConvAvailable(), 2-D,
/// strides 1 or 2 on each axis, no dilation.
bool DirectLanesApplies(const WindowGeometry& g);

/// Floats of scratch DirectLanesConv2d needs for one image of `channels` input and `m` output
/// channels when it is given `pool`: the padded image and each task's running sums.
int64_t DirectLanesScratchSize(int64_t channels, const WindowGeometry& g, int64_t m, const ThreadPool* pool);

/// y[m, oh, ow] = epilogue(bias[m] + sum over c, kh, kw of W[m, c, kh, kw] *
/// x[c, oh * sh + kh - pad_h, ow * sw + kw - pad_w] + z[m, oh, ow]) for one image x [channels,
/// H, W] into y [m, OH, OW], with W packed by PackDirectConvWeights; `bias` and `z` (laid out
/// like y) may be null. Blocks of output channels are spread over `pool` (null: the calling
/// thread), or, when the padded image is larger than the weights, shares of the output rows.
/// Requires DirectLanesApplies(g).
void DirectLanesConv2d(const float* x, int64_t channels, const WindowGeometry& g, const float* packed_w, int64_t m,
                       const float* bias, const ConvEpilogue& epilogue, const float* z, float* scratch, float* y,
                       ThreadPool* pool = nullptr);

}  // namespace onnx_light::runtime

#pragma once
// A direct 2-D float32 convolution without dilation (stride 1, or a strided stem over few input
// channels; DirectConvStridedApplies), written for AVX-512 and chosen
// at run time: the library is built for the baseline x86-64 ISA, and this path is only taken on
// CPUs that report AVX-512F. Sixteen adjacent output columns sit in one vector and sixteen output
// channels in sixteen accumulators, so every input load feeds sixteen FMAs and the output is
// written straight into NCHW with the bias and a Relu applied in registers (other activations
// and a residual run on each block of channels as soon as it is written).

#include <cstdint>

#include "kernels/nn/conv_epilogue.h"
#include "kernels/nn/im2col.h"

namespace onnx_light::runtime {

class ThreadPool;

/// True when this build has the direct kernel and UseAvx512() (kernels/registry/cpu_features.h).
bool DirectConvAvailable();

/// Whether DirectConv2d handles this geometry: 2-D, unit strides and dilations, outputs at least
/// 8 columns wide (narrower rows would leave most vector lanes idle).
bool DirectConvApplies(const WindowGeometry& g);

/// Whether DirectConv2d handles this geometry with any strides: 2-D without dilation, a
/// horizontal stride up to 4 and a kernel up to 16 wide, outputs at least 8 columns wide. Strided
/// outputs read the input split into column phases (PaddedImage::Phased), so their loads stay
/// contiguous.
bool DirectConvStridedApplies(const WindowGeometry& g);

/// Floats PackDirectConvWeights writes for `m` output channels of `k` (= C * KH * KW) taps.
int64_t DirectConvPackedSize(int64_t m, int64_t k);

/// Output channels per block of the packed weights.
inline constexpr int64_t kDirectConvPackedLanes = 16;

/// Rearranges W [m, k] into blocks of 16 output channels, [ceil(m / 16)][k][16], zero-padded.
void PackDirectConvWeights(const float* w, int64_t m, int64_t k, float* packed);

/// Floats of scratch DirectConv2d needs for one image of `channels` channels, split over `pool`
/// (null: the calling thread alone; pass the pool DirectConv2d will get).
int64_t DirectConvScratchSize(int64_t channels, const WindowGeometry& g, const ThreadPool* pool);

/// y[m, oh, ow] = epilogue(bias[m] + sum over c, kh, kw of W[m, c, kh, kw] * x[c, oh * sh + kh - pad, ow * sw + kw - pad]
/// + z[m, oh, ow]) for one image x [channels, H, W] into y [m, OH, OW]; `bias` and `z` (laid out
/// like y) may be null. Bands of output rows are spread over `pool` (null: the calling thread),
/// each padded into its own part of `scratch` (DirectConvScratchSize floats for that pool).
/// Requires DirectConvAvailable() and DirectConvStridedApplies(g).
void DirectConv2d(const float* x, int64_t channels, const WindowGeometry& g, const float* packed_w, int64_t m,
                  const float* bias, const ConvEpilogue& epilogue, const float* z, float* scratch, float* y,
                  ThreadPool* pool = nullptr);

}  // namespace onnx_light::runtime

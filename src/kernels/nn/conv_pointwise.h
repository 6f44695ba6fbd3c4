#pragma once
// A float32 1x1 convolution (stride 1, no padding, one group) as a matrix product written for
// AVX-512 and chosen at run time, like conv_direct.h. Per image, Y [m, pixels] = W [m, k] X
// [k, pixels]: the pixels are one long row, so no input copy is needed (a GEMM library packs
// the whole image first), and each tile of 8 output channels x 48 pixels is finished where it is
// computed: the bias and Relu are applied in registers, any other activation and the residual on
// the tile while it is still in L1. The weights are the blocks PackDirectConvWeights writes,
// which the Conv kernel packs once when W is a constant.

#include <cstdint>

#include "kernels/nn/conv_epilogue.h"

namespace onnx_light::runtime {

class ThreadPool;

/// y [m, pixels] = epilogue(bias[m] + W x + z) for one image x [k, pixels]; `packed_w` is W
/// [m, k] packed by PackDirectConvWeights; `bias` and `z` (laid out like y) may be null. Tiles
/// of pixels are spread over `pool` (null: the calling thread). Requires DirectConvAvailable().
void PointwiseConv(const float* x, int64_t k, int64_t pixels, const float* packed_w, int64_t m, const float* bias,
                   const ConvEpilogue& epilogue, const float* z, float* y, ThreadPool* pool);

}  // namespace onnx_light::runtime

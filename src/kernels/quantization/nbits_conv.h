#pragma once
// The fused weight-only convolution: Y = Conv(X, dequantize(W)) [+ B] for a constant 4-bit or
// 8-bit W [M, C, k1, ...] with float32 scales (and zero points) per tensor or per output channel,
// as the quantized_conv_fusion pass writes it (docs/quantization.md). W stays packed
// (nbits_matmul.h); each image's columns (im2col) are multiplied by panels of W dequantized a few
// hundred K rows at a time into a small scratch, so no float copy of W is ever held.

#include <string_view>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// Registers the fused operator `QuantizedConv` (version 1) in `domain`: inputs X, W, scale,
/// optional zero point (W, scale and zero point constants), optional float32 bias B [M]; Conv's
/// attributes (auto_pad, dilations, kernel_shape, pads, strides; group must be 1).
void RegisterNBitsConvKernel(KernelRegistry& registry, std::string_view domain);

}  // namespace onnx_light::runtime

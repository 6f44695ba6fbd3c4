#pragma once
// Weight-only MatMul / Gemm fusion (RuntimeSessionOptions::fuse_quantized_matmul): MatMul(A,
// DequantizeLinear(W, scale, zero_point)) with a constant 4-bit or 8-bit W becomes one
// QuantizedMatMul node, and Gemm(A, DequantizeLinear(W, ...)[, C]) one QuantizedGemm node, whose
// kernel keeps W packed (kernels/quantization/nbits_matmul.h).

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

/// Replaces MatMul(A, DequantizeLinear(W, scale[, zero_point])) where the DequantizeLinear
/// output feeds only that MatMul's B input and is not a graph output; W is a constant 2-D int4,
/// uint4, int8 or uint8 [K, N]; scale a constant float32 with one value (per tensor), N values
/// (axis 1, DequantizeLinear-13 on) or [ceil(K / block_size), N] (axis 0, block_size > 0,
/// DequantizeLinear-21 on); the zero point, when given, a constant of W's type and scale's shape;
/// the output type float32. Gemm likewise, with transA 0, alpha 1 and, with a C, beta 1 and C a
/// constant float32 of one value or [N] / [1, N]; transB swaps W's axes. The fused kernel's
/// weights are bitwise those DequantizeLinear computes, so only the order of the sums differs
/// from the written graph. Runs after the QDQ fusion, which takes whole quantized groups.
/// `quantize_activations` (RuntimeSessionOptions::quantize_matmul_activations) sets the fused
/// nodes' activation_bits to 8: their few-row products may then quantize A (nbits_matmul.h).
void FuseQuantizedMatMul(WorkingGraph& graph, const PassContext& context, bool quantize_activations = false);

}  // namespace onnx_light::runtime

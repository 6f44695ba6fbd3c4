#pragma once
// Quantized MatMul fusion (RuntimeSessionOptions::fuse_quantized_matmul): MatMul(A,
// DequantizeLinear(W, scale, zero_point)) with a constant 4-bit W becomes one QuantizedMatMul
// node whose kernel keeps W packed (kernels/quantization/nbits_matmul.h).

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

/// Replaces MatMul(A, DequantizeLinear(W, scale[, zero_point])) where the DequantizeLinear
/// output feeds only that MatMul's B input and is not a graph output; W is a constant 2-D int4
/// or uint4 [K, N]; scale a constant float32 with one value (per tensor), N values (axis 1) or
/// [ceil(K / block_size), N] (axis 0, block_size > 0); the zero point, when given, a constant of
/// W's type and scale's shape; the output type float32. The fused kernel's weights are bitwise
/// those DequantizeLinear computes, so only the order of the sums differs from the written graph.
void FuseQuantizedMatMul(WorkingGraph& graph, const PassContext& context);

}  // namespace onnx_light::runtime

#pragma once
// Weight-only Conv fusion (RuntimeSessionOptions::fuse_quantized_matmul, which covers every
// weight-only product): Conv(X, DequantizeLinear(W, scale, zero_point)[, B]) with a constant 4-bit
// or 8-bit W becomes one QuantizedConv node whose kernel keeps W packed
// (kernels/quantization/nbits_conv.h).

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

/// Replaces Conv(X, DequantizeLinear(W, scale[, zero_point])[, B]) where the DequantizeLinear
/// output feeds only that Conv's W input and is not a graph output; W is a constant int4, uint4,
/// int8 or uint8 [M, C, k...] (at least one spatial axis); scale a constant float32 of one value
/// or M values along axis 0 (DequantizeLinear-13 on), no block_size; the zero point, when given, a
/// constant of W's type and scale's shape; the output float32; group 1; and X not itself the
/// output of a DequantizeLinear (that is a QDQ group, which fuse_qdq runs as QLinearConv). Runs
/// before the Conv fusions, which then leave the node alone: a following activation or residual
/// Add stays a node of its own. The fused kernel multiplies by the very weights DequantizeLinear
/// computes; only the order of the float sums differs from the written graph.
void FuseQuantizedConv(WorkingGraph& graph, const PassContext& context);

}  // namespace onnx_light::runtime

#pragma once
// Dynamically quantized Linear layers (RuntimeSessionOptions::fuse_matmul_integer_scale):
// onnxruntime's quantize_dynamic writes each as MatMulInteger, Cast to float32, Mul by the
// product of the two scales and Add of the bias. The four become one MatMulIntegerToFloat node,
// which converts the int32 product to float32 in place instead of three passes over it.

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

/// Replaces Mul(Cast<float32>(MatMulInteger(A, B, a_zp, b_zp)), scale), optionally followed by
/// Add of a bias (either operand order), by MatMulIntegerToFloat(A, B, a_zp, b_zp, scale[, bias])
/// when B is a constant 8-bit matrix [K, N], each intermediate value has no other reader, the
/// bias is a constant float32 [N], and the scale is known to be one float32 value or a [N]
/// vector on every run: a constant of that shape, the scale output of a DynamicQuantizeLinear,
/// or the Mul of two such values (at most one of them a vector). The output then has the
/// product's shape, as the unfused nodes' has.
void FuseMatMulIntegerScale(WorkingGraph& graph, const PassContext& context);

}  // namespace onnx_light::runtime

#pragma once
// Kernels for the nodes the session's build-time passes create (src/passes/): they live in a
// domain of their own that a model cannot use, so no written node reaches them.

#include <string_view>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

/// The domain of nodes created by graph passes. A model node in it is refused.
inline constexpr std::string_view kFusedDomain = "ai.onnx_light.fused";

/// Every fused operator, at version 1:
/// - Gelu: the Gelu-20 kernel, whatever opset the model imports; a pass emits it for the
///   decomposed forms exporters write;
/// - FusedConv: Conv with a folded BatchNormalization, a residual (input 3) and an activation in
///   its epilogue, the Mul that produced X (inputs 0 and 4 are its operands), and the Concat along
///   channels it writes its output into (attributes concat_channels, concat_offset; input 5 the
///   Concat's output so far) (kernels/nn/conv_kernels.h);
/// - Attention: scaled dot-product attention over 4-D Q, K, V with an optional mask added to the
///   scores (Add's broadcasting) and attribute `probabilities` = "softmax" (rows softmax cannot
///   normalise are NaN) or "softmax_nan_to_zero" (they are zeros), as the decomposed graph it
///   replaces computes them, and `seq_first` (4 flags: Q, K, V, Y given or wanted as
///   [batch, seq, heads, head] instead of [batch, heads, seq, head]) (kernels/nn/attention_kernel.cc).
///   With mask = "attention" it follows the Attention operator's own mask rules and attributes
///   instead (is_causal, scale, softcap). With kv_repeat = 1, inputs 4-7 are the Expand and
///   Reshape shapes of head-repeating chains over K and V (kernels/nn/repeated_heads.h) and
///   reshape_allowzero their Reshapes' allowzero. With key_reshapes = 1, the next two inputs are
///   s1 and s2 of a Kᵀ written as Reshape(Transpose(Reshape(K, s1), perm=[0, 2, 1]), s2), and
///   key_reshape_allowzero their allowzero;
/// - RepeatedHeadsShape: the Shape of such a chain's result, from the shapes alone;
/// - QuantizedMatMul: MatMul(A, DequantizeLinear(W, scale, zero_point)) for a constant
///   int4/uint4/int8/uint8 W[K, N] kept packed (inputs A, W, scale, optional zero point; attribute
///   block_size, 0 for one scale row over all of K) (kernels/quantization/nbits_matmul.h);
/// - QuantizedGemm: the same for Gemm(A, DequantizeLinear(W ...)[, C]) (C as input 4, attribute
///   trans_b);
/// - QuantizedConv: Conv(X, DequantizeLinear(W ...)[, B]) likewise (B as input 4, Conv's
///   attributes) (kernels/quantization/nbits_conv.h);
/// - QLinearAdd and QGemm: the com.microsoft kernels, for the DequantizeLinear -> Add / Gemm ->
///   QuantizeLinear groups of QDQ models (passes/qdq_fusion.h).
const KernelRegistry& FusedKernels();

}  // namespace onnx_light::runtime

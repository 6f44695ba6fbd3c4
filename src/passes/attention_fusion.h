#pragma once
// Attention fusion (RuntimeSessionOptions::fuse_attention): the scaled dot-product attention that
// exporters write as separate nodes becomes one fused Attention node, so the keys are never
// transposed, scaled or copied and the scores never leave the kernel's scratch.

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

/// Replaces, where every intermediate value is read only inside the pattern,
///
///     S = MatMul(Q [* a], Transpose(K, perm=[0, 1, 3, 2]) [* b])   [* c or / c]
///     P = Softmax(S [+ mask], axis=-1)
///     Y = MatMul(P or Where(IsNaN(P), 0, P), V)
///
/// (a, b, c one-element constants; the Mul and Add operands in either order) by the fused
/// domain's Attention(Q, K, V[, mask]) with scale = a·b·c (or a·b/c). The head transposes
/// around it are absorbed too, since the kernel reads and writes strided heads: Q or V as
/// Transpose(X, perm=[0, 2, 1, 3]), Kᵀ as Transpose(X, perm=[0, 2, 3, 1]), and a
/// Transpose(Y, perm=[0, 2, 1, 3]) that alone reads Y (attribute seq_first). Kᵀ may also be
/// Reshape(Transpose(Reshape(K, s1), perm=[0, 2, 1]), s2) (the dynamo exporter below opset 23):
/// the node then takes s1 and s2 too (attribute key_reshapes) and checks them on every run. Rows that Softmax cannot
/// normalise (every key masked with -inf, or a NaN score) come out as they would from the
/// written nodes: NaN, or zeros behind the Where. Shapes are only known at run time: the fused
/// kernel refuses, with an error naming the option, operands MatMul would broadcast in ways that
/// are not attention (see kernels/nn/attention_kernel.cc).
///
/// Then, for that node and for the Attention operator (4-D, no cache, no windows) alike: K and V
/// both given by Reshape(Expand(Unsqueeze(x, axes=[2]), e), r) chains read nowhere else become x
/// plus the chains' shapes (attribute kv_repeat), so grouped-query keys and values are read once
/// instead of copied for every query head (kernels/nn/repeated_heads.h).
void FuseAttention(WorkingGraph& graph, const PassContext& context);

}  // namespace onnx_light::runtime

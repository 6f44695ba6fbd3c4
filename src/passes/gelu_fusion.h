#pragma once
// GELU fusion (RuntimeSessionOptions::fuse_gelu): the decomposed GELU forms exporters write
// become one Gelu node (the Gelu-20 kernel, whatever the model's opset).

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

/// Replaces, where every intermediate value is read only inside the pattern:
/// - x * 0.5 * (1 + Erf(x / sqrt(2)))   (also x * (1/sqrt(2)); torch's GELU, BERT, ViT)
///   by Gelu(x, approximate="none");
/// - x * 0.5 * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))   (x^3 as Pow(x, 3) or x * x * x;
///   GPT-2's gelu_new) by Gelu(x, approximate="tanh").
/// The three factors of the outer product may be grouped in any order. Constants must equal the
/// formula's as closely as their element type holds them.
void FuseGelu(WorkingGraph& graph, const PassContext& context);

}  // namespace onnx_light::runtime

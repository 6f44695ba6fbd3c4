#pragma once
// Conv + residual Add fusion (RuntimeSessionOptions::fuse_conv_add): an Add that alone reads a
// float32 Conv's output becomes that Conv's residual input Z, added in the convolution's epilogue
// while the output tile is still in cache (one FusedConv node; kernel usage
// "Conv/float32/<path>+add"). An activation after the Add is fused afterwards by
// passes/conv_activation_fusion.

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

/// Fuses into a Conv (or a FusedConv with neither an activation nor a residual yet) with
/// constant float32 W the Add that alone reads its output, the Add's other input becoming Z.
/// Z is added with Add's broadcasting (the FusedConv kernel falls back to a second pass when Z's
/// shape is not the convolution's output shape), so results are the unfused graph's.
void FuseConvAdd(WorkingGraph& graph, const PassContext& context);

}  // namespace onnx_light::runtime

#pragma once
// Conv + activation fusion (RuntimeSessionOptions::fuse_conv_activation): an activation that
// alone reads a float32 Conv's output runs in the convolution's epilogue, while the output tile
// is still in cache (one FusedConv node; kernel usage "Conv/float32/<path>+<activation>").

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

/// Fuses into a Conv (or a FusedConv without an activation yet) with constant float32 W the
/// node that alone reads its output: Relu, LeakyRelu, Clip (constant or absent bounds),
/// HardSigmoid, HardSwish, Sigmoid, Tanh; and SiLU written as Mul(y, Sigmoid(y)) (the output
/// read by exactly that Sigmoid and that Mul).
void FuseConvActivation(WorkingGraph& graph, const PassContext& context);

}  // namespace onnx_light::runtime

#pragma once
// Channel-scale fusion (RuntimeSessionOptions::fuse_conv_scale): X = Mul(A, S) read only by a
// float32 Conv becomes that Conv's inputs 0 and 4 (one FusedConv node; kernel usage
// "Conv/float32/<path>+scale" when the kernel scales W's input channels, "+mul" when it runs the
// Mul first). Squeeze-and-excitation blocks (MobileNetV3, EfficientNet) multiply a feature map by
// one factor per channel right before a 1x1 convolution: scaling the convolution's weights instead
// saves a pass over the feature map.

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

/// Fuses into a Conv or FusedConv (any residual and activation already fused) with constant
/// float32 W and group 1 the Mul that alone feeds its input X. Shapes are not known here: the
/// kernel checks on every run whether one operand scales the other's channels, and otherwise runs
/// the Mul with its broadcasting, so results are the unfused graph's up to one rounding.
void FuseConvScale(WorkingGraph& graph, const PassContext& context);

}  // namespace onnx_light::runtime

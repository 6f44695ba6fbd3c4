#pragma once
// Conv + BatchNormalization fusion (RuntimeSessionOptions::fuse_conv_batchnorm): the
// normalisation is folded into new Conv weights and bias at build time, and the pair runs as
// one FusedConv node (kernel usage "Conv/float32/<path>+bn").

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

/// Folds each float32 Conv whose W (and B) are constants and whose only reader is an
/// inference-mode BatchNormalization (opset 9 and later, per-channel constant parameters, no
/// extra outputs read). W' = W * a and B' = (B - mean) * a + beta with a = scale / sqrt(var +
/// epsilon), computed in double. The folded weights are constants of the plan; the written W and
/// B stay only if something else reads them.
void FuseConvBatchNorm(WorkingGraph& graph, const PassContext& context);

}  // namespace onnx_light::runtime

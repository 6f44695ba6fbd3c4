#pragma once
// Conv -> Concat fusion (RuntimeSessionOptions::fuse_conv_concat): when every input of a Concat
// along channels is a float32 Conv's output that nothing else reads (squeezenet's fire modules,
// inception blocks), the convolutions write their channels straight into the Concat's output and
// the Concat's copy disappears. The convolutions become a chain of FusedConv nodes in graph order:
// the first allocates the Concat's output and writes its own channels, each next one takes that
// tensor over (input 5) and writes its channels, and the last stands for the Concat too and
// produces its output. Kernel usage ends in "+concat".

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

/// Chains the convolutions of every Concat (axis 1 of their rank-3 or larger outputs) whose
/// inputs are all distinct outputs of Conv or FusedConv nodes (constant float32 W; no residual or
/// channel scale) read only by the Concat. The intermediate values keep their names and hold the
/// Concat's whole shape; only the next convolution of the chain reads them.
void FuseConvConcat(WorkingGraph& graph, const PassContext& context);

}  // namespace onnx_light::runtime

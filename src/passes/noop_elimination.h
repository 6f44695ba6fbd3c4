#pragma once
// No-op elimination (RuntimeSessionOptions::eliminate_noop_nodes): nodes that only pass a value
// on are removed and their readers read the value itself; chains of reshapes collapse into one.

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

/// Removes, when its output is not a graph output and no subgraph reads it:
/// - Identity;
/// - Dropout (opset 7 and later) whose mask output nothing reads and whose training_mode input
///   is absent or a constant false: in inference it returns its input;
/// - Cast to the element type its input already has, when that type is known at build time (a
///   constant, a graph input's declared type, or the output of another Cast);
/// and replaces Reshape(Reshape(x, s1), s2) by Reshape(x, s2) when the inner result has no
/// other reader and s2 is a constant whose entries cannot refer to the inner shape (no 0, or
/// allowzero=1). Nodes a custom kernel or model-local function serves are never touched.
void EliminateNoopNodes(WorkingGraph& graph, const PassContext& context);

}  // namespace onnx_light::runtime

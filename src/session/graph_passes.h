#pragma once
// Runs the build-time graph passes (src/passes/) for a session: tells them which nodes the host
// serves and evaluates folded nodes with the built-in kernels.

#include <memory>

#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/runtime_session.h"
#include "passes/rewritten_graph.h"
#include "session/graph_plan.h"

namespace onnx_light::runtime {

/// The main graph of `model` after the passes `options` enables, or null when they change
/// nothing (the plan then compiles the graph as written). `sources` resolves kernels as the
/// plan will.
std::shared_ptr<const RewrittenGraph> RewriteMainGraph(const Model& model, const KernelSources& sources,
                                                       const RuntimeSessionOptions& options);

}  // namespace onnx_light::runtime

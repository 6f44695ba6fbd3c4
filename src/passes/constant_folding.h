#pragma once
// Constant folding (RuntimeSessionOptions::fold_constants): a node whose inputs are all known at
// build time runs once, with its built-in kernel, while the session is built; its outputs become
// constants of the plan and the node is no longer dispatched.

#include "passes/pass_context.h"
#include "passes/working_graph.h"

namespace onnx_light::runtime {

/// Folds, in graph order, every node that
/// - is a default-domain operator served by a built-in kernel (never a custom kernel or a
///   model-local function), deterministic (no Random*, Bernoulli, Multinomial), without
///   subgraphs, and not a quantisation boundary (QuantizeLinear, DequantizeLinear: later
///   passes fuse those with their consumers);
/// - has only constant inputs (initializers no graph input overrides, earlier folded values),
///   or is Shape/Size of a graph input whose declared shape is fully static (checked on
///   every run);
/// - produces no graph output, and only tensors;
/// - would not inflate memory: outputs at most 4x the inputs' bytes plus 1 MiB (generators such
///   as ConstantOfShape, Range, Expand and Tile are checked before they run).
/// A node whose kernel refuses its inputs is left in place, so the run reports the error.
void FoldConstants(WorkingGraph& graph, const PassContext& context);

}  // namespace onnx_light::runtime

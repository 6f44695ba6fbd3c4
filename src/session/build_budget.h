#pragma once
// The build budgets of RuntimeSessionOptions (max_expanded_nodes, max_nesting_depth,
// max_subgraphs), checked before any plan is compiled by walking the model the way GraphPlan
// will compile it: a function call compiles its body once more, a graph attribute its subgraph.
//
// Walking first keeps a bomb cheap to refuse: a function's totals are computed once and reused at
// its other call sites, so a call tree that doubles at every level costs time linear in the
// number of functions and no memory for plans, where compiling it would take memory proportional
// to its expansion (and on an exhausted heap the process dies without an exception: see
// docs/errors.md).

#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/runtime_session.h"
#include "session/graph_plan.h"

namespace onnx_light::runtime {

/// What building `graph` with `sources` compiles.
struct BuildTotals {
  int64_t nodes = 0;      // nodes as written, every expansion counted
  int64_t subgraphs = 0;  // graph attributes compiled
  int64_t depth = 0;      // deepest nesting level (the main graph is 0)
};

/// Throws Error(kInvalidArgument) when building `graph` would exceed a budget of `options`
/// (naming the budget, the value reached, the node and the enclosing functions and subgraphs,
/// and the option that raises it) or when a model-local function calls itself. Returns the
/// totals otherwise.
BuildTotals CheckBuildBudgets(const Graph& graph, const KernelSources& sources,
                              const RuntimeSessionOptions& options);

}  // namespace onnx_light::runtime

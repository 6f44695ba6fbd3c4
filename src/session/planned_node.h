#pragma once
// One node of a GraphPlan: its kernel, slot indexes and what to release after it runs.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "onnx_light/runtime/kernel_base.h"
#include "session/graph_plan.h"

namespace onnx_light::runtime {

struct GraphPlan::PlannedNode {
  const Node* node = nullptr;     // the graph's node
  int64_t graph_index = 0;        // position in the graph as written (a fused node's first)
  NodeOrigin origin;              // the nodes as written a rewritten node stands for; else empty
  std::unique_ptr<KernelBase> kernel;
  std::vector<int32_t> inputs;    // -1: omitted optional input
  std::vector<int32_t> outputs;   // -1: unused optional output
  std::vector<int32_t> captures;  // outer values used by the node's subgraphs
  std::vector<int32_t> release_after;
  uint32_t reusable_inputs = 0;  // DispatchFrame::reusable_inputs, decided when compiling
  std::vector<std::unique_ptr<SubgraphRunner>> subgraphs;
};

}  // namespace onnx_light::runtime

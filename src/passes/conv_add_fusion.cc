#include "passes/conv_add_fusion.h"

#include <vector>

#include "passes/conv_pattern.h"
#include "passes/pattern_match.h"

namespace onnx_light::runtime {

void FuseConvAdd(WorkingGraph& graph, const PassContext& context) {
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!IsFusableConv(graph, context, i)) continue;
    const std::optional<BinaryReader> add = SoleBinaryReader(graph, context, graph.node(i).outputs[0], i, "Add");
    if (!add) continue;
    Node fused = FusedConvNode(graph.node(i), graph.node(add->node).outputs[0], "+add");
    fused.inputs.resize(3);  // X, W, B (an empty name when the Conv has no bias)
    fused.inputs.push_back(add->other);
    const std::vector<size_t> covered = {i, add->node};
    graph.Replace(covered, std::move(fused));
  }
}

}  // namespace onnx_light::runtime

#include "passes/conv_add_fusion.h"

#include <vector>

#include "passes/conv_pattern.h"

namespace onnx_light::runtime {

void FuseConvAdd(WorkingGraph& graph, const PassContext& context) {
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!IsFusableConv(graph, context, i)) continue;
    const std::string& y = graph.node(i).outputs[0];
    if (graph.Pinned(y)) continue;
    const std::span<const WorkingGraph::Use> uses = graph.Uses(y);
    if (uses.size() != 1) continue;
    const size_t add = uses[0].node;
    const Node& node = graph.node(add);
    if (!context.IsBuiltin(node, "Add") || add < i || node.inputs.size() != 2 || node.outputs.size() != 1 ||
        node.outputs[0].empty() || !graph.OnlyFeeds(y, add, uses[0].input)) {
      continue;
    }
    const std::string& z = node.inputs[1 - uses[0].input];
    if (z.empty()) continue;
    Node fused = FusedConvNode(graph.node(i), node.outputs[0], "+add");
    fused.inputs.resize(3);  // X, W, B (an empty name when the Conv has no bias)
    fused.inputs.push_back(z);
    const std::vector<size_t> covered = {i, add};
    graph.Replace(covered, std::move(fused));
  }
}

}  // namespace onnx_light::runtime

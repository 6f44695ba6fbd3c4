#include "passes/conv_scale_fusion.h"

#include <vector>

#include "kernels/registry/fused_kernels.h"
#include "passes/conv_pattern.h"
#include "passes/pattern_match.h"

namespace onnx_light::runtime {

namespace {

bool GroupOne(const Node& node) {
  const Attribute* group = node.FindAttribute("group");
  return group == nullptr || group->i == 1;
}

}  // namespace

void FuseConvScale(WorkingGraph& graph, const PassContext& context) {
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!IsFusableConv(graph, context, i, /*with_residual=*/true, /*with_activation=*/true)) continue;
    const Node& conv = graph.node(i);
    if (!GroupOne(conv) || (conv.inputs.size() > 4 && !conv.inputs[4].empty())) continue;
    const int64_t mul = SoleProducer(graph, context, conv.inputs[0], "Mul", i, 0);
    if (mul < 0) continue;
    const Node& product = graph.node(static_cast<size_t>(mul));
    Node fused = FusedConvNode(conv, conv.outputs[0], "");
    if (conv.domain == kFusedDomain) fused.attributes = conv.attributes;  // keeps activation and suffix
    fused.inputs.resize(5);  // X, W, B, Z (empty names for the absent ones), S
    fused.inputs[0] = product.inputs[0];
    fused.inputs[4] = product.inputs[1];
    const std::vector<size_t> covered = {static_cast<size_t>(mul), i};
    graph.Replace(covered, std::move(fused));
  }
}

}  // namespace onnx_light::runtime

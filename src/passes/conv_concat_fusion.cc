#include "passes/conv_concat_fusion.h"

#include <algorithm>
#include <vector>

#include "kernels/registry/fused_kernels.h"
#include "passes/conv_pattern.h"
#include "passes/pattern_match.h"

namespace onnx_light::runtime {

namespace {

Attribute IntAttribute(const char* name, int64_t value) {
  return {.name = name, .type = AttributeType::kInt, .i = value};
}

struct ChainLink {
  size_t node;     // the convolution
  int64_t offset;  // its first channel in the Concat's output
};

}  // namespace

void FuseConvConcat(WorkingGraph& graph, const PassContext& context) {
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!graph.live(i) || !context.IsBuiltin(graph.node(i), "Concat")) continue;
    const Node& concat = graph.node(i);
    if (concat.inputs.size() < 2 || concat.outputs.size() != 1 || concat.outputs[0].empty()) continue;
    std::vector<ChainLink> chain;
    int64_t channels = 0;
    int64_t rank = -1;
    for (size_t k = 0; k < concat.inputs.size(); ++k) {
      const std::string& name = concat.inputs[k];
      const int64_t producer = name.empty() ? -1 : graph.Producer(name);
      if (producer < 0 || !graph.OnlyFeeds(name, i, k) ||
          !IsFusableConv(graph, context, static_cast<size_t>(producer), /*with_residual=*/false,
                         /*with_activation=*/true)) {
        break;
      }
      const Tensor* w = graph.Constant(graph.node(static_cast<size_t>(producer)).inputs[1]);
      if (rank >= 0 && w->rank() != rank) break;
      rank = w->rank();
      chain.push_back({static_cast<size_t>(producer), channels});
      channels += w->dim(0);
    }
    if (chain.size() != concat.inputs.size()) continue;
    const int64_t axis = IntAttributeOf(concat, "axis", 1);
    if ((axis < 0 ? axis + rank : axis) != 1) continue;
    // Graph order, so that each link's earlier channels exist when it runs.
    std::sort(chain.begin(), chain.end(), [](const ChainLink& a, const ChainLink& b) { return a.node < b.node; });
    // The last link first: it stands for the Concat, which then no longer reads the others'
    // outputs, so each of them may take its new meaning (the Concat's output so far).
    const std::string concat_output = concat.outputs[0];
    for (size_t k = chain.size(); k-- > 0;) {
      const Node& conv = graph.node(chain[k].node);
      const std::string output = k + 1 == chain.size() ? concat_output : conv.outputs[0];
      Node fused = FusedConvNode(conv, output, "+concat");
      if (conv.domain == kFusedDomain) {  // keep its activation: FusedConvNode drops it
        for (const Attribute& attr : conv.attributes) {
          if (attr.name == "activation" || attr.name == "activation_params") fused.attributes.push_back(attr);
        }
      }
      fused.attributes.push_back(IntAttribute("concat_channels", channels));
      fused.attributes.push_back(IntAttribute("concat_offset", chain[k].offset));
      fused.inputs.resize(3);  // X, W, B (an empty name when the Conv has no bias)
      if (k > 0) {
        fused.inputs.resize(6);  // Z and S absent, then the Concat's output so far
        fused.inputs[5] = graph.node(chain[k - 1].node).outputs[0];
      }
      std::vector<size_t> covered = {chain[k].node};
      if (k + 1 == chain.size()) covered.push_back(i);
      graph.Replace(covered, std::move(fused));
    }
  }
}

}  // namespace onnx_light::runtime

#include "passes/conv_activation_fusion.h"

#include <limits>
#include <optional>
#include <vector>

#include "passes/conv_pattern.h"
#include "passes/pattern_match.h"

namespace onnx_light::runtime {

namespace {

struct Activation {
  std::string name;          // FusedConv's `activation`
  std::string suffix;        // appended to the kernel-usage name
  std::vector<float> params;
  std::vector<size_t> nodes;  // the activation's nodes, in graph order
  std::string output;
};

float FloatAttr(const Node& node, const char* name, float default_value) {
  const Attribute* attr = node.FindAttribute(name);
  return attr != nullptr ? attr->f : default_value;
}

// Clip's bounds: inputs 1 and 2 from opset 11 (absent: unbounded), attributes before.
std::optional<std::vector<float>> ClipBounds(const WorkingGraph& graph, const PassContext& context,
                                             const Node& clip) {
  if (context.DefaultOpsetVersion() < 11) {
    return std::vector<float>{FloatAttr(clip, "min", std::numeric_limits<float>::lowest()),
                              FloatAttr(clip, "max", std::numeric_limits<float>::max())};
  }
  std::vector<float> bounds = {-std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::infinity()};
  for (size_t k = 1; k < clip.inputs.size() && k < 3; ++k) {
    if (clip.inputs[k].empty()) continue;
    const Tensor* t = graph.Constant(clip.inputs[k]);
    if (t == nullptr || t->dtype() != DataType::kFloat || t->size() != 1) return std::nullopt;
    bounds[k - 1] = t->data<float>()[0];
  }
  return bounds;
}

// The activation that alone reads `conv`'s output.
std::optional<Activation> ReadingActivation(const WorkingGraph& graph, const PassContext& context,
                                            size_t conv) {
  const std::string& y = graph.node(conv).outputs[0];
  if (graph.Pinned(y)) return std::nullopt;
  const std::span<const WorkingGraph::Use> uses = graph.Uses(y);
  if (uses.size() == 2) {
    // SiLU: Mul(y, Sigmoid(y)), the Sigmoid read by that Mul alone.
    for (size_t s = 0; s < 2; ++s) {
      const WorkingGraph::Use sigmoid_use = uses[s];
      const WorkingGraph::Use mul_use = uses[1 - s];
      const Node& sigmoid = graph.node(sigmoid_use.node);
      const Node& mul = graph.node(mul_use.node);
      if (!context.IsBuiltin(sigmoid, "Sigmoid") || !context.IsBuiltin(mul, "Mul") ||
          sigmoid.outputs.size() != 1 || mul.inputs.size() != 2 || mul.outputs.size() != 1 ||
          mul.outputs[0].empty() || sigmoid_use.node >= mul_use.node ||
          !graph.OnlyFeeds(sigmoid.outputs[0], mul_use.node, 1 - mul_use.input)) {
        continue;
      }
      return Activation{.name = "SiLU", .suffix = "+silu", .nodes = {sigmoid_use.node, mul_use.node},
                        .output = mul.outputs[0]};
    }
    return std::nullopt;
  }
  if (uses.size() != 1 || uses[0].input != 0) return std::nullopt;
  const size_t reader = uses[0].node;
  const Node& node = graph.node(reader);
  if (node.outputs.size() != 1 || node.outputs[0].empty() || reader < conv) return std::nullopt;
  Activation activation{.nodes = {reader}, .output = node.outputs[0]};
  if (context.IsBuiltin(node, "Relu")) {
    activation.name = "Relu";
  } else if (context.IsBuiltin(node, "LeakyRelu")) {
    activation.name = "LeakyRelu";
    activation.params = {FloatAttr(node, "alpha", 0.01f)};
  } else if (context.IsBuiltin(node, "HardSigmoid")) {
    activation.name = "HardSigmoid";
    activation.params = {FloatAttr(node, "alpha", 0.2f), FloatAttr(node, "beta", 0.5f)};
  } else if (context.IsBuiltin(node, "HardSwish")) {
    activation.name = "HardSwish";
  } else if (context.IsBuiltin(node, "Sigmoid")) {
    activation.name = "Sigmoid";
  } else if (context.IsBuiltin(node, "Tanh")) {
    activation.name = "Tanh";
  } else if (context.IsBuiltin(node, "Clip")) {
    std::optional<std::vector<float>> bounds = ClipBounds(graph, context, node);
    if (!bounds) return std::nullopt;
    activation.name = "Clip";
    activation.params = std::move(*bounds);
  } else {
    return std::nullopt;
  }
  activation.suffix = "+" + activation.name;
  for (char& c : activation.suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return activation;
}

}  // namespace

void FuseConvActivation(WorkingGraph& graph, const PassContext& context) {
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!IsFusableConv(graph, context, i, /*with_residual=*/true)) continue;
    std::optional<Activation> activation = ReadingActivation(graph, context, i);
    if (!activation) continue;
    std::vector<size_t> covered = {i};
    covered.insert(covered.end(), activation->nodes.begin(), activation->nodes.end());
    Node fused = FusedConvNode(graph.node(i), activation->output, activation->suffix, activation->name,
                               std::move(activation->params));
    graph.Replace(covered, std::move(fused));
  }
}

}  // namespace onnx_light::runtime

#include "passes/conv_pattern.h"

#include "kernels/registry/fused_kernels.h"

namespace onnx_light::runtime {

namespace {

bool IsFloatConstant(const WorkingGraph& graph, const std::string& name) {
  const Tensor* t = graph.Constant(name);
  return t != nullptr && t->dtype() == DataType::kFloat;
}

std::string StringAttr(const Node& node, const char* name) {
  const Attribute* attr = node.FindAttribute(name);
  return attr != nullptr ? attr->s : std::string();
}

}  // namespace

bool IsFusableConv(const WorkingGraph& graph, const PassContext& context, size_t i, bool with_residual,
                   bool with_activation) {
  if (!graph.live(i)) return false;
  const Node& node = graph.node(i);
  const bool fused = node.domain == kFusedDomain && node.op_type == "FusedConv";
  if (!fused && !context.IsBuiltin(node, "Conv")) return false;
  if (fused && ((!with_activation && !StringAttr(node, "activation").empty()) ||
                (!with_residual && node.inputs.size() > 3 && !node.inputs[3].empty()))) {
    return false;
  }
  if (node.outputs.size() != 1 || node.outputs[0].empty() || node.inputs.size() < 2 ||
      node.inputs.size() > (fused ? 4u : 3u) || !IsFloatConstant(graph, node.inputs[1]) ||
      graph.Constant(node.inputs[1])->rank() < 3) {
    return false;
  }
  return node.inputs.size() < 3 || node.inputs[2].empty() || IsFloatConstant(graph, node.inputs[2]);
}

Node FusedConvNode(const Node& conv, const std::string& output, const std::string& suffix,
                   const std::string& activation, std::vector<float> activation_params) {
  Node fused;
  fused.name = conv.name;
  fused.op_type = "FusedConv";
  fused.domain = std::string(kFusedDomain);
  fused.inputs = conv.inputs;
  fused.outputs = {output};
  std::string usage_suffix;
  for (const Attribute& attr : conv.attributes) {
    if (attr.name == "usage_suffix") {
      usage_suffix = attr.s;
    } else if (attr.name != "activation" && attr.name != "activation_params") {
      fused.attributes.push_back(attr);
    }
  }
  fused.attributes.push_back({.name = "usage_suffix", .type = AttributeType::kString, .s = usage_suffix + suffix});
  if (!activation.empty()) {
    fused.attributes.push_back({.name = "activation", .type = AttributeType::kString, .s = activation});
    Attribute params{.name = "activation_params", .type = AttributeType::kFloats};
    params.floats = std::move(activation_params);
    fused.attributes.push_back(std::move(params));
  }
  return fused;
}

}  // namespace onnx_light::runtime

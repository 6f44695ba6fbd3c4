#include "passes/conv_batchnorm_fusion.h"

#include <cmath>
#include <memory>

#include "passes/conv_pattern.h"

namespace onnx_light::runtime {

namespace {

// A constant float32 vector of `count` values.
const Tensor* ChannelConstant(const WorkingGraph& graph, const std::string& name, int64_t count) {
  const Tensor* t = graph.Constant(name);
  if (t == nullptr || t->dtype() != DataType::kFloat || t->rank() != 1 || t->dim(0) != count ||
      !t->is_contiguous()) {
    return nullptr;
  }
  return t;
}

// The BatchNormalization reading node `conv`'s output alone, in inference mode with constant
// parameters for `channels` channels; -1 otherwise.
int64_t FoldableBatchNorm(const WorkingGraph& graph, const PassContext& context, size_t conv,
                          int64_t channels) {
  const std::string& y = graph.node(conv).outputs[0];
  const std::span<const WorkingGraph::Use> uses = graph.Uses(y);
  if (graph.Pinned(y) || uses.size() != 1 || uses[0].input != 0) return -1;
  const Node& bn = graph.node(uses[0].node);
  if (!context.IsBuiltin(bn, "BatchNormalization") || bn.inputs.size() != 5 || bn.outputs.empty() ||
      bn.outputs[0].empty()) {
    return -1;
  }
  for (size_t k = 1; k < bn.outputs.size(); ++k) {
    if (!bn.outputs[k].empty() && (graph.Pinned(bn.outputs[k]) || !graph.Uses(bn.outputs[k]).empty())) {
      return -1;
    }
  }
  const Attribute* training = bn.FindAttribute("training_mode");
  if (training != nullptr && training->i != 0) return -1;
  for (size_t k = 1; k < 5; ++k) {
    if (ChannelConstant(graph, bn.inputs[k], channels) == nullptr) return -1;
  }
  return static_cast<int64_t>(uses[0].node);
}

}  // namespace

void FuseConvBatchNorm(WorkingGraph& graph, const PassContext& context) {
  // BatchNormalization before opset 9 has spatial / is_test variants; those stay unfused.
  if (context.DefaultOpsetVersion() < 9 || !context.allocator) return;
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!IsFusableConv(graph, context, i)) continue;
    const Node& conv = graph.node(i);
    const Tensor& weight = *graph.Constant(conv.inputs[1]);
    const int64_t m = weight.dim(0);
    const int64_t bn_index = FoldableBatchNorm(graph, context, i, m);
    // A reader listed before its producer is a malformed graph: left for the plan to report.
    if (bn_index <= static_cast<int64_t>(i)) continue;
    const Node& bn = graph.node(static_cast<size_t>(bn_index));
    const Tensor* bias = conv.inputs.size() > 2 && !conv.inputs[2].empty() ? graph.Constant(conv.inputs[2]) : nullptr;
    if (bias != nullptr && (bias->rank() != 1 || bias->dim(0) != m)) continue;
    const float* scale = graph.Constant(bn.inputs[1])->data<float>();
    const float* beta = graph.Constant(bn.inputs[2])->data<float>();
    const float* mean = graph.Constant(bn.inputs[3])->data<float>();
    const float* var = graph.Constant(bn.inputs[4])->data<float>();
    const Attribute* epsilon_attr = bn.FindAttribute("epsilon");
    const double epsilon = epsilon_attr != nullptr ? epsilon_attr->f : 1e-5;

    const Tensor w = weight.Contiguous(context.allocator);
    const Tensor b = bias != nullptr ? bias->Contiguous(context.allocator) : Tensor();
    Tensor folded_w = Tensor::Allocate(DataType::kFloat, weight.shape(), context.allocator);
    Tensor folded_b = Tensor::Allocate(DataType::kFloat, {m}, context.allocator);
    const int64_t per_channel = m > 0 ? weight.size() / m : 0;
    for (int64_t oc = 0; oc < m; ++oc) {
      // y = (conv + b - mean) * a + beta with a = scale / sqrt(var + epsilon), folded in double.
      const double a = static_cast<double>(scale[oc]) / std::sqrt(static_cast<double>(var[oc]) + epsilon);
      for (int64_t k = 0; k < per_channel; ++k) {
        const int64_t at = oc * per_channel + k;
        folded_w.data<float>()[at] = static_cast<float>(static_cast<double>(w.data<float>()[at]) * a);
      }
      const double b0 = bias != nullptr ? static_cast<double>(b.data<float>()[oc]) : 0.0;
      folded_b.data<float>()[oc] =
          static_cast<float>((b0 - static_cast<double>(mean[oc])) * a + static_cast<double>(beta[oc]));
    }
    const size_t covered[] = {i, static_cast<size_t>(bn_index)};
    const std::string w_name = graph.AddConstant(conv.name + "_bn_weight", folded_w.AsReadOnly(), covered);
    const std::string b_name = graph.AddConstant(conv.name + "_bn_bias", folded_b.AsReadOnly(), covered);
    Node fused = FusedConvNode(conv, bn.outputs[0], "+bn");
    fused.inputs.resize(3);
    fused.inputs[1] = w_name;
    fused.inputs[2] = b_name;
    graph.Replace(covered, std::move(fused));
  }
}

}  // namespace onnx_light::runtime

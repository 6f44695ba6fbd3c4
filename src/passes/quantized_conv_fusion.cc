#include "passes/quantized_conv_fusion.h"

#include "kernels/registry/fused_kernels.h"
#include "passes/pattern_match.h"

namespace onnx_light::runtime {

namespace {

// Whether DequantizeLinear node `dq` gives a Conv weight the fused kernel packs.
bool WeightQualifies(const WorkingGraph& graph, const PassContext& context, const Node& dq) {
  const int opset = context.DefaultOpsetVersion();
  if (opset < 10 || dq.inputs.size() < 2 || dq.outputs.size() != 1) return false;
  const Tensor* w = graph.Constant(dq.inputs[0]);
  const Tensor* scale = graph.Constant(dq.inputs[1]);
  const bool has_zp = dq.inputs.size() > 2 && !dq.inputs[2].empty();
  const Tensor* zp = has_zp ? graph.Constant(dq.inputs[2]) : nullptr;
  if (w == nullptr || scale == nullptr || (has_zp && zp == nullptr)) return false;
  const DataType t = w->dtype();
  if ((t != DataType::kInt4 && t != DataType::kUInt4 && t != DataType::kInt8 && t != DataType::kUInt8) ||
      w->rank() < 3 || !w->is_contiguous() || scale->dtype() != DataType::kFloat || !scale->is_contiguous()) {
    return false;
  }
  if (zp != nullptr && (zp->dtype() != t || zp->shape() != scale->shape() || !zp->is_contiguous())) return false;
  const int64_t output_dtype = IntAttributeOf(dq, "output_dtype", 0);
  if (output_dtype != 0 && output_dtype != static_cast<int64_t>(DataType::kFloat)) return false;
  if (IntAttributeOf(dq, "block_size", 0) != 0) return false;
  if (scale->size() == 1 && scale->rank() <= 1) return true;  // per tensor
  int64_t axis = IntAttributeOf(dq, "axis", 1);
  if (axis < 0) axis += w->rank();
  // Per output channel; DequantizeLinear takes a scale per axis from version 13.
  return opset >= 13 && axis == 0 && scale->rank() == 1 && scale->dim(0) == w->dim(0);
}

}  // namespace

void FuseQuantizedConv(WorkingGraph& graph, const PassContext& context) {
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!graph.live(i)) continue;
    const Node& conv = graph.node(i);
    if (!context.IsBuiltin(conv, "Conv") || conv.inputs.size() < 2 || conv.inputs.size() > 3 ||
        conv.outputs.size() != 1 || IntAttributeOf(conv, "group", 1) != 1) {
      continue;
    }
    const int64_t x_producer = graph.Producer(conv.inputs[0]);
    if (x_producer >= 0 && context.IsBuiltin(graph.node(static_cast<size_t>(x_producer)), "DequantizeLinear")) continue;
    const int64_t producer = graph.Producer(conv.inputs[1]);
    if (producer < 0 || !graph.OnlyFeeds(conv.inputs[1], i, 1)) continue;
    const Node& dq = graph.node(static_cast<size_t>(producer));
    if (!context.IsBuiltin(dq, "DequantizeLinear") || !WeightQualifies(graph, context, dq)) continue;
    Node fused;
    fused.name = conv.name;
    fused.op_type = "QuantizedConv";
    fused.domain = std::string(kFusedDomain);
    const bool has_zp = dq.inputs.size() > 2 && !dq.inputs[2].empty();
    const bool has_bias = conv.inputs.size() > 2 && !conv.inputs[2].empty();
    fused.inputs = {conv.inputs[0], dq.inputs[0], dq.inputs[1], has_zp ? dq.inputs[2] : std::string(),
                    has_bias ? conv.inputs[2] : std::string()};
    while (fused.inputs.back().empty()) fused.inputs.pop_back();
    fused.outputs = conv.outputs;
    fused.attributes = conv.attributes;
    const size_t covered[] = {static_cast<size_t>(producer), i};
    graph.Replace(covered, std::move(fused));
  }
}

}  // namespace onnx_light::runtime

#include "passes/dequantize_gather_fusion.h"

#include "kernels/registry/fused_kernels.h"
#include "passes/pattern_match.h"

namespace onnx_light::runtime {

namespace {

bool IsOneValueOf(const Tensor* t, DataType type) { return t != nullptr && t->dtype() == type && t->size() == 1; }

// A per-tensor DequantizeLinear of a constant 8-bit tensor to float32.
bool DequantizesConstantBytes(const WorkingGraph& graph, const Node& dq) {
  if (dq.inputs.size() < 2 || dq.outputs.size() != 1) return false;
  const Tensor* x = graph.Constant(dq.inputs[0]);
  if (x == nullptr || x->rank() == 0 || (x->dtype() != DataType::kInt8 && x->dtype() != DataType::kUInt8)) return false;
  if (!IsOneValueOf(graph.Constant(dq.inputs[1]), DataType::kFloat)) return false;
  if (dq.inputs.size() > 2 && !dq.inputs[2].empty() && !IsOneValueOf(graph.Constant(dq.inputs[2]), x->dtype())) {
    return false;
  }
  // block_size 0 and output_dtype 0 (the scale's type) or float32: plain per-tensor float32.
  const int64_t output_dtype = IntAttributeOf(dq, "output_dtype", 0);
  return IntAttributeOf(dq, "block_size", 0) == 0 &&
         (output_dtype == 0 || output_dtype == static_cast<int64_t>(DataType::kFloat));
}

}  // namespace

void FuseDequantizeGather(WorkingGraph& graph, const PassContext& context) {
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!graph.live(i)) continue;
    const Node& dq = graph.node(i);
    if (!context.IsBuiltin(dq, "DequantizeLinear") || !DequantizesConstantBytes(graph, dq)) continue;
    const std::optional<SoleReader> gather = SoleReaderOf(graph, context, dq.outputs[0], i, "Gather");
    if (!gather || gather->input != 0) continue;
    const Node& g = graph.node(gather->node);
    if (g.inputs.size() != 2) continue;
    Node fused;
    fused.name = g.name;
    fused.op_type = "DequantizeGather";
    fused.domain = std::string(kFusedDomain);
    fused.inputs = {dq.inputs[0], dq.inputs[1], dq.inputs.size() > 2 ? dq.inputs[2] : std::string(), g.inputs[1]};
    fused.outputs = g.outputs;
    if (const Attribute* axis = g.FindAttribute("axis")) fused.attributes.push_back(*axis);
    const size_t covered[] = {i, gather->node};
    graph.Replace(covered, std::move(fused));
  }
}

}  // namespace onnx_light::runtime

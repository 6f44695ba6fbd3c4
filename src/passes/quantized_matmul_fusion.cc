#include "passes/quantized_matmul_fusion.h"

#include <optional>

#include "kernels/registry/fused_kernels.h"

namespace onnx_light::runtime {

namespace {

int64_t IntAttribute(const Node& node, const char* name, int64_t default_value) {
  const Attribute* attr = node.FindAttribute(name);
  return attr == nullptr ? default_value : attr->i;
}

// The fused node's block_size (0: one scale row over all of K) when DequantizeLinear node `dq`
// qualifies; nullopt otherwise.
std::optional<int64_t> MatchWeights(const WorkingGraph& graph, const PassContext& context, const Node& dq) {
  if (context.DefaultOpsetVersion() < 21 || dq.inputs.size() < 2 || dq.outputs.size() != 1) return std::nullopt;
  const Tensor* w = graph.Constant(dq.inputs[0]);
  const Tensor* scale = graph.Constant(dq.inputs[1]);
  const bool has_zp = dq.inputs.size() > 2 && !dq.inputs[2].empty();
  const Tensor* zp = has_zp ? graph.Constant(dq.inputs[2]) : nullptr;
  if (w == nullptr || scale == nullptr || (has_zp && zp == nullptr)) return std::nullopt;
  if ((w->dtype() != DataType::kInt4 && w->dtype() != DataType::kUInt4) || w->rank() != 2 || !w->is_contiguous()) {
    return std::nullopt;
  }
  if (scale->dtype() != DataType::kFloat || !scale->is_contiguous()) return std::nullopt;
  if (zp != nullptr && (zp->dtype() != w->dtype() || zp->shape() != scale->shape() || !zp->is_contiguous())) {
    return std::nullopt;
  }
  const int64_t output_dtype = IntAttribute(dq, "output_dtype", 0);
  if (output_dtype != 0 && output_dtype != static_cast<int64_t>(DataType::kFloat)) return std::nullopt;
  const int64_t k = w->dim(0), n = w->dim(1);
  int64_t axis = IntAttribute(dq, "axis", 1);
  if (axis < 0) axis += 2;
  const int64_t block_size = IntAttribute(dq, "block_size", 0);
  if (block_size == 0) {
    if (scale->size() == 1 && scale->rank() <= 1) return 0;                             // per tensor
    if (axis == 1 && scale->rank() == 1 && scale->dim(0) == n) return 0;                // per column
    return std::nullopt;
  }
  if (block_size < 0 || axis != 0 || scale->rank() != 2) return std::nullopt;
  if (scale->dim(0) != (k + block_size - 1) / block_size || scale->dim(1) != n) return std::nullopt;
  return block_size;
}

}  // namespace

void FuseQuantizedMatMul(WorkingGraph& graph, const PassContext& context) {
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!graph.live(i)) continue;
    const Node& matmul = graph.node(i);
    if (!context.IsBuiltin(matmul, "MatMul") || matmul.inputs.size() != 2 || matmul.outputs.size() != 1) continue;
    const int64_t producer = graph.Producer(matmul.inputs[1]);
    if (producer < 0 || !graph.OnlyFeeds(matmul.inputs[1], i, 1)) continue;
    const Node& dq = graph.node(static_cast<size_t>(producer));
    if (!context.IsBuiltin(dq, "DequantizeLinear")) continue;
    const std::optional<int64_t> block_size = MatchWeights(graph, context, dq);
    if (!block_size) continue;
    Node fused;
    fused.name = matmul.name;
    fused.op_type = "QuantizedMatMul";
    fused.domain = std::string(kFusedDomain);
    fused.inputs = {matmul.inputs[0], dq.inputs[0], dq.inputs[1]};
    if (dq.inputs.size() > 2 && !dq.inputs[2].empty()) fused.inputs.push_back(dq.inputs[2]);
    fused.outputs = matmul.outputs;
    fused.attributes.push_back({.name = "block_size", .type = AttributeType::kInt, .i = *block_size});
    const size_t covered[] = {static_cast<size_t>(producer), i};
    graph.Replace(covered, std::move(fused));
  }
}

}  // namespace onnx_light::runtime

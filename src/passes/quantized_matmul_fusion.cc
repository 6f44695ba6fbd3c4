#include "passes/quantized_matmul_fusion.h"

#include <optional>

#include "kernels/registry/fused_kernels.h"
#include "passes/pattern_match.h"

namespace onnx_light::runtime {

namespace {

// The fused node's block_size (0: one scale row over all of K) when DequantizeLinear node `dq`
// qualifies as the weight of a MatMul, or of a Gemm with `trans_b`; nullopt otherwise.
std::optional<int64_t> MatchWeights(const WorkingGraph& graph, const PassContext& context, const Node& dq,
                                    bool trans_b) {
  const int opset = context.DefaultOpsetVersion();
  if (opset < 10 || dq.inputs.size() < 2 || dq.outputs.size() != 1) return std::nullopt;
  const Tensor* w = graph.Constant(dq.inputs[0]);
  const Tensor* scale = graph.Constant(dq.inputs[1]);
  const bool has_zp = dq.inputs.size() > 2 && !dq.inputs[2].empty();
  const Tensor* zp = has_zp ? graph.Constant(dq.inputs[2]) : nullptr;
  if (w == nullptr || scale == nullptr || (has_zp && zp == nullptr)) return std::nullopt;
  const DataType type = w->dtype();
  const bool nibbles = type == DataType::kInt4 || type == DataType::kUInt4;
  if ((!nibbles && type != DataType::kInt8 && type != DataType::kUInt8) || w->rank() != 2 || !w->is_contiguous()) {
    return std::nullopt;
  }
  if (scale->dtype() != DataType::kFloat || !scale->is_contiguous()) return std::nullopt;
  if (zp != nullptr && (zp->dtype() != w->dtype() || zp->shape() != scale->shape() || !zp->is_contiguous())) {
    return std::nullopt;
  }
  const int64_t output_dtype = IntAttributeOf(dq, "output_dtype", 0);
  if (output_dtype != 0 && output_dtype != static_cast<int64_t>(DataType::kFloat)) return std::nullopt;
  // W's axes: K and N, swapped by Gemm's transB.
  const int64_t k_axis = trans_b ? 1 : 0, n_axis = 1 - k_axis;
  const int64_t k = w->dim(k_axis), n = w->dim(n_axis);
  int64_t axis = IntAttributeOf(dq, "axis", 1);
  if (axis < 0) axis += 2;
  const int64_t block_size = IntAttributeOf(dq, "block_size", 0);
  if (block_size == 0) {
    if (scale->size() == 1 && scale->rank() <= 1) return 0;  // per tensor
    // Per column of the product; DequantizeLinear takes a scale per axis from version 13.
    if (opset >= 13 && axis == n_axis && scale->rank() == 1 && scale->dim(0) == n) return 0;
    return std::nullopt;
  }
  if (opset < 21 || block_size < 0 || axis != k_axis || scale->rank() != 2) return std::nullopt;
  if (scale->dim(k_axis) != (k + block_size - 1) / block_size || scale->dim(n_axis) != n) return std::nullopt;
  return block_size;
}

// Gemm's options the fused kernel computes: no transposed A, alpha 1, and beta 1 unless there is
// no C; C a constant float32 of one value or one per column ([N] or [1, N]).
bool GemmQualifies(const WorkingGraph& graph, const Node& gemm, int64_t n) {
  if (IntAttributeOf(gemm, "transA", 0) != 0) return false;
  const Attribute* alpha = gemm.FindAttribute("alpha");
  if (alpha != nullptr && alpha->f != 1.0f) return false;
  if (gemm.inputs.size() < 3 || gemm.inputs[2].empty()) return true;
  const Attribute* beta = gemm.FindAttribute("beta");
  if (beta != nullptr && beta->f != 1.0f) return false;
  const Tensor* c = graph.Constant(gemm.inputs[2]);
  if (c == nullptr || c->dtype() != DataType::kFloat || !c->is_contiguous() || c->rank() > 2) return false;
  return c->size() == 1 || (c->size() == n && c->shape().back() == n);
}

}  // namespace

void FuseQuantizedMatMul(WorkingGraph& graph, const PassContext& context, bool quantize_activations) {
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!graph.live(i)) continue;
    const Node& node = graph.node(i);
    const bool gemm = context.IsBuiltin(node, "Gemm");
    if (!gemm && !context.IsBuiltin(node, "MatMul")) continue;
    if (node.inputs.size() < 2 || node.inputs.size() > (gemm ? 3u : 2u) || node.outputs.size() != 1) continue;
    const int64_t producer = graph.Producer(node.inputs[1]);
    if (producer < 0 || !graph.OnlyFeeds(node.inputs[1], i, 1)) continue;
    const Node& dq = graph.node(static_cast<size_t>(producer));
    if (!context.IsBuiltin(dq, "DequantizeLinear")) continue;
    const bool trans_b = gemm && IntAttributeOf(node, "transB", 0) != 0;
    const std::optional<int64_t> block_size = MatchWeights(graph, context, dq, trans_b);
    if (!block_size) continue;
    if (gemm && !GemmQualifies(graph, node, graph.Constant(dq.inputs[0])->dim(trans_b ? 0 : 1))) continue;
    Node fused;
    fused.name = node.name;
    fused.op_type = gemm ? "QuantizedGemm" : "QuantizedMatMul";
    fused.domain = std::string(kFusedDomain);
    const bool has_zp = dq.inputs.size() > 2 && !dq.inputs[2].empty();
    fused.inputs = {node.inputs[0], dq.inputs[0], dq.inputs[1], has_zp ? dq.inputs[2] : std::string()};
    if (gemm && node.inputs.size() > 2 && !node.inputs[2].empty()) fused.inputs.push_back(node.inputs[2]);
    while (fused.inputs.back().empty()) fused.inputs.pop_back();
    fused.outputs = node.outputs;
    fused.attributes.push_back({.name = "block_size", .type = AttributeType::kInt, .i = *block_size});
    if (gemm) fused.attributes.push_back({.name = "trans_b", .type = AttributeType::kInt, .i = trans_b ? 1 : 0});
    if (quantize_activations) fused.attributes.push_back({.name = "activation_bits", .type = AttributeType::kInt, .i = 8});
    const size_t covered[] = {static_cast<size_t>(producer), i};
    graph.Replace(covered, std::move(fused));
  }
}

}  // namespace onnx_light::runtime

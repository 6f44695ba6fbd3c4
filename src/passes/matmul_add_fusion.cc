#include "passes/matmul_add_fusion.h"

#include "kernels/registry/fused_kernels.h"
#include "passes/pattern_match.h"

namespace onnx_light::runtime {

namespace {

bool IsFloatConstant(const Tensor* t, int64_t rank) {
  return t != nullptr && t->dtype() == DataType::kFloat && t->rank() == rank;
}

}  // namespace

void FuseMatMulAdd(WorkingGraph& graph, const PassContext& context) {
  for (size_t i = 0; i < graph.size(); ++i) {
    if (!graph.live(i)) continue;
    const Node& matmul = graph.node(i);
    if (!context.IsBuiltin(matmul, "MatMul") || matmul.inputs.size() != 2 || matmul.outputs.size() != 1) continue;
    const Tensor* b = graph.Constant(matmul.inputs[1]);
    if (!IsFloatConstant(b, 2)) continue;
    const std::optional<BinaryReader> add = SoleBinaryReader(graph, context, matmul.outputs[0], i, "Add");
    if (!add) continue;
    const Tensor* bias = graph.Constant(add->other);
    if (!IsFloatConstant(bias, 1) || bias->dim(0) != b->dim(1)) continue;
    Node fused;
    fused.name = matmul.name;
    fused.op_type = "MatMulAdd";
    fused.domain = std::string(kFusedDomain);
    fused.inputs = {matmul.inputs[0], matmul.inputs[1], add->other};
    fused.outputs = graph.node(add->node).outputs;
    const size_t covered[] = {i, add->node};
    graph.Replace(covered, std::move(fused));
  }
}

}  // namespace onnx_light::runtime

#include "passes/matmul_add_fusion.h"

#include "kernels/registry/fused_kernels.h"

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
    const std::string& product = matmul.outputs[0];
    if (product.empty() || graph.Pinned(product)) continue;
    const std::span<const WorkingGraph::Use> uses = graph.Uses(product);
    if (uses.size() != 1) continue;
    const size_t add = uses[0].node;
    const Node& node = graph.node(add);
    if (!context.IsBuiltin(node, "Add") || add < i || node.inputs.size() != 2 || node.outputs.size() != 1 ||
        node.outputs[0].empty() || !graph.OnlyFeeds(product, add, uses[0].input)) {
      continue;
    }
    const std::string& bias_name = node.inputs[1 - uses[0].input];
    const Tensor* bias = graph.Constant(bias_name);
    if (!IsFloatConstant(bias, 1) || bias->dim(0) != b->dim(1)) continue;
    Node fused;
    fused.name = matmul.name;
    fused.op_type = "MatMulAdd";
    fused.domain = std::string(kFusedDomain);
    fused.inputs = {matmul.inputs[0], matmul.inputs[1], bias_name};
    fused.outputs = node.outputs;
    const size_t covered[] = {i, add};
    graph.Replace(covered, std::move(fused));
  }
}

}  // namespace onnx_light::runtime

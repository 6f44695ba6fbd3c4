#include "session/graph_passes.h"

#include "kernels/registry/fused_kernels.h"
#include "onnx_light/runtime/error.h"
#include "passes/pass_manager.h"

namespace onnx_light::runtime {

namespace {

// Runs `node` alone in a one-node graph whose initializers are its constant inputs.
std::vector<RuntimeValue> EvaluateNode(const Node& node, std::span<const Tensor* const> inputs,
                                       const KernelSources& sources,
                                       const std::shared_ptr<Allocator>& allocator) {
  Graph graph;
  graph.name = "constant folding";
  graph.nodes.push_back(node);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const std::string& name = node.inputs[i];
    if (name.empty()) continue;
    if (inputs[i] == nullptr) {
      throw Error(ErrorCode::kInternal, "constant folding: an input is not constant");
    }
    bool seen = false;
    for (const Initializer& init : graph.initializers) seen |= init.name == name;
    if (!seen) graph.initializers.push_back({.name = name, .tensor = *inputs[i]});
  }
  for (const std::string& name : node.outputs) {
    if (!name.empty()) graph.outputs.push_back({.name = name});
  }
  const GraphPlan plan(graph, sources, nullptr);
  RuntimeContext rt(KernelContext(), {.allocator = allocator});
  const RuntimeContext::RunGuard guard(rt);
  std::vector<RuntimeValue> produced = plan.Execute(rt, {}, {});
  std::vector<RuntimeValue> outputs;
  size_t next = 0;
  for (const std::string& name : node.outputs) {
    outputs.push_back(name.empty() ? RuntimeValue() : std::move(produced[next++]));
  }
  return outputs;
}

}  // namespace

std::shared_ptr<const RewrittenGraph> RewriteMainGraph(const Model& model, const KernelSources& sources,
                                                       const RuntimeSessionOptions& options) {
  const std::shared_ptr<Allocator> allocator = MakeCpuAllocator();
  PassContext context{
      .opset_imports = &model.opset_imports,
      .served_by_host =
          [&sources](const Node& node) {
            const int64_t version = ImportedOpsetVersion(*sources.opset_imports, node.domain);
            return FindCustomKernel(node, sources, version) != nullptr ||
                   FindFunction(sources.functions, node) != nullptr;
          },
      .evaluate =
          [&sources, &allocator](const Node& node, std::span<const Tensor* const> inputs) {
            return EvaluateNode(node, inputs, sources, allocator);
          },
      .allocator = allocator};
  // A selective build may lack the kernel of a fused node: the pass making it does not run.
  const auto fused = [](std::string_view op_type) {
    return FusedKernels().Contains(kFusedDomain, op_type);
  };
  const bool qdq_kernels = fused("QLinearAdd") && fused("QGemm") &&
                           BuiltinKernels().Contains("", "QLinearConv") &&
                           BuiltinKernels().Contains("", "QLinearMatMul");
  const PassOptions passes{.fold_constants = options.fold_constants,
                           .eliminate_noop_nodes = options.eliminate_noop_nodes,
                           .fuse_conv_batchnorm = options.fuse_conv_batchnorm && fused("FusedConv"),
                           .fuse_conv_add = options.fuse_conv_add && fused("FusedConv"),
                           .fuse_conv_activation = options.fuse_conv_activation && fused("FusedConv"),
                           .fuse_conv_scale = options.fuse_conv_scale && fused("FusedConv"),
                           .fuse_conv_concat = options.fuse_conv_concat && fused("FusedConv"),
                           .fuse_gelu = options.fuse_gelu && fused("Gelu"),
                           .fuse_attention = options.fuse_attention && fused("Attention") &&
                                             fused("RepeatedHeadsShape"),
                           .fuse_quantized_matmul =
                               options.fuse_quantized_matmul && fused("QuantizedMatMul"),
                           .quantize_matmul_activations = options.quantize_matmul_activations,
                           .fuse_quantized_conv = options.fuse_quantized_matmul && fused("QuantizedConv"),
                           .fuse_qdq = options.fuse_qdq && qdq_kernels,
                           .fuse_dequantize_gather =
                               options.fuse_dequantize_gather && fused("DequantizeGather"),
                           .fuse_matmul_add = options.fuse_matmul_add && fused("MatMulAdd"),
                           .fuse_matmul_integer_scale =
                               options.fuse_matmul_integer_scale && fused("MatMulIntegerToFloat")};
  std::optional<RewrittenGraph> rewritten = RunGraphPasses(model.graph, passes, context);
  if (!rewritten) return nullptr;
  return std::make_shared<const RewrittenGraph>(std::move(*rewritten));
}

}  // namespace onnx_light::runtime
